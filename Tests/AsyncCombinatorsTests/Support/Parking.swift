import Dispatch
import Synchronization

@testable import AsyncCombinators

// Three ways for a test to decide when work finishes, from the smallest up:
// `ParkedCompletion` holds one stage's completion; `ParkedCompletions` collects many, in
// arrival order; `Parking` is a whole function whose runs park with their inputs and tokens.

/// Holds a stage's completion so a test decides when, and whether, the stage finishes.
///
/// Holding it also keeps it from being released uncalled, which the library would report.
final class ParkedCompletion<Output: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Output, any Error>) -> Void

  private let slot = Locked<Completion?>(nil)
  /// Opens when a completion has been parked: the stage has started.
  let arrived = Gate()

  init() {}

  func park(_ completion: @escaping Completion) {
    slot.withLock { $0 = completion }
    arrived.open()
  }

  /// Calls the parked completion (again, if called before).
  func complete(_ result: Result<Output, any Error>) {
    let completion = slot.withLock { $0 }
    completion?(result)
  }
}

/// Whether a result is the cancellation failure, unwrapped.
func isCancellation<Output>(_ result: Result<Output, any Error>) -> Bool {
  guard case .failure(let error) = result else { return false }
  return error is CancellationError
}

/// A lock-free tally, for counting completions that race on many threads.
///
/// Prefer it to a `Mutex`-guarded array under heavy contention: on Linux a contended `Mutex`
/// hands over through the kernel, which Thread Sanitizer does not see as synchronization.
final class Tally: Sendable {
  private let count = Atomic<Int>(0)
  init() {}
  func add() { count.add(1, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}

/// Completions a test double parks, to be called when the test decides.
final class ParkedCompletions<Value: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Value, any Error>) -> Void

  private struct State {
    var parked: [Completion] = []
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let state = Locked(State())

  init() {}

  func park(_ completion: @escaping Completion) {
    let ready = state.withLock { state in
      state.parked.append(completion)
      let count = state.parked.count
      defer { state.waiters.removeAll { $0.count <= count } }
      return state.waiters.filter { $0.count <= count }.map(\.continuation)
    }
    for continuation in ready { continuation.resume() }
  }

  /// Waits until `count` completions have been parked.
  func arrivals(_ count: Int) async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state in
        if state.parked.count >= count { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Calls the `index`th parked completion.
  func release(_ index: Int, _ result: Result<Value, any Error>) {
    let completion = state.withLock { $0.parked[index] }
    completion(result)
  }
}

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
