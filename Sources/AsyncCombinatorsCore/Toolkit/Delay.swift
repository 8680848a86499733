import AsyncCombinatorsKernel

extension AsyncFunc where Input == Output {
  /// Passes its input through after `duration` on `clock`: a pause in a pipeline.
  ///
  /// The wait holds no thread; cancelling the run during it ends the run at once and removes
  /// the timer. The default clock uses a Dispatch timer; a `TestClock` (from
  /// `AsyncCombinatorsTesting`) completes the pause when the test advances it. A pause of a
  /// century or more never ends: it arms nothing, and only a cancellation ends the run.
  ///
  /// ```swift
  /// let politely = fetch +> .delay(.milliseconds(200)) +> fetchNext
  /// print(politely)
  /// // prints fetch +> delay(0.2 seconds) +> fetchNext
  /// ```
  ///
  /// - Precondition: `duration` is not negative; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - duration: How long to wait; not negative.
  ///   - clock: The clock the wait is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when `duration` is negative.
  ///   - line: The caller's line, named when `duration` is negative.
  /// - Returns: A function that outputs its input, later.
  public static func delay<C: Clock>(
    _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
    line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      duration >= .zero, "delay(\(duration)): the duration must not be negative", file: file,
      line: line)
    let timers = TimerClock(clock)
    let label = Label(name: "delay(\(duration))", fileID: #fileID, line: #line)
    // A step of its own in a trace; built erased, as the library's modifiers are, not through a
    // typed initializer
    // (Performance.md, "What the code's shape buys, and the check that holds it").
    return AsyncFunc(
      program: .make(.stage(label), label: label) { input, token, completion in
        timers.after(duration, token) { expired in
          if expired {
            completion.succeed(input)
          } else {
            completion.fail(CancellationError())
          }
        }
      })
  }
}
