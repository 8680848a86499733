import AsyncCombinatorsKernel
import Synchronization

extension AsyncFunc {
  /// Runs this function again when it fails: at most `times + 1` attempts in all.
  ///
  /// A success ends the retries, and so does a failure when no attempts are left: the whole
  /// fails with the last attempt's error. `CancellationError` is never retried, nor is an
  /// error `shouldRetry` declines, nor one whose retry the `budget` cannot pay for.
  ///
  /// Wait *k* (from 0) before a retry is `delay × backoff^k`, capped by `maxDelay`, then
  /// spread by `jitter`, drawn afresh for every wait of every run. Waits saturate: a wait too
  /// long for the clock never ends (cancel the run to stop it). An error that conforms to
  /// ``RetryAfterHint`` with a hint is waited at least that long instead: exactly the hint
  /// with `jitter: .none`; with any other jitter, a wait drawn afresh for every wait of every
  /// run in `[hint, 2 × hint]`, so that runs turned away together do not all come back
  /// together. Either way the wait is capped by `maxDelay`. The wait holds no thread, and cancelling the run during it ends the
  /// run with `CancellationError` at once. A run cancelled between attempts ends with
  /// `CancellationError`, never with the error it would have retried. The waits are measured
  /// on `clock`: Dispatch timers by default, or a `TestClock` (from `AsyncCombinatorsTesting`)
  /// whose `advance` starts each retry on the test's own thread.
  ///
  /// Without a hint, its waits are those of the schedule
  /// `.exponential(delay, factor: backoff).capped(at: maxDelay).jittered(jitter)
  /// .intersection(.recurs(times))` given to ``retry(_:budget:if:clock:)`` (drop `capped` without
  /// a `maxDelay`); a `.decorrelated` jitter draws from `delay` alone, as
  /// `.spaced(delay).jittered(.decorrelated).capped(at: maxDelay)` nearly does. The schedule
  /// form raises a hinted wait to the hint, above the cap, where this one caps the hint.
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
  /// - Precondition: `times`, `delay` and `maxDelay` are not negative, and `backoff` is finite and
  ///   at least 1; otherwise the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - times: How many times to retry after the first attempt; 0 or more.
  ///   - delay: The wait before the first retry; zero retries at once.
  ///   - backoff: What each wait is multiplied by for the next; at least 1.
  ///   - maxDelay: The longest any wait may be, if given; 0 or more.
  ///   - jitter: How each wait is spread at random; `.none` unless given.
  ///   - budget: A store of retries shared with other functions, if given.
  ///   - shouldRetry: Whether an error is worth another attempt (transient, say).
  ///   - clock: The clock the waits are measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A function with the same input and output.
  /// - Complexity: At most `times + 1` runs of this function; attempts that fail
  ///   synchronously run in a loop, not one stack frame each.
  public func retry<C: Clock>(
    _ times: Int, delay: Duration = .zero, backoff: Double = 1, maxDelay: Duration? = nil,
    jitter: Jitter = .none, budget: RetryBudget? = nil,
    if shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
    clock: C = ContinuousClock(), file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      times >= 0, "retry(\(times)): the number of retries must not be negative", file: file,
      line: line)
    require(
      delay >= .zero, "retry(delay: \(delay)): the delay must not be negative", file: file,
      line: line)
    require(
      backoff >= 1 && backoff.isFinite, "retry(backoff: \(backoff)): the backoff must be >= 1",
      file: file, line: line)
    require(
      (maxDelay ?? .zero) >= .zero,
      "retry(maxDelay: \(maxDelay ?? .zero)): the longest wait must not be negative", file: file,
      line: line)
    let policy = RetryPolicy(
      times: times, delay: delay, backoff: backoff, maxDelay: maxDelay, jitter: jitter,
      draws: JitterDraws(seed: jitter.seed), budget: budget, shouldRetry: shouldRetry,
      clock: TimerClock(clock))
    var call = "retry(\(times)"
    if delay > .zero { call += ", delay: \(delay)" }
    if backoff != 1 { call += ", backoff: \(backoff)" }
    if let maxDelay { call += ", maxDelay: \(maxDelay)" }
    if jitter != .none { call += ", jitter: \(jitter)" }
    if let budget { call += ", budget: \(budget.call)" }
    call += ")"
    let plan = RetryPlan(program, call: call, policy: policy)
    return AsyncFunc(modifying: program, call: call) { input, token, report in
      RetryLoop(plan, input: input, token: token, report: report).start()
    }
  }
}

/// What every run of one `retry` function shares, in one object that each run holds, rather than
/// each of its fields (Performance.md, "What the code's shape buys, and the check that holds it").
final class RetryPlan: Sendable {
  let inner: Program
  let call: String
  let policy: RetryPolicy

  init(_ inner: Program, call: String, policy: RetryPolicy) {
    self.inner = inner
    self.call = call
    self.policy = policy
  }
}

/// The attempts of one `retry` run.
///
/// Attempts start from a loop, not from the previous attempt's completion: an attempt that
/// fails synchronously sets `loop` to `again` and returns, and the loop starts the next one,
/// so a thousand synchronous failures use one stack frame. An attempt that fails later, after
/// the loop has exited, re-enters the loop on its own thread (or the retry timer's).
///
/// Each attempt starts the inner program directly and reports to the loop, as a modifier's
/// inner function reports to its parent: no run of its own, no registration.
///
/// Not generic over the output, which it only passes on, and neither is the state nested in it
/// (Performance.md, "What the code's shape buys, and the check that holds it").
final class RetryLoop: StageParent {
  private struct State {
    var attempts = 0
    /// What the waits of this run have been, for the next.
    var waits = RetryWaits()
  }

  /// Where the loop in `startAttempt` stands. Only the thread in the loop leaves `running`
  /// for `idle` and `again` for `running`; any thread moves `idle` to `running` (and enters
  /// the loop) or `running` to `again` (and leaves the next attempt to the loop).
  private enum Loop {
    static let idle: UInt8 = 0
    static let running: UInt8 = 1
    static let again: UInt8 = 2
  }

  private let plan: RetryPlan
  private let input: AnyValue
  private let token: CancellationToken
  private let report: ModifierReport
  private let state: Locked<State>
  private let loop = Atomic<UInt8>(Loop.idle)

  init(_ plan: RetryPlan, input: AnyValue, token: CancellationToken, report: ModifierReport) {
    self.plan = plan
    self.input = input
    self.token = token
    self.report = report
    state = Locked(State())
  }

  func start() { startAttempt() }

  /// Starts the next attempt after `wait`, as when an attempt of this loop has failed.
  private func retry(after wait: Duration) {
    if wait > .zero {
      // A cancelled wait ends the run: nothing else would report it.
      plan.policy.clock.after(wait, token) { expired in
        expired ? self.startAttempt() : self.report.fail(CancellationError())
      }
    } else {
      startAttempt()
    }
  }

  private func startAttempt() {
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
      loop.store(Loop.running, ordering: .relaxed)  // It was `again`: one more attempt.
    }
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    plan.policy.budget?.refund()
    report.succeed(value)
  }

  func childFailed(_ error: any Error, tag _: Int) {
    let attempt = state.withLock { state in
      state.attempts += 1
      return state.attempts
    }
    let cancelled = token.isCancelled
    let policy = plan.policy
    guard policy.retries(error, attempt: attempt, isCancelled: cancelled) else {
      return report.fail(cancelled ? CancellationError() : error)
    }
    let wait = state.withLock { policy.wait(after: error, waits: &$0.waits) }
    // The run's budget would run out during the wait: end now, with the error to retry.
    if policy.clock.waitPassesDeadline(wait, on: token) {
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
    retry(after: wait)
  }

}

/// When and how often `retry` tries again.
struct RetryPolicy: Sendable {
  /// The longest wait, about 146 billion years: where waits stop growing, so that scaling
  /// one never overflows. It is past `TimerClock.horizon`, so such a wait arms no timer and
  /// ends only with the run's cancellation.
  static let longestWait = Duration.seconds(Int64.max / 2)

  let times: Int
  let delay: Duration
  let backoff: Double
  var maxDelay: Duration? = nil
  var jitter = Jitter.none
  /// Where jittered waits are drawn from: shared by the runs.
  var draws = JitterDraws(seed: nil)
  var budget: RetryBudget? = nil
  let shouldRetry: @Sendable (any Error) -> Bool
  /// What the waits are measured on.
  var clock = TimerClock.continuous

  /// Whether attempt number `attempt` (from 1), failed with `error`, is tried again: not when
  /// the run was cancelled (the error is not its outcome), nor when no attempts are left, the
  /// error is a cancellation or declined, or the budget cannot pay. Spends the budget when it
  /// says yes.
  func retries(_ error: any Error, attempt: Int, isCancelled: Bool) -> Bool {
    guard !isCancelled, attempt <= times, !(error is CancellationError), shouldRetry(error)
    else { return false }
    return budget?.spend() ?? true
  }

  /// The wait before the next retry, after a failure with `error`; moves `waits` on.
  func wait(after error: any Error, waits: inout RetryWaits) -> Duration {
    defer { waits.factor *= backoff }
    if let hint = (error as? any RetryAfterHint)?.retryAfter {
      // Runs turned away together get the same hint: any jitter spreads them over
      // `[hint, 2 × hint]`, never sooner than the hint says.
      let hinted = max(hint, .zero)
      guard jitter.kind != .none else { return capped(hinted) }
      return capped(hinted + scaled(hinted, by: draws.unit()))
    }
    let computed = capped(scaled(delay, by: waits.factor))
    switch jitter.kind {
    case .none:
      return computed
    case .full:
      return scaled(computed, by: draws.unit())
    case .equal:
      let half = scaled(computed, by: 0.5)
      return half + scaled(computed - half, by: draws.unit())
    case .decorrelated:
      let upper = max(delay, scaled(waits.previous ?? delay, by: 3))
      let wait = capped(delay + scaled(upper - delay, by: draws.unit()))
      waits.previous = wait
      return wait
    }
  }

  private func capped(_ wait: Duration) -> Duration {
    min(wait, maxDelay ?? Self.longestWait)
  }
}

/// One run's waits so far.
struct RetryWaits {
  /// `backoff^k` for the next wait *k*; infinite once it overflows, which `scaled` saturates.
  var factor = 1.0
  /// The last decorrelated wait.
  var previous: Duration?
}

/// `duration × factor` (`factor` ≥ 0, possibly infinite), saturating at the longest wait
/// rather than trapping as `Duration * Double` does when the product does not fit.
func scaled(_ duration: Duration, by factor: Double) -> Duration {
  guard duration > .zero, factor > 0 else { return .zero }
  let (seconds, attoseconds) = duration.components
  let product = (Double(seconds) * 1e18 + Double(attoseconds)) * factor
  let (longestSeconds, _) = RetryPolicy.longestWait.components
  guard product < Double(longestSeconds) * 1e18 else { return RetryPolicy.longestWait }
  return duration * factor
}

extension Program {
  /// How `inner` modified by `call` reads, for an observer: `fetch.retry(3)`.
  static func modified(_ inner: Program, _ call: String) -> String {
    Program.make(.modified(inner, call)) { _, _, _ in }.structure
  }
}
