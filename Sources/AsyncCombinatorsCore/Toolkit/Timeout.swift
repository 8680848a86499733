import AsyncCombinatorsKernel
import Dispatch
import Synchronization

extension AsyncFunc {
  /// Fails with ``TimeoutError`` when this function has not completed within `duration` of
  /// the call, and cancels it.
  ///
  /// Whichever comes first wins: the result or the deadline. The deadline, the call's instant
  /// plus `duration`, is also set on the inner run's token, where bodies read it with
  /// ``CancellationToken/deadline(on:)`` and where `retry`, `hedged` and rate limits spend the
  /// same budget; nested timeouts on one clock keep the earliest. When the deadline fires, the
  /// inner run's token is cancelled with the ``TimeoutError`` as its
  /// ``CancellationToken/cause``. The deadline is fixed when the
  /// run of this function starts, so time spent starting counts. A zero duration times out
  /// anything that does not complete before its start returns. The timer holds no thread and
  /// is removed when the result arrives or the run is cancelled. The deadline is measured on
  /// `clock`: a Dispatch timer by default, or a `TestClock` (from `AsyncCombinatorsTesting`)
  /// that fires when the test advances it. A duration of a century or more (such as
  /// `.seconds(Int64.max)`) never comes and arms nothing, on every clock.
  ///
  /// ```swift
  /// let slow = AsyncFunc<Int, Int>.async(name: "slow") { x in
  ///   try await Task.sleep(for: .seconds(10))
  ///   return x
  /// }
  /// let bounded = slow.timeout(.milliseconds(50))
  /// print(bounded)
  /// bounded.run(1) { print($0) }
  /// // prints slow.timeout(0.05 seconds)
  /// // prints failure(TimeoutError: no result within 0.05 seconds)
  /// ```
  ///
  /// - Precondition: `duration` is not negative; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - duration: The time allowed, from the start of the run; not negative.
  ///   - clock: The clock the deadline is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when `duration` is negative.
  ///   - line: The caller's line, named when `duration` is negative.
  /// - Returns: A function with the same input and output, bounded in time.
  /// - Complexity: O(log *n*) to arm and to remove the timer, for *n* timers pending.
  public func timeout<C: Clock>(
    _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
    line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      duration >= .zero, "timeout(\(duration)): the duration must not be negative", file: file,
      line: line)
    let program = program
    let timers = TimerClock(clock)
    return AsyncFunc(modifying: program, call: "timeout(\(duration))") { input, token, report in
      let deadline = duration > .zero ? timers.deadline(after: duration) : nil
      // The deadline goes on the inner run's token, for the bodies and the operators inside.
      let inner =
        duration < TimerClock.horizon
        ? token.makeChild(deadline: clock.now.advanced(by: duration), on: clock).child
        : token.makeChild().child
      let race = TimeoutRace(report, duration, inner: inner)
      program.start(input, token: inner, parent: race)
      race.started(deadline, run: token)
    }
  }
}
