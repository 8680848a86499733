import AsyncCombinatorsCore
import AsyncCombinatorsKernel
import Dispatch

// Everyday verbs of a promise chain, each one of `AsyncFunc`'s public operators applied to the
// chain so far: the promise gains them without a mechanism of its own.

extension Promise {
  /// A promise that succeeds with `value` as soon as it starts.
  ///
  /// ```swift
  /// print(try await Promise(value: 41).then { $0 + 1 }.value)
  /// // prints 42
  /// ```
  ///
  /// - Parameter value: The promise's value.
  public init(value: Value) {
    self.init(.sync(name: "Promise(value:)") { _ in value })
  }

  /// A promise that fails with `error` as soon as it starts.
  ///
  /// ```swift
  /// Promise<Int>(error: NetworkError.offline).then { $0 + 1 }.error { print("failed:", $0) }
  /// // prints failed: NetworkError.offline
  /// ```
  ///
  /// - Parameter error: The promise's failure.
  public init(error: any Error) {
    self.init(.sync(name: "Promise(error:)") { _ in throw error })
  }

  /// Fails with ``TimeoutError`` when the chain so far has not completed within `duration`,
  /// and cancels it: ``AsyncFunc/timeout(_:clock:file:line:)`` on the chain.
  ///
  /// ```swift
  /// let slow = firstly { () -> Int in
  ///   usleep(300_000)
  ///   return 1
  /// }
  /// slow.timeout(.milliseconds(50)).error { print($0) }
  /// // prints TimeoutError: no result within 0.05 seconds
  /// ```
  ///
  /// - Parameters:
  ///   - duration: The time allowed, from the start of the run; not negative.
  ///   - clock: The clock the deadline is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when `duration` is negative.
  ///   - line: The caller's line, named when `duration` is negative.
  /// - Returns: A new chain that wraps this one, bounded in time.
  public func timeout<C: Clock>(
    _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
    line: UInt = #line
  ) -> Promise where C.Duration == Duration {
    Promise(chain.timeout(duration, clock: clock, file: file, line: line))
  }

  /// Runs the chain so far again when it fails: at most `times + 1` runs in all.
  ///
  /// ``AsyncFunc/retry(_:delay:backoff:maxDelay:jitter:budget:if:clock:file:line:)`` on the chain: a promise is cold,
  /// so each attempt runs every block of the chain again. `CancellationError` is never retried.
  ///
  /// ```swift
  /// let attempts = Counter()  // next() returns 0, 1, 2, … and counts the calls in value
  /// let upload = firstly { () throws -> String in
  ///   guard attempts.next() == 2 else { throw NetworkError.dropped }
  ///   return "uploaded"
  /// }
  /// print(try await upload.retry(2, delay: .milliseconds(10)).value, attempts.value)
  /// // prints uploaded 3
  /// ```
  ///
  /// - Parameters:
  ///   - times: How many times to retry after the first attempt; 0 or more.
  ///   - delay: The wait before the first retry; zero retries at once.
  ///   - backoff: What each wait is multiplied by for the next; at least 1.
  ///   - maxDelay: The longest any wait may be, before jitter; no cap when `nil`.
  ///   - jitter: How each wait is randomized, so runs that fail together do not retry in step.
  ///   - budget: Retries shared with every function given the same budget.
  ///   - shouldRetry: Whether an error is worth another attempt.
  ///   - clock: The clock the waits are measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A new chain that wraps this one.
  public func retry<C: Clock>(
    _ times: Int, delay: Duration = .zero, backoff: Double = 1, maxDelay: Duration? = nil,
    jitter: Jitter = .none, budget: RetryBudget? = nil,
    if shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
    clock: C = ContinuousClock(), file: StaticString = #fileID, line: UInt = #line
  ) -> Promise where C.Duration == Duration {
    Promise(
      chain.retry(
        times, delay: delay, backoff: backoff, maxDelay: maxDelay, jitter: jitter, budget: budget,
        if: shouldRetry, clock: clock, file: file, line: line))
  }

  /// Passes the chain's value on after `duration` on `clock`: ``AsyncFunc/delay(_:clock:file:line:)``
  /// after the chain.
  ///
  /// The wait holds no thread; a failure is not delayed, and cancelling during the wait ends
  /// the run at once.
  ///
  /// ```swift
  /// let started = ContinuousClock.now
  /// let later = try await firstly { "later" }.delay(.milliseconds(20)).value
  /// print(later, ContinuousClock.now - started >= .milliseconds(20))
  /// // prints later true
  /// ```
  ///
  /// - Parameters:
  ///   - duration: How long to wait; not negative.
  ///   - clock: The clock the wait is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when `duration` is negative.
  ///   - line: The caller's line, named when `duration` is negative.
  /// - Returns: A new chain, this one followed by the wait.
  public func delay<C: Clock>(
    _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
    line: UInt = #line
  ) -> Promise where C.Duration == Duration {
    Promise(chain +> .delay(duration, clock: clock, file: file, line: line))
  }

  /// Calls `body` with the chain's result, the value or the error, then passes it on
  /// unchanged.
  ///
  /// For logging and progress. It sees every outcome, the `CancellationError` of a cancelled
  /// run too, and runs before the blocks after it.
  ///
  /// ```swift
  /// let logged = firstly { 7 }.tap { print("got", $0) }.then { $0 * 6 }
  /// print(try await logged.value)
  /// // prints got success(7)
  /// // prints 42
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Sees the result.
  /// - Returns: A new chain that wraps this one.
  public func tap(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
  ) -> Promise {
    Promise(
      AsyncFunc(wrapping: chain, call: "tap { … }") { _, token, complete in
        chain.run((), token: token) { result in
          (queue ?? blockQueue).async {
            body(result)
            complete(result)
          }
        }
      })
  }
}

/// Runs every promise at once; the first to succeed wins and the others are cancelled:
/// ``AsyncFunc/race(_:file:line:)`` over their chains.
///
/// Failures do not end the race while another promise may still succeed; when all have
/// failed, the race fails with the last failure.
///
/// ```swift
/// let slow = firstly { () -> String in
///   usleep(200_000)
///   return "slow mirror"
/// }
/// print(try await race([slow, firstly { "fast mirror" }]).value)
/// // prints fast mirror
/// ```
///
/// - Precondition: `promises` is not empty; otherwise the program stops with a message naming the
///   caller's line.
/// - Parameters:
///   - promises: The contenders; at least one.
///   - file: The caller's file, named when `promises` is empty.
///   - line: The caller's line, named when `promises` is empty.
/// - Returns: A promise of the first value.
/// - Complexity: Starts all *n* promises at once.
public func race<T>(
  _ promises: [Promise<T>], file: StaticString = #fileID, line: UInt = #line
) -> Promise<T> {
  Promise(AsyncFunc.race(promises.map(\.chain), file: file, line: line))
}
