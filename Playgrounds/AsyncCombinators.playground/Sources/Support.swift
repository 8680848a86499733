// Helpers shared by every page of the playground.

import AsyncCombinators
import Dispatch
import Synchronization

/// Runs one snippet under a header and waits for it to finish, as a playground page reads:
/// top to bottom. A thrown error is printed, not fatal.
///
/// The body runs in a task off the main thread, so it must not wait for the main queue.
public func example(_ title: String, _ body: @escaping @Sendable () async throws -> Void) {
  print("\n--- \(title) ---")
  let finished = DispatchSemaphore(value: 0)
  Task {
    do {
      try await body()
    } catch {
      print("error: \(error)")
    }
    finished.signal()
  }
  finished.wait()
}

/// The queue every fake network call of the playground answers on.
public let network = DispatchQueue(label: "network", attributes: .concurrent)

/// A fake asynchronous function: it computes `body(input)` and calls back `milliseconds`
/// later on ``network``. Cancelling the run drops the answer and calls back at once.
public func delayed<Input: Sendable, Output: Sendable>(
  _ name: String, milliseconds: Int = 20,
  _ body: @escaping @Sendable (Input) throws -> Output
) -> AsyncFunc<Input, Output> {
  AsyncFunc(name: name) { input, token, complete in
    let once = OnceFlag()
    let registration = token.onCancel {
      if once.claim() { complete(.failure(CancellationError())) }
    }
    network.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
      registration.remove()
      if once.claim() { complete(Result { try body(input) }) }
    }
  }
}

/// Lets the first of several racing callers through, and nobody after it.
public final class OnceFlag: Sendable {
  private let claimed = Atomic<Bool>(false)

  public init() {}

  /// `true` for the first caller only.
  public func claim() -> Bool {
    !claimed.exchange(true, ordering: .acquiringAndReleasing)
  }
}

/// A thread-safe counter for pages that count what happened.
public final class Counter: Sendable {
  private let count = Atomic<Int>(0)

  public init() {}

  /// Adds one.
  public func increment() { count.add(1, ordering: .relaxed) }

  /// The count so far.
  public var value: Int { count.load(ordering: .relaxed) }
}

/// An error for pages that need one.
public struct PlaygroundError: Error, CustomStringConvertible {
  public var description: String

  public init(_ description: String) { self.description = description }
}

/// Records values from any thread, in the order they arrive.
public final class Recorder<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])

  public init() {}

  public func record(_ value: Value) { values.withLock { $0.append(value) } }

  /// Everything recorded so far.
  public var all: [Value] { values.withLock { $0 } }

  public var count: Int { values.withLock { $0.count } }
}

/// Counts down to zero; ``wait()`` returns once it has.
public final class Countdown: Sendable {
  private struct State {
    var remaining: Int
    var waiters: [CheckedContinuation<Void, Never>] = []
  }

  private let state: Mutex<State>

  public init(_ count: Int) { state = Mutex(State(remaining: count)) }

  public func tick() {
    let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.remaining -= 1
      guard state.remaining <= 0 else { return [] }
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in woken { waiter.resume() }
  }

  public func wait() async {
    await withCheckedContinuation { continuation in
      let done = state.withLock { state -> Bool in
        guard state.remaining > 0 else { return true }
        state.waiters.append(continuation)
        return false
      }
      if done { continuation.resume() }
    }
  }
}

/// A function whose runs wait, parked, until the page completes them by hand.
public final class Parking<Input: Sendable, Output: Sendable>: Sendable {
  /// One parked run: its input, and the completion to call.
  public struct Parked: Sendable {
    public let input: Input
    let completion: @Sendable (Result<Output, any Error>) -> Void

    public func complete(_ result: Result<Output, any Error>) { completion(result) }
  }

  private let parked = Mutex<[Parked]>([])
  private let startedCount = Mutex(0)

  public init() {}

  /// Parks every run it is given.
  public var function: AsyncFunc<Input, Output> {
    AsyncFunc(name: "parked") { input, complete in
      self.startedCount.withLock { $0 += 1 }
      self.parked.withLock { $0.append(Parked(input: input, completion: complete)) }
    }
  }

  /// How many runs have started.
  public var started: Int { startedCount.withLock { $0 } }

  /// The runs parked so far, taken off.
  public func takeAll() -> [Parked] {
    parked.withLock { parked in
      defer { parked = [] }
      return parked
    }
  }
}

/// Holds one completion so that the page decides when, or whether, it is called.
public final class ParkedCompletion<Output: Sendable>: Sendable {
  private let held = Mutex<(@Sendable (Result<Output, any Error>) -> Void)?>(nil)

  public init() {}

  public func park(_ completion: @escaping @Sendable (Result<Output, any Error>) -> Void) {
    held.withLock { $0 = completion }
  }

  public func complete(_ result: Result<Output, any Error>) {
    held.withLock { $0.take() }?(result)
  }
}
