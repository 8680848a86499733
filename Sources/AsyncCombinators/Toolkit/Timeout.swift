import Dispatch
import Synchronization

/// The error of a run that ``AsyncFunc/timeout(_:clock:file:line:)`` stopped because it took too long.
public struct TimeoutError: Error, Equatable, CustomStringConvertible {
  /// The time the run was given.
  public let duration: Duration

  /// Creates the error for a run that was given `duration`.
  public init(duration: Duration) { self.duration = duration }

  /// Says how long the run was given.
  public var description: String { "TimeoutError: no result within \(duration)" }
}

extension AsyncFunc {
  /// Fails with ``TimeoutError`` when this function has not completed within `duration`,
  /// and cancels it.
  ///
  /// Whichever comes first wins: the result or the deadline. The inner run starts first, and
  /// the timer is armed only if no result has arrived by the time that start returns, so a
  /// stage that completes synchronously is never timed out, even by a zero duration. The
  /// timer holds no thread and is removed when the result arrives or the run is cancelled.
  /// The deadline is measured on `clock`: a Dispatch timer by default, or a `TestClock`
  /// (from `AsyncCombinatorsTesting`) that fires when the test advances it.
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
  /// - Parameters:
  ///   - duration: The time allowed, from the start of the run; not negative. Zero times out
  ///     anything that does not complete synchronously.
  ///   - clock: The clock the deadline is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when `duration` is negative.
  ///   - line: The caller's line, named when `duration` is negative.
  /// - Returns: A function with the same input and output, bounded in time.
  public func timeout<C: Clock>(
    _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
    line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    precondition(
      duration >= .zero, "timeout(\(duration)): the duration must not be negative", file: file,
      line: line)
    let inner = program
    let timers = TimerClock(clock)
    return AsyncFunc(modifying: inner, call: "timeout(\(duration))") { input, token, report in
      let (child, link) = token.makeChild()
      // Fixed before the inner run starts, so the time it takes to start counts.
      let deadline = timers.deadline(after: duration)
      let race = Deadline(report, child, link, duration)
      inner.start(input, token: child, sink: race)
      // A result that arrived during the start has cancelled `child`: no timer is needed.
      guard !child.isCancelled else { return }
      deadline.arm(token: child) { race.expire() }
    }
  }
}

/// Where a `timeout` stage's inner function reports, racing its timer: whichever comes first
/// completes the stage and cancels the other (the inner run, or the timer).
private final class Deadline: StageSink {
  private let report: StageReport
  private let child: CancellationToken
  private let link: CancellationToken.Registration
  /// Won by the first of the result and the timer; in place, not an object of its own.
  private let decided = Atomic<Bool>(false)

  /// The timeout, for its error. Held here so that the timer's closure captures this object
  /// alone, which needs no allocation of its own.
  private let duration: Duration

  init(
    _ report: StageReport, _ child: CancellationToken,
    _ link: CancellationToken.Registration, _ duration: Duration
  ) {
    self.report = report
    self.child = child
    self.link = link
    self.duration = duration
  }

  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    let value = value
    guard decide() else { return }
    report.succeed(value)
  }

  func stageFailed(_ error: any Error, branch _: Int) {
    guard decide() else { return }
    report.fail(error)
  }

  func expire() {
    guard decide() else { return }
    report.fail(TimeoutError(duration: duration))
  }

  private func decide() -> Bool {
    guard !decided.exchange(true, ordering: .acquiringAndReleasing) else { return false }
    link.remove()
    child.cancel()  // Stops the timer, or the inner run.
    return true
  }
}
