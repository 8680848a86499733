import Synchronization

/// Forwards a run's cancellation to a request or task until that work has finished, then
/// takes its handler off the token, so a long run does not keep handlers of finished stages.
///
/// The work's completion should be what holds the link: then a completion released uncalled
/// releases the link too, and its `deinit` takes the handler off.
@usableFromInline
package final class CancellationLink: Sendable {
  private enum State {
    /// Neither connected nor finished yet.
    case idle
    /// The token's handler is registered and must be removed on finish.
    case connected(CancellationToken.Registration)
    /// The work finished (possibly before `connect`): nothing to forward any more.
    case finished
  }

  private let state = Locked(State.idle)
  /// What ``fire()`` runs: a timer's work, held here so that the closure the timer keeps can
  /// capture the link alone, which needs no allocation of its own.
  private let onFire: (@Sendable () -> Void)?

  @usableFromInline
  package init(onFire: (@Sendable () -> Void)? = nil) {
    self.onFire = onFire
  }

  @usableFromInline
  package func connect(_ token: CancellationToken, to target: some Cancellable) {
    let registration = token.onCancel { target.cancel() }
    let stillRunning = state.withLock { state in
      guard case .idle = state else { return false }
      state = .connected(registration)
      return true
    }
    if !stillRunning { registration.remove() }
  }

  /// A link released unfinished belongs to work that will never call back (a legacy callback
  /// dropped uncalled): its handler, and the request it holds, come off the token with it.
  deinit { finish() }

  /// The timer went off: the handler comes off the token, then the timer's work runs.
  package func fire() {
    finish()
    onFire?()
  }

  @usableFromInline
  package func finish() {
    let registration = state.withLock { state -> CancellationToken.Registration? in
      defer { state = .finished }
      guard case .connected(let registration) = state else { return nil }
      return registration
    }
    registration?.remove()
  }
}

/// A `Task` is a request handle like any other: cancelling it cancels the task.
extension Task: Cancellable {}
