import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct RetryTests {
  /// A function that fails its first `failures` attempts, counting them.
  final class Flaky: Sendable {
    let attempts = Atomic(0)
    let failures: Int
    init(failures: Int) { self.failures = failures }

    var function: AsyncFunc<String, String> {
      AsyncFunc(name: "flaky") { input, complete in
        let attempt = self.attempts.add(1, ordering: .relaxed).newValue
        complete(attempt <= self.failures ? .failure(TestError(attempt)) : .success(input))
      }
    }
    var count: Int { attempts.load(ordering: .relaxed) }
  }

  @Test func retry_stops_at_the_first_success() async throws {
    let flaky = Flaky(failures: 2)
    #expect(try await flaky.function.retry(5)("ok") == "ok")
    #expect(flaky.count == 3)
  }

  @Test func retry_makes_at_most_times_plus_one_attempts_and_fails_with_the_last_error() async {
    let flaky = Flaky(failures: .max)
    let result = await runToCompletion(flaky.function.retry(2), "x")
    #expect(result.failure as? TestError == TestError(3))
    #expect(flaky.count == 3)
  }

  @Test func retries_without_a_delay_start_at_once_on_the_thread_of_the_failed_attempt() {
    let flaky = Flaky(failures: 2)
    let results = Recorder<String>()
    flaky.function.retry(2).run("ok") { results.record("\($0)") }
    #expect(results.all == ["success(\"ok\")"])  // before `run` returned: no timer in between
    #expect(flaky.count == 3)
  }

  @Test func retry_zero_is_one_attempt() async {
    let flaky = Flaky(failures: .max)
    _ = await runToCompletion(flaky.function.retry(0), "x")
    #expect(flaky.count == 1)
  }

  @Test func retry_never_retries_cancellation() async {
    let attempts = Atomic(0)
    let selfCancelling = AsyncFunc<Int, Int> { _, complete in
      attempts.add(1, ordering: .relaxed)
      complete(.failure(CancellationError()))
    }
    let result = await runToCompletion(selfCancelling.retry(3), 1)
    #expect(result.failure is CancellationError)
    #expect(attempts.load(ordering: .relaxed) == 1)
  }

  @Test func retry_asks_should_retry_about_each_error() async {
    let flaky = Flaky(failures: .max)
    let onlyFirst = flaky.function.retry(5, if: { ($0 as? TestError)?.id == 1 })
    let result = await runToCompletion(onlyFirst, "x")
    #expect(result.failure as? TestError == TestError(2))
    #expect(flaky.count == 2)
  }

  @Test func synchronous_failures_retry_in_a_loop_not_a_recursion() async {
    let flaky = Flaky(failures: .max)
    _ = await runToCompletion(flaky.function.retry(100_000), "x")
    #expect(flaky.count == 100_001)
  }

  @Test func retries_that_fail_asynchronously_are_counted_too() async throws {
    let attempts = Atomic(0)
    let queue = testQueue()
    let flaky = AsyncFunc<Int, Int> { x, complete in
      queue.async {
        let attempt = attempts.add(1, ordering: .relaxed).newValue
        complete(attempt < 4 ? .failure(TestError(attempt)) : .success(x))
      }
    }
    #expect(try await flaky.retry(3)(7) == 7)
    #expect(attempts.load(ordering: .relaxed) == 4)
  }

  @Test func retry_waits_the_delay_before_each_retry() throws {
    let clock = TestClock()
    let flaky = Flaky(failures: 2)
    let outcome = Locked<Result<String, any Error>?>(nil)
    flaky.function.retry(2, delay: .milliseconds(20), backoff: 2, clock: clock).run("x") {
      result in outcome.withLock { $0 = result }
    }
    clock.advance(to: .start + .milliseconds(59))
    #expect(flaky.count == 2)
    #expect(outcome.withLock { $0 } == nil)
    clock.advance(to: .start + .milliseconds(60))  // 20 + 40
    #expect(try outcome.withLock { $0 }?.get() == "x")
    #expect(flaky.count == 3)
  }

  @Test func retry_waits_on_the_default_clock_too() async throws {
    let flaky = Flaky(failures: 2)
    let start = ContinuousClock.now
    _ = try await flaky.function.retry(2, delay: .milliseconds(1), backoff: 2)("x")
    #expect(ContinuousClock.now - start >= .milliseconds(3))  // 1 + 2
    #expect(flaky.count == 3)
  }

  @Test func an_attempt_that_fails_after_the_cancellation_is_not_retried() {
    // The run was stopped: the failure it would have retried (or ended with) is not its outcome.
    let policy = RetryPolicy(times: 3, delay: .seconds(1), backoff: 1, shouldRetry: { _ in true })
    #expect(!policy.retries(TestError(1), attempt: 1, isCancelled: true))
    #expect(policy.retries(TestError(1), attempt: 1, isCancelled: false))
    #expect(policy.retries(TestError(1), attempt: 3, isCancelled: false))
    #expect(!policy.retries(TestError(1), attempt: 4, isCancelled: false))
  }

  @Test func a_run_cancelled_mid_attempt_ends_with_cancellation() {
    let attempts = Atomic(0)
    let failsWhenCancelled = AsyncFunc<Int, Int> { _, token, complete in
      attempts.add(1, ordering: .relaxed)
      token.onCancel { complete(.failure(TestError(1))) }
    }
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = failsWhenCancelled.retry(3).run(1) { result in outcome.withLock { $0 = result } }
    token.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(attempts.load(ordering: .relaxed) == 1)
  }

  @Test func backoff_multiplies_each_wait() {
    let policy = RetryPolicy(
      times: 4, delay: .milliseconds(100), backoff: 3, shouldRetry: { _ in true })
    var waits = RetryWaits()
    #expect(policy.wait(after: TestError(1), waits: &waits) == .milliseconds(100))
    #expect(policy.wait(after: TestError(2), waits: &waits) == .milliseconds(300))
    #expect(policy.wait(after: TestError(3), waits: &waits) == .milliseconds(900))
  }

  @Test func cancelling_during_the_wait_ends_the_run_promptly() async {
    let flaky = Flaky(failures: .max)
    let firstFailure = Countdown(1)
    let probe = AsyncFunc<String, String> { input, complete in
      flaky.function.run(input) { result in
        firstFailure.tick()
        complete(result)
      }
    }
    let done = Gate()
    let outcome = Locked<Result<String, any Error>?>(nil)
    let start = ContinuousClock.now
    let token = probe.retry(1, delay: .seconds(30)).run("x") { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await firstFailure.wait()
    token.cancel()
    await done.wait()
    #expect(ContinuousClock.now - start < .seconds(5))
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(flaky.count == 1)
  }

  @Test func description_reads_like_the_code() {
    let upload = AsyncFunc<Int, Int>.sync(name: "upload") { $0 }
    #expect("\(upload.retry(2))" == "upload.retry(2)")
    #expect(
      "\(upload.retry(1, delay: .seconds(1), backoff: 2))"
        == "upload.retry(1, delay: 1.0 seconds, backoff: 2.0)")
  }

  @Test func negative_retries_are_a_precondition_failure_naming_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.retry(-1)
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("retry(-1): the number of retries must not be negative"))
    #expect(message.contains("RetryTests.swift"))
  }

  @Test func a_negative_delay_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.retry(1, delay: .seconds(-1))
    }
  }

  @Test func a_backoff_below_one_or_not_finite_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.retry(1, delay: .seconds(1), backoff: 0.5)
    }
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.retry(1, delay: .seconds(1), backoff: .infinity)
    }
  }
}

/// `retry` of a single callback stage, the shape most code has: modifiers applied before the
/// retry belong to every attempt; those after it see the whole outcome once.
@Suite struct RetryOfOneCallbackStageTests {
  private typealias Flaky = RetryTests.Flaky

  @Test func a_single_callback_stage_takes_the_retry_into_its_own_completion() async throws {
    let flaky = Flaky(failures: 1)
    let retried = flaky.function.retry(2)
    #expect("\(retried)" == "flaky.retry(2)")
    #expect(try await retried("ok") == "ok")
    #expect(flaky.count == 2)
  }

  @Test func a_step_after_the_retry_sees_cancellation_when_an_attempt_fails_after_the_cancel() {
    let parked = ParkedCompletion<String>()
    let seen = Recorder<String>()
    let attempt = AsyncFunc<String, String>(name: "attempt") { _, complete in
      parked.park(complete)
    }
    let token = attempt.retry(2).tap { _, result in seen.record("\(result)") }.run("x") { _ in }
    token.cancel()
    parked.complete(.failure(TestError(1)))  // the attempt ignored the cancellation
    #expect(seen.all == ["failure(Swift.CancellationError())"])
  }

  @Test func a_recover_before_the_retry_belongs_to_each_attempt() async throws {
    let flaky = Flaky(failures: .max)
    let recovered = flaky.function.recover { _ in "recovered" }.retry(2)
    #expect(try await recovered("x") == "recovered")
    #expect(flaky.count == 1)  // The first attempt recovered: nothing to retry.
  }

  @Test func steps_after_the_retry_see_the_last_attempts_outcome_once() async throws {
    let flaky = Flaky(failures: .max)
    let seen = Recorder<String>()
    let whole = flaky.function.retry(2)
      .tap { input, result in seen.record("\(input) \((result.failure as? TestError)?.id ?? 0)") }
      .recover { ($0 as? TestError).map { "gave up after \($0.id)" } ?? "?" }
    #expect(try await whole("x") == "gave up after 3")
    #expect(flaky.count == 3)
    #expect(seen.all == ["x 3"])
  }

  @Test func a_retry_of_a_retry_multiplies_the_attempts() async {
    let flaky = Flaky(failures: .max)
    let result = await runToCompletion(flaky.function.retry(1).retry(1), "x")
    #expect(result.failure as? TestError == TestError(4))
    #expect(flaky.count == 4)
  }

  @Test func a_cleanup_after_the_retry_runs_once_when_the_attempts_are_over() async throws {
    let flaky = Flaky(failures: 2)
    let cleanups = Tally()
    let whole = flaky.function.retry(3).finally { _ in cleanups.add() }
    #expect(try await whole("ok") == "ok")
    #expect(flaky.count == 3)
    #expect(cleanups.value == 1)
  }

  @Test func a_completion_released_uncalled_is_retried_like_any_failure() async throws {
    let attempts = Tally()
    let forgetfulOnce = AsyncFunc<Int, Int>(name: "fused.retry.forgetful") { x, complete in
      attempts.add()
      if attempts.value > 1 { complete(.success(x)) }
    }
    #expect(try await forgetfulOnce.retry(1)(5) == 5)
    #expect(attempts.value == 2)
  }
}

/// What a test sees of a retry: the instants its attempts started at, and the waits it
/// announced to its observer.
final class RetryWatch: RunObserver {
  struct Wait: Equatable {
    let stage: String
    let attempt: Int
    let wait: Duration
  }

  let waits = Locked<[Wait]>([])
  /// The error each wait follows, as described.
  let errors = Locked<[String]>([])
  func observe(_ event: RunEvent) {
    guard event.kind == .retryWillWait, let attempt = event.attempt, let wait = event.wait,
      let error = event.error
    else { return }
    waits.withLock { $0.append(Wait(stage: event.subject, attempt: attempt, wait: wait)) }
    errors.withLock { $0.append("\(error)") }
  }
  var durations: [Duration] { waits.withLock { $0.map(\.wait) } }
}

/// Runs `function` on `clock` to its end, advancing the clock to each timer in turn.
func driveToEnd<Output: Sendable>(
  _ function: AsyncFunc<String, Output>, on clock: TestClock, observer: RetryWatch = RetryWatch()
) -> Result<Output, any Error>? {
  let outcome = Locked<Result<Output, any Error>?>(nil)
  function.run("x", observer: observer) { result in outcome.withLock { $0 = result } }
  while outcome.withLock({ $0 }) == nil, let next = clock.nextDeadline { clock.advance(to: next) }
  return outcome.withLock { $0 }
}

/// A function that fails `failures` times, then succeeds, recording when each attempt began.
final class TimedFlaky: Sendable {
  let clock: TestClock
  let failures: Int
  let error: @Sendable (Int) -> any Error
  let starts = Locked<[Duration]>([])

  init(
    clock: TestClock, failures: Int = .max,
    error: @escaping @Sendable (Int) -> any Error = { TestError($0) }
  ) {
    self.clock = clock
    self.failures = failures
    self.error = error
  }

  var function: AsyncFunc<String, String> {
    AsyncFunc(name: "fetch") { input, complete in
      let attempt = self.starts.withLock { starts in
        starts.append(TestClock.Instant.start.duration(to: self.clock.now))
        return starts.count
      }
      complete(attempt <= self.failures ? .failure(self.error(attempt)) : .success(input))
    }
  }

  /// The attempts' start instants, in seconds from the clock's start.
  var seconds: [Duration] { starts.withLock { $0 } }
}

@Suite struct RetryBackoffTests {
  @Test func waits_grow_by_the_backoff_from_the_delay() throws {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let result = driveToEnd(
      flaky.function.retry(5, delay: .seconds(1), backoff: 2, clock: clock), on: clock)
    #expect(try #require(result).failure as? TestError == TestError(6))
    #expect(flaky.seconds == [0, 1, 3, 7, 15, 31].map { .seconds($0) })  // waits 1, 2, 4, 8, 16
  }

  @Test func max_delay_caps_each_wait() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(5, delay: .seconds(1), backoff: 2, maxDelay: .seconds(15), clock: clock),
      on: clock, observer: watch)
    #expect(watch.durations == [1, 2, 4, 8, 15].map { .seconds($0) })
    #expect(flaky.seconds == [0, 1, 3, 7, 15, 30].map { .seconds($0) })
  }

  @Test func a_huge_backoff_saturates_instead_of_crashing() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let outcome = Locked<Result<String, any Error>?>(nil)
    let token = flaky.function.retry(3, delay: .milliseconds(1), backoff: 1e30, clock: clock)
      .run("x") { result in outcome.withLock { $0 = result } }
    clock.advance(by: .milliseconds(1))
    // The second wait, 1e27 s, is beyond what a duration holds: it saturates, at a wait that
    // never comes, so no timer is armed and the run waits until cancelled.
    #expect(RetryPolicy.longestWait >= TimerClock.horizon)
    #expect(clock.nextDeadline == nil)
    #expect(outcome.withLock { $0 } == nil)
    #expect(flaky.seconds.count == 2)
    token.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(clock.nextDeadline == nil)
  }

  @Test func a_huge_backoff_under_a_max_delay_waits_the_max_delay() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(
        3, delay: .milliseconds(1), backoff: 1e30, maxDelay: .seconds(10), clock: clock),
      on: clock, observer: watch)
    #expect(watch.durations == [.milliseconds(1), .seconds(10), .seconds(10)])
  }

  @Test func scaling_saturates_at_the_longest_wait() {
    #expect(scaled(.milliseconds(1), by: 1e30) == RetryPolicy.longestWait)
    #expect(scaled(.seconds(1), by: .infinity) == RetryPolicy.longestWait)
    #expect(scaled(.zero, by: .infinity) == .zero)
    #expect(scaled(.seconds(3), by: 0.5) == .milliseconds(1500))
  }

  @Test(.timeLimit(.minutes(1)))
  func a_huge_backoff_on_the_default_clock_does_not_crash() async {
    await hugeBackoffEndsWhenCancelled(on: ContinuousClock())
  }

  @Test(.timeLimit(.minutes(1)))
  func a_huge_backoff_on_a_clock_that_sleeps_does_not_crash() async {
    await hugeBackoffEndsWhenCancelled(on: SuspendingClock())
  }

  private func hugeBackoffEndsWhenCancelled<C: Clock>(on clock: C) async
  where C.Duration == Duration {
    let reached = Countdown(2)
    let attempts = Atomic(0)
    let failing = AsyncFunc<Int, Int> { _, complete in
      attempts.add(1, ordering: .relaxed)
      reached.tick()
      complete(.failure(TestError(1)))
    }
    let done = Gate()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let retried = failing.retry(2, delay: .milliseconds(1), backoff: 1e30, clock: clock)
    let token = retried.run(1) { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await reached.wait()  // The second attempt failed: its retry now waits "forever".
    token.cancel()
    await done.wait()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(attempts.load(ordering: .relaxed) == 2)
  }

  @Test func cancelling_a_wait_on_the_test_clock_ends_the_run_at_once_and_disarms_the_timer() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let outcome = Locked<Result<String, any Error>?>(nil)
    let token = flaky.function.retry(3, delay: .seconds(5), clock: clock).run("x") { result in
      outcome.withLock { $0 = result }
    }
    #expect(clock.nextDeadline == .start + .seconds(5))
    token.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(clock.nextDeadline == nil)
    #expect(flaky.seconds.count == 1)
  }

  struct Throttled: RetryAfterHint, Equatable {
    let retryAfter: Duration?
  }

  @Test func a_retry_after_hint_without_jitter_is_waited_exactly() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 2) { _ in Throttled(retryAfter: .seconds(7)) }
    let result = driveToEnd(
      flaky.function.retry(3, delay: .seconds(1), backoff: 2, clock: clock), on: clock)
    #expect((try? result?.get()) == "x")
    #expect(flaky.seconds == [0, 7, 14].map { .seconds($0) })
  }

  /// The waits of `retry(4, delay: 1s, maxDelay:, jitter:)` of a function that always fails
  /// with a hint of `hint`.
  private func hintedWaits(
    _ jitter: Jitter, hint: Duration = .seconds(7), maxDelay: Duration? = nil
  ) -> [Duration] {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock) { _ in Throttled(retryAfter: hint) }
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(4, delay: .seconds(1), maxDelay: maxDelay, jitter: jitter, clock: clock),
      on: clock, observer: watch)
    return watch.durations
  }

  @Test func a_jittered_hint_is_drawn_between_the_hint_and_twice_it() {
    for jitter in [Jitter.full, .equal, .decorrelated] {
      for seed in UInt64(0)..<10 {
        let waits = hintedWaits(jitter.seeded(seed))
        #expect(waits.count == 4)
        #expect(
          waits.allSatisfy { $0 >= .seconds(7) && $0 <= .seconds(14) }, "\(jitter): \(waits)")
        #expect(Set(waits).count > 1, "\(jitter).seeded(\(seed)) did not spread: \(waits)")
      }
    }
  }

  @Test func a_jittered_hint_is_never_above_max_delay() {
    for seed in UInt64(0)..<10 {
      let waits = hintedWaits(.full.seeded(seed), maxDelay: .seconds(10))
      #expect(waits.allSatisfy { $0 >= .seconds(7) && $0 <= .seconds(10) }, "\(waits)")
    }
    // A cap below the hint wins: the wait is the cap.
    #expect(
      hintedWaits(.equal.seeded(1), maxDelay: .seconds(5))
        == Array(repeating: .seconds(5), count: 4))
  }

  @Test func a_zero_or_negative_hint_is_waited_as_zero_with_any_jitter() {
    #expect(hintedWaits(.full, hint: .zero) == Array(repeating: .zero, count: 4))
    #expect(hintedWaits(.equal, hint: .seconds(-3)) == Array(repeating: .zero, count: 4))
  }

  @Test func runs_turned_away_together_by_one_hint_come_back_spread_out() {
    // 60 callers rejected at once with the same hint: their retries must not all start at
    // the same instant, and none before the hint.
    let clock = TestClock()
    let throttled = AsyncFunc<Int, Int>(name: "throttled") { _, complete in
      complete(.failure(Throttled(retryAfter: .seconds(1))))
    }
    let retried = throttled.retry(1, jitter: .full, clock: clock)
    let watches = (0..<60).map { _ in RetryWatch() }
    let ended = Tally()
    for (index, watch) in watches.enumerated() {
      retried.run(index, observer: watch) { _ in ended.add() }
    }
    while ended.value < 60, let next = clock.nextDeadline { clock.advance(to: next) }
    let waits = watches.flatMap(\.durations)
    #expect(waits.count == 60)
    #expect(waits.allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(2) })
    #expect(Set(waits).count > 50, "\(waits)")
  }

  @Test func a_retry_after_hint_is_capped_by_max_delay() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 1) { _ in Throttled(retryAfter: .seconds(7)) }
    _ = driveToEnd(
      flaky.function.retry(1, maxDelay: .seconds(5), clock: clock), on: clock)
    #expect(flaky.seconds == [0, 5].map { .seconds($0) })
  }

  @Test func a_nil_hint_falls_back_to_the_computed_wait() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 1) { _ in Throttled(retryAfter: nil) }
    _ = driveToEnd(flaky.function.retry(1, delay: .seconds(2), clock: clock), on: clock)
    #expect(flaky.seconds == [0, 2].map { .seconds($0) })
  }

  @Test func the_observer_hears_each_wait_with_the_stage_and_attempt() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 2)
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(2, delay: .seconds(1), backoff: 3, clock: clock), on: clock,
      observer: watch)
    let stage = "fetch.retry(2, delay: 1.0 seconds, backoff: 3.0)"
    #expect(
      watch.waits.withLock { $0 } == [
        RetryWatch.Wait(stage: stage, attempt: 1, wait: .seconds(1)),
        RetryWatch.Wait(stage: stage, attempt: 2, wait: .seconds(3)),
      ])
    #expect(watch.errors.withLock { $0 } == ["\(TestError(1))", "\(TestError(2))"])
  }

  @Test func the_description_reads_as_the_call() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect(
      "\(fetch.retry(3, delay: .milliseconds(100), jitter: .full))"
        == "fetch.retry(3, delay: 0.1 seconds, jitter: .full)")
    #expect(
      "\(fetch.retry(1, delay: .seconds(1), backoff: 2, maxDelay: .seconds(10)))"
        == "fetch.retry(1, delay: 1.0 seconds, backoff: 2.0, maxDelay: 10.0 seconds)")
    #expect(
      "\(fetch.retry(2, budget: RetryBudget()))"
        == "fetch.retry(2, budget: RetryBudget(tokens: 500, retryCost: 5, successRefund: 1))")
  }

  @Test func a_negative_max_delay_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.retry(1, maxDelay: .seconds(-1))
    }
  }
}
