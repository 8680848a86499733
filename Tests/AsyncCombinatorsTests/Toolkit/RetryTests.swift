import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

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

  @Test func an_attempt_that_fails_after_the_cancellation_ends_the_run_with_cancellation() {
    // The run was stopped: the failure it would have retried (or ended with) is not its outcome.
    let policy = RetryPolicy(times: 3, delay: .seconds(1), backoff: 1, shouldRetry: { _ in true })
    let failed = Result<Int, any Error>.failure(TestError(1))
    for attempt in [1, 4] {
      guard
        case .finish(let result) = policy.step(after: failed, attempt: attempt, isCancelled: true)
      else {
        Issue.record("attempt \(attempt) of a cancelled run was retried")
        continue
      }
      #expect(result.failure is CancellationError, "attempt \(attempt)")
    }
    guard case .retry(after: let wait) = policy.step(after: failed, attempt: 1, isCancelled: false)
    else {
      Issue.record("a live run's first failure was not retried")
      return
    }
    #expect(wait == .seconds(1))
    guard case .finish(let last) = policy.step(after: failed, attempt: 4, isCancelled: false)
    else {
      Issue.record("a live run's last failure was retried")
      return
    }
    #expect(last.failure as? TestError == TestError(1))
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
    #expect(policy.delay(before: 1) == .milliseconds(100))
    #expect(policy.delay(before: 2) == .milliseconds(300))
    #expect(policy.delay(before: 3) == .milliseconds(900))
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
