import AsyncCombinatorsKernel
import Synchronization

/// Runs `async` operations one at a time, in the order they were submitted.
///
/// ``submit(_:)`` is synchronous: the moment it returns, the operation has its place in line,
/// so the order of `submit` calls is the order of execution, whichever thread or actor makes
/// them. Each operation starts only after the one before it has completed — with a value, an
/// error, or cancellation — even when both suspend many times. Awaiting an actor gives no such
/// promise: an actor runs one piece at a time, but another call may run at each `await`.
///
/// A failure stays on its own handle and the queue goes on. Cancelling a handle before its
/// operation starts makes it complete with `CancellationError` without running, once its
/// predecessor has completed; the operations after it proceed. Cancelling a running operation
/// is a request the operation answers at its own `try Task.checkCancellation()`: its
/// successor waits until it returns.
///
/// ```swift
/// let queue = OrderedQueue()
/// let a = queue.submit { try await worker.square(3, label: "A") }
/// let b = queue.submit { try await worker.square(4, label: "B") }
/// let c = queue.submit { try await worker.square(5, label: "C") }
/// b.cancel()
/// print(try await a.value, await b.result, try await c.value)
/// print(await worker.trace())
/// // prints 9 failure(Swift.CancellationError()) 25
/// // prints ["start A", "finish A", "start C", "finish C"]
/// ```
///
/// The returned `Task` is the operation's own handle: await its `value` or `result`, or
/// `cancel()` it. The queue keeps no handle alive beyond the last operation's completion.
public final class OrderedQueue: Sendable {
  /// Awaits the completion of the last operation submitted so far; `nil` before the first.
  private let tail = Locked<(@Sendable () async -> Void)?>(nil)

  /// Creates an empty queue.
  public init() {}

  /// Puts `operation` at the end of the line and returns its handle at once.
  ///
  /// The operation runs in a new unstructured task once every operation submitted before it
  /// has completed, unless its handle was cancelled by then.
  ///
  /// ```swift
  /// let queue = OrderedQueue()
  /// let first = queue.submit { "first" }
  /// let second = queue.submit { "second" }
  /// print(try await second.value, try await first.value)
  /// // prints second first   (but "first" ran before "second" started)
  /// ```
  ///
  /// - Parameter operation: The work; it runs with no actor isolation.
  /// - Returns: The operation's task: its value or error, or `CancellationError` if it was
  ///   cancelled before it started.
  /// - Complexity: O(1); one task per operation.
  @discardableResult
  public func submit<T: Sendable>(
    _ operation: @escaping @Sendable () async throws -> T
  ) -> Task<T, any Error> {
    tail.withLock { tail in
      let predecessor = tail
      let job = Task<T, any Error> {
        await predecessor?()
        try Task.checkCancellation()
        return try await operation()
      }
      // A completion gate, not the handle: the successor must wait for a failed or cancelled
      // job as for a successful one, and `result` never throws.
      tail = { _ = await job.result }
      return job
    }
  }

  /// Puts `operation` at the end of the line and awaits its result: ``submit(_:)`` for a
  /// caller that waits, with its cancellation carried across.
  ///
  /// Cancelling the awaiting task cancels the operation: if it has not started, it never
  /// starts (it completes with `CancellationError` once its predecessor has completed, and
  /// this throws then); if it is running, its task is cancelled and this returns what it
  /// returns. The queue's order holds either way: the operation after it still waits for it.
  ///
  /// Use `run` when the caller awaits the work and the work should stop when the caller
  /// does (a screen's request, a task's step). Use `submit` when the work should go on
  /// whatever happens to the caller, or when the caller wants the handle to keep or cancel.
  ///
  /// ```swift
  /// let queue = OrderedQueue()
  /// let waiter = Task { try await queue.run { try await worker.square(3, label: "A") } }
  /// waiter.cancel()  // "A" never starts, or sees its task cancelled.
  /// ```
  ///
  /// - Parameter operation: The work; it runs with no actor isolation.
  /// - Returns: The operation's value.
  /// - Throws: The operation's error, or `CancellationError` if it was cancelled before it
  ///   started.
  public func run<T: Sendable>(
    _ operation: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    let job = submit(operation)
    return try await withTaskCancellationHandler {
      try await job.value
    } onCancel: {
      job.cancel()
    }
  }
}
