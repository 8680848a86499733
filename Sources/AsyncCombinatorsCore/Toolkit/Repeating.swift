import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs again after each success, waiting as `schedule` says, until `done` holds for an
  /// output or the schedule ends; the result is the last output. A failure ends it with that
  /// error.
  ///
  /// Polling in one line: the first run starts at once; after each output `done` declines,
  /// the schedule gives the wait before the next run, and when it ends instead, the run ends
  /// with that output. Every run starts the schedule afresh. The wait holds no thread, and
  /// cancelling the run during it ends the run with `CancellationError` at once. The waits,
  /// and the time ``Schedule/upTo(_:file:line:)`` measures, are read on `clock`: Dispatch timers by
  /// default, or a `TestClock` (from `AsyncCombinatorsTesting`) that starts each run when
  /// advanced.
  ///
  /// ```swift
  /// let polls = Counter()  // next() returns 0, 1, 2, … and counts the calls in value
  /// let status = AsyncFunc<String, Int>.sync(name: "status") { _ in polls.next() * 25 }
  /// let finished = status.repeating(
  ///   .spaced(.milliseconds(10)).upTo(.seconds(60)), until: { $0 >= 100 })
  /// print(finished)
  /// print(try await finished("export-7"), polls.value)
  /// // prints status.repeating(Schedule.spaced(0.01 seconds).upTo(60.0 seconds))
  /// // prints 100 5
  /// ```
  ///
  /// - Parameters:
  ///   - schedule: The waits between runs; when it ends, the last output is the result.
  ///   - done: Whether an output is the one wanted.
  ///   - clock: The clock the waits are measured on; `ContinuousClock()` unless given.
  /// - Returns: A function with the same input and output.
  /// - Complexity: Each wait costs one step of each of the schedule's operators; runs that
  ///   succeed synchronously after a zero wait run in a loop, not one stack frame each.
  public func repeating<C: Clock>(
    _ schedule: Schedule, until done: @escaping @Sendable (Output) -> Bool,
    clock: C = ContinuousClock()
  ) -> AsyncFunc where C.Duration == Duration {
    let call = "repeating(\(schedule))"
    let plan = SchedulePlan(
      program, call: call, schedule: schedule, clock: clock,
      goal: .repeating(done: { done(unbox($0)) }))
    return AsyncFunc(modifying: program, call: call, body: plan.start)
  }
}
