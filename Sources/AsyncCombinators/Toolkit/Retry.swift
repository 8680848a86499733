extension AsyncFunc {
  /// Runs this function again when it fails: at most `times + 1` attempts in all.
  ///
  /// A success ends the retries, and so does a failure when no attempts are left: the whole
  /// fails with the last attempt's error. `CancellationError` is never retried, nor is an
  /// error `shouldRetry` declines. With a `delay`, each retry waits first, `backoff` times
  /// longer than the one before; the wait holds no thread, and cancelling the run during it
  /// ends the run at once and removes the timer. A run cancelled between attempts ends with
  /// `CancellationError`, never with the error it would have retried. The waits are measured
  /// on `clock`: Dispatch timers by default, or a `TestClock` (from `AsyncCombinatorsTesting`)
  /// whose `advance` starts each retry on the test's own thread.
  ///
  /// ```swift
  /// let attempts = Counter()  // next() returns 0, 1, 2, … and counts the calls in value
  /// let flaky = AsyncFunc<String, String>(name: "upload") { file, complete in
  ///   complete(attempts.next() < 2 ? .failure(NetworkError.dropped) : .success(file))
  /// }
  /// let upload = flaky.retry(2, delay: .milliseconds(100), backoff: 2)
  /// print(upload)
  /// print(try await upload("a.mov"), attempts.value)
  /// // prints upload.retry(2, delay: 0.1 seconds, backoff: 2.0)
  /// // prints a.mov 3
  /// ```
  ///
  /// - Parameters:
  ///   - times: How many times to retry after the first attempt; 0 or more.
  ///   - delay: The wait before the first retry; zero retries at once.
  ///   - backoff: What each wait is multiplied by for the next; at least 1.
  ///   - shouldRetry: Whether an error is worth another attempt (transient, say).
  ///   - clock: The clock the waits are measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A function with the same input and output.
  /// - Complexity: At most `times + 1` runs of this function; attempts that fail
  ///   synchronously run in a loop, not one stack frame each.
  public func retry<C: Clock>(
    _ times: Int, delay: Duration = .zero, backoff: Double = 1,
    if shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
    clock: C = ContinuousClock(), file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    precondition(
      times >= 0, "retry(\(times)): the number of retries must not be negative", file: file,
      line: line)
    precondition(
      delay >= .zero, "retry(delay: \(delay)): the delay must not be negative", file: file,
      line: line)
    precondition(
      backoff >= 1 && backoff.isFinite, "retry(backoff: \(backoff)): the backoff must be >= 1",
      file: file, line: line)
    let policy = RetryPolicy(
      times: times, delay: delay, backoff: backoff, shouldRetry: shouldRetry,
      clock: TimerClock(clock))
    var call = "retry(\(times)"
    if delay > .zero { call += ", delay: \(delay)" }
    if backoff != 1 { call += ", backoff: \(backoff)" }
    call += ")"
    let inner = program
    return AsyncFunc(modifying: inner, call: call) { input, token, report in
      RetryLoop(inner, input: input, token: token, policy: policy, report: report)
        .start()
    }
  }
}
