import Synchronization

/// Joins the contenders of one `race`: the first success (or a contender's own cancellation)
/// completes it and cancels the others; when every contender has failed, the last failure
/// completes it. Contenders report to it directly, as the branches of a fork-join do.
package final class RaceJoin: StageParent {
  /// Contenders whose failure has not been counted yet: the last counted failure decides.
  private let remaining: Atomic<Int>
  /// Won once, by whichever result decides the race.
  private let isDone = Claim()
  private let runners: CancellationToken
  private let link: CancellationToken.Registration
  private let report: ModifierReport

  package init(count: Int, token: CancellationToken, report: ModifierReport) {
    remaining = Atomic(count)
    (runners, link) = token.makeChild()
    self.report = report
  }

  /// The token the contenders share; cancelled once the race is decided.
  package var token: CancellationToken { runners }

  package func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    guard decide(counting: false) else { return }
    finish()
    report.succeed(value)
  }

  package func childFailed(_ error: any Error, tag _: Int) {
    guard decide(counting: !(error is CancellationError)) else { return }
    finish()
    report.fail(error)
  }

  /// Ends a race that stopped starting its contenders because its token was cancelled: a race
  /// not decided by then is cancelled, since the contenders it never started cannot decide it.
  package func withdraw() {
    guard decide(counting: false) else { return }
    link.remove()
    report.fail(CancellationError())
  }

  /// Whether this result decides the race; a counted failure decides only when it is the last.
  private func decide(counting: Bool) -> Bool {
    if counting {
      guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else {
        return false
      }
    }
    return isDone.claim()
  }

  private func finish() {
    // The losers stop; their late results find the race done.
    runners.cancel(cause: LostRaceError())
    link.remove()  // After: the run's `cancel()` meanwhile waits for the losers' handlers.
  }
}
