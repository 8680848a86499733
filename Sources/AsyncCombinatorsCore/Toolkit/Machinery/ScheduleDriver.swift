import AsyncCombinatorsKernel
import Synchronization

/// What every run of one scheduled `retry` or `repeating` function shares.
final class SchedulePlan: Sendable {
  /// When a run goes on, and what ends it.
  enum Goal: Sendable {
    /// Another attempt after a failure the run may retry; a success ends the run.
    case retry(budget: RetryBudget?, shouldRetry: @Sendable (any Error) -> Bool)
    /// Another run after a success that is not `done`; a failure ends the run.
    case repeating(done: @Sendable (AnyValue) -> Bool)
  }

  let inner: Program
  let call: String
  let schedule: Schedule
  let draws: ScheduleDraws
  let timers: TimerClock
  /// The clock's time since a fixed instant, when the schedule reads the time (`upTo`).
  let now: (@Sendable () -> Duration)?
  let goal: Goal

  init<C: Clock>(
    _ inner: Program, call: String, schedule: Schedule, clock: C, goal: Goal
  ) where C.Duration == Duration {
    self.inner = inner
    self.call = call
    self.schedule = schedule
    draws = ScheduleDraws(schedule)
    timers = TimerClock(clock)
    if schedule.readsElapsed {
      let origin = clock.now
      now = { origin.duration(to: clock.now) }
    } else {
      now = nil
    }
    self.goal = goal
  }

  /// How `AsyncFunc(modifying:)` starts one run of this plan.
  func start(_ input: AnyValue, token: CancellationToken, report: ModifierReport) {
    ScheduledLoop(self, input: input, token: token, report: report).start()
  }
}

/// The tries of one run of a scheduled `retry` or `repeating`.
///
/// Tries start from a loop, as `RetryLoop`'s attempts do: a try that ends synchronously and
/// asks for no wait sets `loop` to `again` and returns, and the loop starts the next one, so a
/// thousand synchronous tries use one stack frame. A try that ends later re-enters the loop on
/// its own thread (or the timer's).
final class ScheduledLoop: StageParent {
  private struct State {
    var tries = 0
    var run: ScheduleRun
  }

  /// Where the loop in `startTry` stands; the same protocol as `RetryLoop.Loop`.
  private enum Loop {
    static let idle: UInt8 = 0
    static let running: UInt8 = 1
    static let again: UInt8 = 2
  }

  private let plan: SchedulePlan
  private let input: AnyValue
  private let token: CancellationToken
  private let report: ModifierReport
  /// When the first try started, on the plan's clock, if the schedule reads the time.
  private let started: Duration
  private let state: Locked<State>
  private let loop = Atomic<UInt8>(Loop.idle)

  init(_ plan: SchedulePlan, input: AnyValue, token: CancellationToken, report: ModifierReport) {
    self.plan = plan
    self.input = input
    self.token = token
    self.report = report
    started = plan.now?() ?? .zero
    state = Locked(State(run: ScheduleRun(plan.schedule, draws: plan.draws)))
  }

  func start() { startTry() }

  private func startTry() {
    var current = loop.load(ordering: .relaxed)
    while true {
      let next = current == Loop.idle ? Loop.running : Loop.again
      let (exchanged, found) = loop.compareExchange(
        expected: current, desired: next, ordering: .acquiringAndReleasing)
      if exchanged {
        if next == Loop.again { return }  // The thread in the loop starts it.
        break
      }
      current = found
    }
    while true {
      plan.inner.start(input, token: token, parent: self)
      let (done, _) = loop.compareExchange(
        expected: Loop.running, desired: Loop.idle, ordering: .acquiringAndReleasing)
      if done { return }
      loop.store(Loop.running, ordering: .relaxed)  // It was `again`: one more try.
    }
  }

  /// Starts the next try after `wait`.
  private func again(after wait: Duration) {
    if wait > .zero {
      // A cancelled wait ends the run: nothing else would report it.
      plan.timers.after(wait, token) { expired in
        expired ? self.startTry() : self.report.fail(CancellationError())
      }
    } else {
      startTry()
    }
  }

  /// The schedule's next wait, raised to `floor`, or `nil` once it has ended; counts the try
  /// that just ended.
  private func nextWait(floor: Duration) -> (wait: Duration?, tries: Int) {
    let elapsed = plan.now.map { $0() - started } ?? .zero
    return state.withLock { state in
      state.tries += 1
      return (state.run.next(elapsed: elapsed, floor: floor), state.tries)
    }
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    switch plan.goal {
    case .retry(let budget, _):
      budget?.refund()
      report.succeed(value)
    case .repeating(let done):
      guard !done(value), let wait = nextWait(floor: .zero).wait else {
        return report.succeed(value)
      }
      again(after: wait)
    }
  }

  func childFailed(_ error: any Error, tag _: Int) {
    let cancelled = token.isCancelled
    guard case .retry(let budget, let shouldRetry) = plan.goal, !cancelled,
      !(error is CancellationError), shouldRetry(error)
    else { return report.fail(cancelled ? CancellationError() : error) }
    let hint = (error as? any RetryAfterHint)?.retryAfter.map { max($0, .zero) } ?? .zero
    let (next, attempt) = nextWait(floor: hint)
    guard let wait = next, budget?.spend() ?? true else { return report.fail(error) }
    // The run's budget would run out during the wait: end now, with the error to retry.
    if plan.timers.waitPassesDeadline(wait, on: token) {
      token.runObserver?.observe(
        .retryGaveUpAtDeadline(
          Program.modified(plan.inner, plan.call), attempt: attempt, wait: wait, error: error))
      return report.fail(error)
    }
    if let observer = token.runObserver {
      observer.observe(
        .retryWillWait(
          Program.modified(plan.inner, plan.call), attempt: attempt, wait: wait, error: error))
    }
    again(after: wait)
  }
}
