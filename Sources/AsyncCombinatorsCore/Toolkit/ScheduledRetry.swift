import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs this function again when it fails, waiting as `schedule` says: one attempt, then
  /// one more after each wait the schedule gives.
  ///
  /// A success ends the retries. When the schedule ends, the whole fails with the last
  /// attempt's error. `CancellationError` is never retried, nor is an error `shouldRetry`
  /// declines, nor one whose retry the `budget` cannot pay for. An error that conforms to
  /// ``RetryAfterHint`` with a hint raises that wait to the hint: a lower bound, above a
  /// ``Schedule/capped(at:file:line:)`` maximum too, and never jittered below it; the hinted wait is
  /// still one of the schedule's, so it spends no extra attempt. Every run starts the schedule
  /// afresh. The wait holds no thread, and cancelling the run during it ends the run with
  /// `CancellationError` at once. The waits, and the time ``Schedule/upTo(_:file:line:)`` measures,
  /// are read on `clock`: Dispatch timers by default, or a `TestClock` (from
  /// `AsyncCombinatorsTesting`) whose `advance` starts each retry on the test's own thread.
  ///
  /// ```swift
  /// let attempts = Counter()  // next() returns 0, 1, 2, … and counts the calls in value
  /// let flaky = AsyncFunc<String, String>(name: "upload") { file, complete in
  ///   complete(attempts.next() < 2 ? .failure(NetworkError.dropped) : .success(file))
  /// }
  /// let upload = flaky.retry(.exponential(.milliseconds(10)).intersection(.recurs(4)))
  /// print(upload)
  /// print(try await upload("a.mov"), attempts.value)
  /// // prints upload.retry(Schedule.exponential(0.01 seconds).intersection(Schedule.recurs(4)))
  /// // prints a.mov 3
  /// ```
  ///
  /// - Parameters:
  ///   - schedule: The waits between attempts; when it ends, so do the retries.
  ///   - budget: A store of retries shared with other functions, if given.
  ///   - shouldRetry: Whether an error is worth another attempt (transient, say).
  ///   - clock: The clock the waits are measured on; `ContinuousClock()` unless given.
  /// - Returns: A function with the same input and output.
  /// - Complexity: Each wait costs one step of each of the schedule's operators; attempts
  ///   that fail synchronously after a zero wait run in a loop, not one stack frame each.
  public func retry<C: Clock>(
    _ schedule: Schedule, budget: RetryBudget? = nil,
    if shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
    clock: C = ContinuousClock()
  ) -> AsyncFunc where C.Duration == Duration {
    var call = "retry(\(schedule)"
    if let budget { call += ", budget: \(budget.call)" }
    call += ")"
    let plan = SchedulePlan(
      program, call: call, schedule: schedule, clock: clock,
      goal: .retry(budget: budget, shouldRetry: shouldRetry))
    return AsyncFunc(modifying: program, call: call, body: plan.start)
  }
}
