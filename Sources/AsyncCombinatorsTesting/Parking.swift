import AsyncCombinators
import Synchronization

// Three ways for a test to decide when work finishes, from the smallest up:
// `ParkedCompletion` holds one stage's completion; `ParkedCompletions` collects many, in
// arrival order; `Parking` is a whole function whose runs park with their inputs and tokens.

/// Holds a stage's completion so a test decides when, and whether, the stage finishes.
///
/// Holding it also keeps it from being released uncalled, which the library would report.
///
/// ```
/// let parked = ParkedCompletion<Int>()
/// let stage = AsyncFunc<Int, Int>(name: "stage") { _, complete in parked.park(complete) }
/// stage.run(1) { print($0) }
/// await parked.arrived.wait()
/// parked.complete(.success(2))
/// // prints success(2)
/// ```
package final class ParkedCompletion<Output: Sendable>: Sendable {
  /// The completion a stage parks.
  package typealias Completion = @Sendable (Result<Output, any Error>) -> Void

  private let slot = Locked<Completion?>(nil)
  /// Opens when a completion has been parked: the stage has started.
  package let arrived = Gate()

  /// Creates an empty slot.
  package init() {}

  /// Keeps `completion` for the test, and opens ``arrived``.
  package func park(_ completion: @escaping Completion) {
    slot.withLock { $0 = completion }
    arrived.open()
  }

  /// Calls the parked completion (again, if called before); nothing if none is parked.
  package func complete(_ result: Result<Output, any Error>) {
    let completion = slot.withLock { $0 }
    completion?(result)
  }
}

/// Whether a result is the cancellation failure.
///
/// - Parameter result: A run's result.
/// - Returns: `true` for `.failure(CancellationError())`.
package func isCancellation<Output>(_ result: Result<Output, any Error>) -> Bool {
  guard case .failure(let error) = result else { return false }
  return error is CancellationError
}

/// A lock-free tally, for counting completions that race on many threads.
///
/// Prefer it to a `Mutex`-guarded array under heavy contention: on Linux a contended `Mutex`
/// hands over through the kernel, which Thread Sanitizer does not see as synchronization.
///
/// ```
/// let calls = Tally()
/// calls.add()
/// print(calls.value)
/// // prints 1
/// ```
package final class Tally: Sendable {
  private let count = Atomic<Int>(0)
  /// A tally at zero.
  package init() {}
  /// Adds one.
  package func add() { count.add(1, ordering: .relaxed) }
  /// The count so far.
  package var value: Int { count.load(ordering: .relaxed) }
}

/// Completions a test double parks, to be called when the test decides.
///
/// ```
/// let parked = ParkedCompletions<Int>()
/// let stage = AsyncFunc<Int, Int>(name: "stage") { _, complete in parked.park(complete) }
/// stage.run(1) { print("first", $0) }
/// stage.run(2) { print("second", $0) }
/// await parked.arrivals(2)
/// parked.release(1, .success(20))
/// parked.release(0, .success(10))
/// // prints second success(20)
/// // prints first success(10)
/// ```
package final class ParkedCompletions<Value: Sendable>: Sendable {
  /// The completion a stage parks.
  package typealias Completion = @Sendable (Result<Value, any Error>) -> Void

  private struct State {
    var parked: [Completion] = []
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let state = Locked(State())

  /// Creates an empty list.
  package init() {}

  /// Keeps `completion`, after those parked before it.
  package func park(_ completion: @escaping Completion) {
    let ready = state.withLock { state in
      state.parked.append(completion)
      let count = state.parked.count
      defer { state.waiters.removeAll { $0.count <= count } }
      return state.waiters.filter { $0.count <= count }.map(\.continuation)
    }
    for continuation in ready { continuation.resume() }
  }

  /// Suspends until `count` completions have been parked.
  package func arrivals(_ count: Int) async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state in
        if state.parked.count >= count { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Calls the `index`th parked completion (from 0, in arrival order) with `result`.
  package func release(_ index: Int, _ result: Result<Value, any Error>) {
    let completion = state.withLock { $0.parked[index] }
    completion(result)
  }
}

/// A function whose runs park until the test releases them, so a test decides exactly when
/// each run ends (and can await "*n* runs have started").
///
/// ```
/// let parking = Parking<Int, Int>()
/// parking.function.run(1) { print($0) }
/// await parking.waitForStarts(1)
/// let run = parking.takeAll()[0]
/// run.complete(.success(run.input + 1))
/// // prints success(2)
/// ```
package final class Parking<Input: Sendable, Output: Sendable>: Sendable {
  /// One run that has started and waits for the test.
  package struct Parked: Sendable {
    /// The run's input.
    package let input: Input
    /// The run's cancellation token: check `isCancelled` to see a cancellation arrive.
    package let token: CancellationToken
    /// The run's completion, to call when the test decides.
    package let complete: @Sendable (Result<Output, any Error>) -> Void
  }

  private struct State {
    var parked: [Parked] = []
    var started = 0
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state = Locked(State())

  /// Creates a parking with no runs.
  package init() {}

  /// The function, named `parked`, whose every run parks here.
  package var function: AsyncFunc<Input, Output> {
    AsyncFunc(name: "parked") { input, token, complete in
      let ready = self.state.withLock { state in
        state.parked.append(Parked(input: input, token: token, complete: complete))
        state.started += 1
        let started = state.started
        let ready = state.waiters.filter { $0.count <= started }
        state.waiters.removeAll { $0.count <= started }
        return ready
      }
      for waiter in ready { waiter.continuation.resume() }
    }
  }

  /// How many runs have started so far.
  package var started: Int { state.withLock { $0.started } }

  /// Suspends until at least `count` runs have started.
  package func waitForStarts(_ count: Int) async {
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
  ///
  /// - Returns: The runs parked since the last call.
  package func takeAll() -> [Parked] {
    state.withLock { state in
      defer { state.parked = [] }
      return state.parked
    }
  }
}

/// Counts runs in flight and remembers the most at once: for checking concurrency limits.
///
/// ```
/// let inFlight = InFlight()
/// inFlight.enter()
/// inFlight.enter()
/// inFlight.leave()
/// print(inFlight.now, inFlight.peak)
/// // prints 1 2
/// ```
package final class InFlight: Sendable {
  private let state = Locked((now: 0, peak: 0))

  /// Nothing in flight.
  package init() {}

  /// One more in flight.
  package func enter() {
    state.withLock {
      $0.now += 1
      $0.peak = Swift.max($0.peak, $0.now)
    }
  }

  /// One fewer in flight.
  package func leave() { state.withLock { $0.now -= 1 } }

  /// The most that were in flight at once.
  package var peak: Int { state.withLock { $0.peak } }
  /// How many are in flight now.
  package var now: Int { state.withLock { $0.now } }
}

/// An error that says which test double threw it.
///
/// ```
/// print(TestError(3) == TestError(3))
/// // prints true
/// ```
package struct TestError: Error, Equatable {
  /// Which double, or which attempt, failed.
  package let id: Int
  /// The error numbered `id`.
  package init(_ id: Int = 0) { self.id = id }
}

extension Result {
  /// The error of a failure, or `nil` for a success: for `#expect(result.failure is ...)`.
  package var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
