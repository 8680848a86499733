import Synchronization

/// Forwards a run's cancellation to a request or task until that work has finished, then
/// takes its handler off the token, so a long run does not keep handlers of finished stages.
///
/// The work's completion should be what holds the link: then a completion released uncalled
/// releases the link too, and its `deinit` takes the handler off.
///
/// `@unchecked Sendable`: `onFire` is a `let`; the rest is the ``Keeper``'s, whose handle is the
/// registration on the token, kept until the work finishes.
@usableFromInline
package final class CancellationLink: Keeper<CancellationToken.Registration>, @unchecked Sendable {
  /// What ``fire()`` runs: a timer's work, held here so that the closure the timer keeps can
  /// capture the link alone, which needs no allocation of its own.
  private let onFire: (@Sendable () -> Void)?

  @usableFromInline
  package init(onFire: (@Sendable () -> Void)? = nil) {
    self.onFire = onFire
  }

  /// Forwards `token`'s cancellation to `target` until the work finishes. Call it once.
  @usableFromInline
  package func connect(_ token: CancellationToken, to target: some Cancellable) {
    keep(token.onCancel { target.cancel() })
  }

  /// A link released unfinished belongs to work that will never call back (a legacy callback
  /// dropped uncalled): its handler, and the request it holds, come off the token with it.
  deinit { finish() }

  /// The timer went off: the handler comes off the token, then the timer's work runs.
  package func fire() {
    finish()
    onFire?()
  }

  /// The work finished (possibly before `connect`): its handler comes off the token.
  @usableFromInline
  package func finish() {
    endAndRevoke()
  }
}

/// A `Task` is a request handle like any other: cancelling it cancels the task.
extension Task: Cancellable {}
