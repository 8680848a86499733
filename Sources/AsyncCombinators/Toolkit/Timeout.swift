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
    let nanoseconds = OneShotTimer.nanoseconds(duration)
    return AsyncFunc(modifying: inner, call: "timeout(\(duration))") { input, token, report in
      // Fixed before the inner run starts, so the time it takes to start counts.
      let deadline = timers.deadline(after: duration, inNanoseconds: nanoseconds)
      let race = TimeoutRace(report, childOf: token, duration)
      inner.start(input, token: race, sink: race)
      race.arm(deadline, run: token)
    }
  }
}

/// Where a `timeout` stage's inner function reports, racing its timer: whichever comes first
/// completes the stage and cancels the other (the inner run, or the timer).
///
/// On the default clock this one object is the whole of the timeout's bookkeeping: it is the
/// child token the inner run is given, which it cancels once the race is decided; the shared
/// timer's closure and the run's cancellation handler each capture it alone (a closure with
/// one object captured needs no allocation of its own), and it removes both itself. Other
/// clocks arm their timer on it as a token, which cancelling it stops.
///
/// `State` is behind its lock, and the rest are `let`s: that, and the token's own guarantee,
/// make the `@unchecked Sendable` safe.
private final class TimeoutRace: CancellationToken, StageSink, @unchecked Sendable {
  private struct State {
    /// The result or the timer has won.
    var isDecided = false
    /// The run was cancelled: its handler has run, and the timer is stopped.
    var isRunCancelled = false
    var timer: SharedTimers.Timer?
    var registration: CancellationToken.Registration?
  }

  private let report: StageReport
  /// The timeout, for its error.
  private let duration: Duration
  private let race = Locked(State())

  /// As a token, a child of `run`: cancelled once the race is decided, which stops the inner
  /// run if the timer won (and a timer armed on it, on a clock other than the default).
  init(_ report: StageReport, childOf run: CancellationToken, _ duration: Duration) {
    self.report = report
    self.duration = duration
    super.init(parent: run)
  }

  /// Starts the timer, unless a result arrived while the inner run started.
  func arm(_ deadline: TimerDeadline, run token: CancellationToken) {
    guard !race.withLock({ $0.isDecided }) else { return }
    guard let due = deadline.dispatchTime else {
      return deadline.arm(token: self) { self.expire() }
    }
    // Both are made outside the lock, and kept unless the race was decided (or the run
    // cancelled) meanwhile; then they are taken back here.
    let registration = token.onCancel { self.runCancelled() }
    let timer = SharedTimers.shared.schedule(at: due) { self.expire() }
    let kept = race.withLock { state in
      guard !state.isDecided && !state.isRunCancelled else { return false }
      state.timer = timer
      state.registration = registration
      return true
    }
    if !kept {
      registration.remove()
      timer.cancel()
    }
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

  private func expire() {
    guard decide() else { return }
    report.fail(TimeoutError(duration: duration))
  }

  /// The run was cancelled: the timer stops; the inner run, cancelled with it, still reports.
  private func runCancelled() {
    let timer = race.withLock { state -> SharedTimers.Timer? in
      state.isRunCancelled = true
      state.registration = nil  // It has run.
      return state.timer.take()
    }
    timer?.cancel()
  }

  private func decide() -> Bool {
    let taken = race.withLock {
      state -> (SharedTimers.Timer?, CancellationToken.Registration?)? in
      guard !state.isDecided else { return nil }
      state.isDecided = true
      defer {
        state.timer = nil
        state.registration = nil
      }
      return (state.timer, state.registration)
    }
    guard let (timer, registration) = taken else { return false }
    registration?.remove()
    timer?.cancel()  // Nothing to do if this is the timer firing.
    cancel()  // Stops the inner run, or another clock's timer.
    return true
  }
}
