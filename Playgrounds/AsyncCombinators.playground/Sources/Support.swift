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
