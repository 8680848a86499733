import Dispatch
import Synchronization

extension AsyncFunc {
  /// Fails with ``TimeoutError`` when this function has not completed within `duration`,
  /// and cancels it.
  ///
  /// Whichever comes first wins: the result or the deadline. The inner run starts first, and
  /// the timer is armed only if no result has arrived by the time that start returns, so a
  /// stage that completes synchronously is never timed out, even by a zero duration. The
  /// timer holds no thread and is removed when the result arrives or the run is cancelled.
  /// A timeout of a tenth of a second or more is looked at a millisecond after the start,
  /// together with the others started meanwhile, and a run whose result comes first never
  /// arms it: inside a fold of quick runs, most timers then cost nothing to set and take back.
  /// A run still going then waits again, four times as long each time, for as long as its
  /// deadline leaves room, and arms its timer before the deadline (at the latest 1.4 s after
  /// the start): a run of a tenth of a second never arms a 30-second timeout either. Such a
  /// long timeout counts from the moment the function's start returned, give or take that
  /// first millisecond, not from the call: reading the clock at every start slowed a fold's
  /// starting thread enough to show, and what a start does before it returns cannot be timed
  /// out anyway. A shorter timeout counts from the call.
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
    let onDispatch = timers.isDispatch
    // A long deadline on the default clock is left to the shared timers' batches, so that a
    // run that finishes first never arms it; a millisecond late is nothing next to a tenth of
    // a second.
    if onDispatch && (nanoseconds ?? .max) >= TimeoutRace.shortestArmedSoon {
      let due = UInt64(clamping: nanoseconds ?? .max)
      return AsyncFunc(modifying: inner, call: "timeout(\(duration))") { input, token, report in
        let race = TimeoutRace(report, childOf: token, duration, onDispatch: true)
        inner.start(input, token: race, sink: race)
        race.armSoon(dueAfter: due)
      }
    }
    return AsyncFunc(modifying: inner, call: "timeout(\(duration))") { input, token, report in
      // Fixed before the inner run starts, so the time it takes to start counts.
      let deadline = timers.deadline(after: duration, inNanoseconds: nanoseconds)
      let race = TimeoutRace(report, childOf: token, duration, onDispatch: onDispatch)
      inner.start(input, token: race, sink: race)
      race.arm(deadline, run: token)
    }
  }
}

/// Where a `timeout` stage's inner function reports, racing its timer: whichever comes first
/// completes the stage and cancels the other (the inner run, or the timer).
///
/// On the default clock this one object is the whole of the timeout's bookkeeping: it is the
/// child token the inner run is given, which it cancels if the timer wins; the shared timer's
/// closure and the run's cancellation handler each capture it alone (a closure with one object
/// captured needs no allocation of its own), and it removes both itself. A long timeout waits
/// in the shared timers' batches to arm the two, holding its deadline in `timer` meanwhile,
/// and arms nothing if it has been decided by then; it lets go of its sink when it is decided,
/// since it may wait in a batch for up to a second more. It is kept within 120
/// bytes, the most glibc serves from its fastest bins: a fold's races are made on one thread
/// and freed on others, and a larger object would take the allocator's lock on each free. And
/// it holds no reference to an object every run shares beyond its parent and its sink: the
/// registration is kept as its id on the parent, and the duration by value, since every
/// reference to a shared object is an atomic count that the fold's threads pass back and forth.
///
/// Its state is `phase`, one atomic: `timer` and `registration` are written only by `arm`,
/// before it publishes them by moving the phase to `armed`, and read only by the one thread
/// that moves it on from `armed`; the deadline a batched race keeps in `timer` is handed from
/// batch to batch by the lock of the shared timers' queues of batched races; `report` is
/// touched only by the one thread that moves the phase to `decided`. That, and the token's
/// own guarantee, make the `@unchecked Sendable` safe.
private final class TimeoutRace: CancellationToken, StageSink, DeferredTimer,
  @unchecked Sendable
{
  private enum Phase {
    /// The inner run is starting, or running with the timer waiting in a batch: not armed.
    static let starting: UInt8 = 0
    /// The timer is pending, and the run's cancellation handler registered.
    static let armed: UInt8 = 1
    /// The run was cancelled and its handler stopped the timer; the inner run, cancelled with
    /// it, has still to report.
    static let runCancelled: UInt8 = 2
    /// The result or the timer has won.
    static let decided: UInt8 = 3
  }

  /// Where the stage reports; let go by the one that decides the race, since a decided race
  /// may still wait in a batch of the shared timers for up to a second.
  @exclusivity(unchecked) private var report: StageReport?
  /// The timeout, for its error.
  private let duration: Duration
  @exclusivity(unchecked) private var timer = SharedTimers.Timer.none
  /// The run's cancellation handler, as its id on the run's token (this token's parent).
  @exclusivity(unchecked) private var registration: UInt64?
  private let phase = Atomic<UInt8>(Phase.starting)
  /// Whether the deadline is on the default clock, where ``SharedTimers`` keeps the timer;
  /// another clock's timer is armed on this token, which cancelling it stops.
  private let onDispatch: Bool
  /// Whether a batch has fixed the deadline in `timer`, which held the wait until then;
  /// written by the batches, one after another, under the shared timers' locks.
  @exclusivity(unchecked) private var hasDeadline = false

  /// As a token, a child of `run`: cancelled if the timer wins, which stops the inner run (and
  /// a timer armed on it, on a clock other than the default).
  init(
    _ report: StageReport, childOf run: CancellationToken, _ duration: Duration, onDispatch: Bool
  ) {
    self.report = report
    self.duration = duration
    self.onDispatch = onDispatch
    super.init(parent: run)
  }

  /// The shortest timeout, in nanoseconds, whose timer is armed soon rather than at once.
  static let shortestArmedSoon = 100_000_000

  /// Starts the timer, unless a result arrived while the inner run started.
  func arm(_ deadline: TimerDeadline, run token: CancellationToken) {
    guard phase.load(ordering: .acquiring) == Phase.starting else { return }
    guard let due = deadline.dispatchTime else {
      return deadline.arm(token: self) { self.expire() }
    }
    arm(due, run: token)
  }

  /// Leaves the timer to the shared timers' batches (see ``SharedTimers/armSoon(_:)``),
  /// unless a result arrived while the inner run started. The first batch to look at the race
  /// fixes its deadline: `nanoseconds` after the batch was taken, which is after this start,
  /// and at most a batch's wait of a millisecond later than it. Reading the clock here was
  /// about 110 of the 3,600 instructions a fold's starting thread spent on each run, and that
  /// thread sets the fold's pace: once it is slower than the workers, each run wakes one.
  func armSoon(dueAfter nanoseconds: UInt64) {
    guard phase.load(ordering: .acquiring) == Phase.starting else { return }
    // Until the deadline is fixed, the timer's slot holds the wait; the queue's lock hands it
    // to the batch's thread.
    timer = SharedTimers.Timer(id: nanoseconds)
    SharedTimers.shared.armSoon(self)
  }

  /// Fixes the deadline, the first time it is asked; none once the race is decided or the run
  /// cancelled, when no timer is needed.
  func deadline(queuedBefore now: UInt64) -> UInt64? {
    guard phase.load(ordering: .acquiring) == Phase.starting, !isCancelled else { return nil }
    if !hasDeadline {
      hasDeadline = true
      let (due, overflow) = now.addingReportingOverflow(timer.id)
      timer = SharedTimers.Timer(id: overflow ? DispatchTime.distantFuture.uptimeNanoseconds : due)
    }
    return timer.id
  }

  /// A batch is arming this race, whose deadline it has fixed: the run's token is this one's
  /// parent.
  func armDeferred() {
    arm(DispatchTime(uptimeNanoseconds: timer.id), run: parentToken!)
  }

  private func arm(_ due: DispatchTime, run token: CancellationToken) {
    // A race decided, or a run cancelled, while this one waited to be armed needs no timer.
    guard phase.load(ordering: .acquiring) == Phase.starting else { return }
    registration = token.onCancel { self.runCancelled() }.idOnToken
    timer = SharedTimers.shared.schedule(at: due) { self.expire() }
    guard
      !phase.compareExchange(
        expected: Phase.starting, desired: Phase.armed, ordering: .acquiringAndReleasing
      ).exchanged
    else { return }
    // The race was decided, or the run cancelled, while they were made: no one else will
    // take them back.
    removeRegistration()
    timer.cancel()
  }

  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    let value = value
    guard decide() else { return }
    endInnerWork()
    report.take()!.succeed(value)
  }

  func stageFailed(_ error: any Error, branch _: Int) {
    guard decide() else { return }
    endInnerWork()
    report.take()!.fail(error)
  }

  private func expire() {
    guard decide() else { return }
    cancel()  // Stops the inner run.
    report.take()!.fail(TimeoutError(duration: duration))
  }

  /// The inner run has reported, so only its token's ties are left: another clock's timer,
  /// armed on it, or the link a handler registered on it made to the run's token.
  private func endInnerWork() {
    if onDispatch { detachFromParent() } else { cancel() }
  }

  /// The run was cancelled: the timer stops; the inner run, cancelled with it, still reports.
  private func runCancelled() {
    var current = phase.load(ordering: .relaxed)
    while current == Phase.starting || current == Phase.armed {
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: Phase.runCancelled, ordering: .acquiringAndReleasing)
      if exchanged {
        if current == Phase.armed { timer.cancel() }  // Else `arm` sees the phase and does.
        return
      }
      current = original
    }
  }

  private func removeRegistration() {
    if let id = registration { removeFromParent(id) }
  }

  /// Claims the win: `true` for the first of the result and the timer.
  private func decide() -> Bool {
    var current = phase.load(ordering: .relaxed)
    while current != Phase.decided {
      let (exchanged, original) = phase.compareExchange(
        expected: current, desired: Phase.decided, ordering: .acquiringAndReleasing)
      if exchanged {
        if current == Phase.armed {
          removeRegistration()
          timer.cancel()  // Nothing to do if this is the timer firing.
        }
        return true
      }
      current = original
    }
    return false
  }
}
