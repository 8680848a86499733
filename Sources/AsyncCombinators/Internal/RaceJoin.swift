import Synchronization

/// Joins the runs of one `race`: the first success completes it and cancels the others;
/// when every run has failed, the last failure completes it.
final class RaceJoin<Output: Sendable>: Sendable {
  private struct State {
    var remaining: Int
    var isDone = false
  }

  private let state: Locked<State>
  private let runners: CancellationToken
  private let link: CancellationToken.Registration
  private let complete: @Sendable (Result<Output, any Error>) -> Void

  init(
    count: Int, token: CancellationToken,
    complete: @escaping @Sendable (Result<Output, any Error>) -> Void
  ) {
    state = Locked(State(remaining: count))
    (runners, link) = token.makeChild()
    self.complete = complete
  }

  /// The token the runs share; cancelled once the race is decided.
  var token: CancellationToken { runners }

  /// One contender's result: a success or a cancellation decides the race, a failure only
  /// when it is the last contender standing.
  func deliver(_ result: Result<Output, any Error>) {
    let decides = state.withLock { state -> Bool in
      guard !state.isDone else { return false }
      if case .failure(let error) = result, !(error is CancellationError) {
        state.remaining -= 1
        guard state.remaining == 0 else { return false }
      }
      state.isDone = true
      return true
    }
    guard decides else { return }
    link.remove()
    runners.cancel()  // The losers stop; their late results find the race done.
    complete(result)
  }

  /// Ends a race that stopped starting its contenders because its token was cancelled: a race
  /// not decided by then is cancelled, since the contenders it never started cannot decide it.
  func withdraw() {
    let undecided = state.withLock { state -> Bool in
      guard !state.isDone else { return false }
      state.isDone = true
      return true
    }
    guard undecided else { return }
    link.remove()
    complete(.failure(CancellationError()))
  }
}
