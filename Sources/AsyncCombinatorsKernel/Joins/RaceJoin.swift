import Synchronization

/// Joins the contenders of one `race`: the first success (or a contender's own cancellation)
/// completes it and cancels the others; when every contender has failed, the last failure
/// completes it. Contenders report to it directly, as the branches of a fork-join do.
package final class RaceJoin: StageSink {
  private struct State {
    var remaining: Int
    var isDone = false
  }

  private let state: Locked<State>
  private let runners: CancellationToken
  private let link: CancellationToken.Registration
  private let report: StageReport

  package init(count: Int, token: CancellationToken, report: StageReport) {
    state = Locked(State(remaining: count))
    (runners, link) = token.makeChild()
    self.report = report
  }

  /// The token the contenders share; cancelled once the race is decided.
  package var token: CancellationToken { runners }

  package func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    guard decide(counting: false) else { return }
    finish()
    report.succeed(value)
  }

  package func stageFailed(_ error: any Error, branch _: Int) {
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
    state.withLock { state in
      guard !state.isDone else { return false }
      if counting {
        state.remaining -= 1
        guard state.remaining == 0 else { return false }
      }
      state.isDone = true
      return true
    }
  }

  private func finish() {
    // The losers stop; their late results find the race done.
    runners.cancel(cause: LostRaceError())
    link.remove()  // After: the run's `cancel()` meanwhile waits for the losers' handlers.
  }
}
