import Dispatch
import Synchronization

@testable import AsyncCombinators

/// A function whose runs park their completions until the test releases them, so a test
/// decides exactly when each run ends (and can await "n runs have started").
final class Parking<Input: Sendable, Output: Sendable>: Sendable {
  struct Parked: Sendable {
    let input: Input
    let token: CancellationToken
    let complete: @Sendable (Result<Output, any Error>) -> Void
  }

  private struct State {
    var parked: [Parked] = []
    var started = 0
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state = Locked(State())

  init() {}

  var function: AsyncFunc<Input, Output> {
    AsyncFunc(name: "parked") { input, token, complete in
      let ready = self.state.withLock { state in
        state.parked.append(Parked(input: input, token: token, complete: complete))
        state.started += 1
        let started = state.started
        let (ready, waiting) = state.waiters.partitioned { $0.count <= started }
        state.waiters = waiting
        return ready
      }
      for waiter in ready { waiter.continuation.resume() }
    }
  }

  /// How many runs have started so far.
  var started: Int { state.withLock { $0.started } }

  /// Suspends until at least `count` runs have started.
  func waitForStarts(_ count: Int) async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state in
        if state.started >= count { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Takes the parked runs out, oldest first, for the test to complete.
  func takeAll() -> [Parked] {
    state.withLock { state in
      defer { state.parked = [] }
      return state.parked
    }
  }
}

extension Array {
  fileprivate func partitioned(_ belongs: (Element) -> Bool) -> ([Element], [Element]) {
    (filter(belongs), filter { !belongs($0) })
  }
}

/// Counts runs in flight and remembers the most at once.
final class InFlight: Sendable {
  private let state = Locked((now: 0, peak: 0))

  init() {}

  func enter() {
    state.withLock {
      $0.now += 1
      $0.peak = Swift.max($0.peak, $0.now)
    }
  }

  func leave() { state.withLock { $0.now -= 1 } }

  var peak: Int { state.withLock { $0.peak } }
  var now: Int { state.withLock { $0.now } }
}

/// An error that names where it came from.
struct TestError: Error, Equatable {
  let id: Int
  init(_ id: Int = 0) { self.id = id }
}

extension Result {
  /// The error of a failure, for `#expect`.
  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
