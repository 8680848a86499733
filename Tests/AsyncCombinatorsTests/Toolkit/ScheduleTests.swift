import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The first `count` waits of one run of `schedule` (fewer if it ends), each asked `elapsed`
/// after the first try (the sum of the waits before, unless given).
func waits(
  of schedule: Schedule, count: Int, elapsed: ((Int, Duration) -> Duration)? = nil
) -> [Duration] {
  var run = ScheduleRun(schedule, draws: ScheduleDraws(schedule))
  var result: [Duration] = []
  var total = Duration.zero
  while result.count < count,
    let wait = run.next(elapsed: elapsed?(result.count, total) ?? total)
  {
    result.append(wait)
    total = saturatingSum(total, wait)
  }
  return result
}

private func ms(_ values: Int...) -> [Duration] { values.map { .milliseconds($0) } }

@Suite struct ScheduleTests {
  @Test func exponential_waits_the_base_first_then_multiplies() {
    #expect(waits(of: .exponential(.milliseconds(100)), count: 3) == ms(100, 200, 400))
    #expect(waits(of: .exponential(.milliseconds(10), factor: 3), count: 3) == ms(10, 30, 90))
  }

  @Test func fibonacci_adds_the_two_waits_before() {
    #expect(waits(of: .fibonacci(.milliseconds(10)), count: 5) == ms(10, 10, 20, 30, 50))
  }

  @Test func spaced_waits_the_interval_for_ever() {
    #expect(
      waits(of: .spaced(.milliseconds(50)), count: 1000)
        == Array(repeating: .milliseconds(50), count: 1000))
  }

  @Test func recurs_gives_its_count_of_zero_waits_then_ends() {
    #expect(waits(of: .recurs(3), count: 10) == [.zero, .zero, .zero])
    #expect(waits(of: .recurs(0), count: 10) == [])
  }

  @Test func union_waits_the_shorter_while_either_goes_on() {
    let either = Schedule.exponential(.milliseconds(100)).union(.spaced(.milliseconds(250)))
    #expect(waits(of: either, count: 4) == ms(100, 200, 250, 250))
    let longer = Schedule.recurs(2).union(.spaced(.milliseconds(5)))
    #expect(waits(of: longer, count: 4) == ms(0, 0, 5, 5))  // goes on after recurs ended
    let endedInside = Schedule.recurs(1).upTo(.seconds(9)).union(.recurs(3).capped(at: .zero))
    #expect(waits(of: endedInside, count: 9) == ms(0, 0, 0))
  }

  @Test func intersection_waits_the_longer_while_both_go_on() {
    let both = Schedule.spaced(.milliseconds(50)).intersection(.recurs(3))
    #expect(waits(of: both, count: 10) == ms(50, 50, 50))
    let longer = Schedule.exponential(.milliseconds(100)).intersection(.spaced(.milliseconds(250)))
    #expect(waits(of: longer, count: 3) == ms(250, 250, 400))
  }

  @Test func and_then_gives_the_first_schedules_waits_then_the_seconds() {
    let then = Schedule.recurs(2).andThen(.spaced(.seconds(1)))
    #expect(waits(of: then, count: 4) == [.zero, .zero, .seconds(1), .seconds(1)])
    let ends = Schedule.recurs(1).andThen(.recurs(1))
    #expect(waits(of: ends, count: 5) == [.zero, .zero])
  }

  @Test func capped_exponential_never_overflows() {
    let capped = Schedule.exponential(.seconds(1)).capped(at: .seconds(5))
    let all = waits(of: capped, count: 10_000)
    #expect(all.count == 10_000)
    #expect(Array(all.prefix(4)) == [1, 2, 4, 5].map { .seconds($0) })
    #expect(all.last == .seconds(5))
    let uncapped = waits(of: .exponential(.seconds(1)), count: 200)
    #expect(uncapped.last == RetryPolicy.longestWait)  // saturates
    #expect(waits(of: .fibonacci(.seconds(1)), count: 500).last == RetryPolicy.longestWait)
  }

  @Test func up_to_begins_no_wait_that_would_end_past_the_limit() {
    // Each try takes 0.25 s: the waits are asked at 0.25, 1.5 and 2.75 s.
    let limited = Schedule.spaced(.seconds(1)).upTo(.seconds(3))
    let asked = waits(of: limited, count: 10) { tries, _ in .milliseconds(1250 * tries + 250) }
    #expect(asked == [.seconds(1), .seconds(1)])  // the third would end at 3.75 s
    let exact = waits(of: .spaced(.seconds(1)).upTo(.seconds(3)), count: 10)
    #expect(exact.count == 3)  // the third ends at 3 s exactly: allowed
  }

  @Test func up_to_after_and_then_measures_from_the_hand_over() {
    let then = Schedule.recurs(2).andThen(.spaced(.seconds(1)).upTo(.seconds(2)))
    let asked = waits(of: then, count: 10) { tries, _ in .seconds(10 * tries) }
    // The hand-over comes at 20 s; each later wait is asked 10 s on, past the 2 s allowed.
    #expect(asked == [.zero, .zero, .seconds(1)])
  }

  @Test func a_floor_raises_every_wait_above_a_cap_and_up_to_judges_the_raised_wait() {
    let schedule = Schedule.spaced(.seconds(1)).capped(at: .milliseconds(500)).upTo(.seconds(10))
    var run = ScheduleRun(schedule, draws: ScheduleDraws(schedule))
    #expect(run.next(elapsed: .zero, floor: .seconds(7)) == .seconds(7))
    #expect(run.next(elapsed: .zero) == .milliseconds(500))
    #expect(run.next(elapsed: .seconds(7), floor: .seconds(4)) == nil)  // would end at 11 s
  }

  @Test func jittered_waits_stay_in_their_ranges_and_replay_from_a_seed() {
    let base = Schedule.spaced(.seconds(1))
    let full = waits(of: base.jittered(.full.seeded(3)), count: 50)
    #expect(full.allSatisfy { $0 >= .zero && $0 <= .seconds(1) })
    #expect(full == waits(of: base.jittered(.full.seeded(3)), count: 50))
    #expect(Set(full).count > 1)
    let equal = waits(of: base.jittered(.equal.seeded(3)), count: 50)
    #expect(equal.allSatisfy { $0 >= .milliseconds(500) && $0 <= .seconds(1) })
    let decorrelated = waits(of: base.jittered(.decorrelated.seeded(3)), count: 50)
    var previous = Duration.seconds(1)
    for wait in decorrelated {
      #expect(wait >= .seconds(1) && wait <= previous * 3)
      previous = wait
    }
  }

  @Test func descriptions_read_as_the_call() {
    #expect(
      "\(Schedule.exponential(.milliseconds(100)).capped(at: .seconds(2)).upTo(.seconds(30)))"
        == "Schedule.exponential(0.1 seconds).capped(at: 2.0 seconds).upTo(30.0 seconds)")
    #expect(
      "\(Schedule.fibonacci(.seconds(1)).union(.spaced(.seconds(3))).jittered(.full))"
        == "Schedule.fibonacci(1.0 seconds).union(Schedule.spaced(3.0 seconds)).jittered(.full)")
    #expect(
      "\(Schedule.recurs(2).andThen(.exponential(.seconds(1), factor: 1.5)).intersection(.recurs(9)))"
        == "Schedule.recurs(2).andThen(Schedule.exponential(1.0 seconds, factor: 1.5))"
        + ".intersection(Schedule.recurs(9))")
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect(
      "\(fetch.retry(.spaced(.seconds(1)), budget: RetryBudget()))"
        == "fetch.retry(Schedule.spaced(1.0 seconds), budget: RetryBudget(tokens: 500, "
        + "retryCost: 5, successRefund: 1))")
    #expect(
      "\(fetch.repeating(.recurs(3), until: { $0 > 1 }))" == "fetch.repeating(Schedule.recurs(3))")
  }

  @Test func bad_arguments_stop_the_program_with_a_message() async {
    await #expect(processExitsWith: .failure) { _ = Schedule.exponential(.seconds(-1)) }
    await #expect(processExitsWith: .failure) {
      _ = Schedule.exponential(.seconds(1), factor: .nan)
    }
    await #expect(processExitsWith: .failure) {
      _ = Schedule.exponential(.seconds(1), factor: 0.5)
    }
    await #expect(processExitsWith: .failure) { _ = Schedule.recurs(-1) }
    await #expect(processExitsWith: .failure) { _ = Schedule.spaced(.zero).upTo(.seconds(-1)) }
    await #expect(processExitsWith: .failure) {
      _ = Schedule.spaced(.zero).capped(at: .seconds(-1))
    }
  }
}

@Suite struct ScheduledRetryTests {
  @Test func retry_makes_one_attempt_then_one_after_each_wait_and_fails_with_the_last_error()
    throws
  {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let schedule = Schedule.exponential(.milliseconds(100)).intersection(.recurs(3))
    let result = driveToEnd(flaky.function.retry(schedule, clock: clock), on: clock)
    #expect(try #require(result).failure as? TestError == TestError(4))
    #expect(flaky.seconds == ms(0, 100, 300, 700))
  }

  @Test func retry_stops_at_the_first_success() throws {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 2)
    let result = driveToEnd(
      flaky.function.retry(.fibonacci(.milliseconds(10)), clock: clock), on: clock)
    #expect(try #require(result).get() == "x")
    #expect(flaky.seconds == ms(0, 10, 20))
  }

  @Test func the_waits_land_on_exact_instants_and_not_before() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let retried = flaky.function.retry(.recurs(2).andThen(.spaced(.seconds(1))), clock: clock)
    let token = retried.run("x") { _ in }
    #expect(flaky.seconds == [.zero, .zero, .zero])  // two zero waits: at once
    clock.advance(by: .milliseconds(999))
    #expect(flaky.seconds.count == 3)
    clock.advance(by: .milliseconds(1))
    #expect(flaky.seconds == [.zero, .zero, .zero, .seconds(1)])
    token.cancel()
  }

  @Test func a_hint_raises_the_wait_above_the_cap_without_spending_an_attempt() throws {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock) { _ in RetryBackoffTests.Throttled(retryAfter: .seconds(7))
    }
    let schedule = Schedule.spaced(.seconds(1)).capped(at: .seconds(2)).intersection(.recurs(2))
    let result = driveToEnd(flaky.function.retry(schedule, clock: clock), on: clock)
    #expect(flaky.seconds == [0, 7, 14].map { .seconds($0) })  // three attempts, as unhinted
    #expect(try #require(result).failure is RetryBackoffTests.Throttled)
  }

  @Test func a_hint_shorter_than_the_schedules_wait_changes_nothing() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 1) { _ in
      RetryBackoffTests.Throttled(retryAfter: .seconds(1))
    }
    _ = driveToEnd(flaky.function.retry(.spaced(.seconds(3)), clock: clock), on: clock)
    #expect(flaky.seconds == [0, 3].map { .seconds($0) })
  }

  @Test func a_hint_past_up_to_ends_the_retries() throws {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock) { _ in RetryBackoffTests.Throttled(retryAfter: .seconds(7))
    }
    let result = driveToEnd(
      flaky.function.retry(.spaced(.seconds(1)).upTo(.seconds(10)), clock: clock), on: clock)
    #expect(flaky.seconds == [0, 7].map { .seconds($0) })  // a third would start at 14 s
    #expect(try #require(result).failure is RetryBackoffTests.Throttled)
  }

  @Test func up_to_counts_the_attempts_time_on_the_clock() throws {
    let clock = TestClock()
    let starts = Locked<[Duration]>([])
    // Each attempt fails 0.5 s after it starts.
    let slow = AsyncFunc<String, String>(name: "slow") { _, complete in
      starts.withLock { $0.append(TestClock.Instant.start.duration(to: clock.now)) }
      _ = clock.scheduleTimer(at: clock.now + .milliseconds(500)) {
        complete(.failure(TestError(1)))
      }
    }
    let result = driveToEnd(
      slow.retry(.spaced(.seconds(1)).upTo(.seconds(4)), clock: clock), on: clock)
    // Waits asked at 0.5, 2 and 3.5 s: the third would end at 4.5 s.
    #expect(starts.withLock { $0 } == ms(0, 1500, 3000))
    #expect(try #require(result).failure as? TestError == TestError(1))
  }

  @Test func retry_never_retries_cancellation() async {
    let attempts = Atomic(0)
    let selfCancelling = AsyncFunc<Int, Int> { _, complete in
      attempts.add(1, ordering: .relaxed)
      complete(.failure(CancellationError()))
    }
    let result = await runToCompletion(selfCancelling.retry(.recurs(3)), 1)
    #expect(result.failure is CancellationError)
    #expect(attempts.load(ordering: .relaxed) == 1)
  }

  @Test func retry_asks_should_retry_and_the_budget() async {
    let declined = RetryTests.Flaky(failures: .max)
    let onlyFirst = declined.function.retry(.recurs(5), if: { ($0 as? TestError)?.id == 1 })
    #expect(await runToCompletion(onlyFirst, "x").failure as? TestError == TestError(2))
    let unpaid = RetryTests.Flaky(failures: .max)
    let budget = RetryBudget(tokens: 10, retryCost: 5, successRefund: 1)
    let result = await runToCompletion(unpaid.function.retry(.recurs(5), budget: budget), "x")
    #expect(result.failure as? TestError == TestError(3))  // two retries paid for
    #expect(unpaid.count == 3)
  }

  @Test func synchronous_failures_retry_in_a_loop_not_a_recursion() async {
    let flaky = RetryTests.Flaky(failures: .max)
    _ = await runToCompletion(flaky.function.retry(.recurs(100_000)), "x")
    #expect(flaky.count == 100_001)
  }

  @Test func cancelling_during_a_wait_ends_the_run_at_once_and_disarms_the_timer() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let outcome = Locked<Result<String, any Error>?>(nil)
    let token = flaky.function.retry(.spaced(.seconds(5)), clock: clock).run("x") { result in
      outcome.withLock { $0 = result }
    }
    #expect(clock.nextDeadline == .start + .seconds(5))
    token.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(clock.nextDeadline == nil)
  }

  @Test func the_observer_hears_each_wait() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 2)
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(.exponential(.seconds(1)), clock: clock), on: clock, observer: watch)
    let stage = "fetch.retry(Schedule.exponential(1.0 seconds))"
    #expect(
      watch.waits.withLock { $0 } == [
        RetryWatch.Wait(stage: stage, attempt: 1, wait: .seconds(1)),
        RetryWatch.Wait(stage: stage, attempt: 2, wait: .seconds(2)),
      ])
  }

  @Test func each_run_starts_the_schedule_afresh() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let retried = flaky.function.retry(
      .exponential(.seconds(1)).intersection(.recurs(2)), clock: clock)
    _ = driveToEnd(retried, on: clock)
    _ = driveToEnd(retried, on: clock)
    #expect(flaky.seconds == [0, 1, 3, 3, 4, 6].map { .seconds($0) })
  }

  /// The counted retry's waits equal those of the schedule its documentation names.
  @Test func the_counted_retry_waits_as_its_schedule_does() {
    for jitter in [Jitter.none, .full.seeded(11), .equal.seeded(12)] {
      let counted = retryWaits { flaky, clock in
        flaky.retry(
          6, delay: .milliseconds(100), backoff: 3, maxDelay: .seconds(2), jitter: jitter,
          clock: clock)
      }
      let scheduled = retryWaits { flaky, clock in
        flaky.retry(
          .exponential(.milliseconds(100), factor: 3).capped(at: .seconds(2)).jittered(jitter)
            .intersection(.recurs(6)), clock: clock)
      }
      #expect(counted.count == 6)
      #expect(counted == scheduled, "\(jitter)")
    }
  }

  private func retryWaits(
    _ make: (AsyncFunc<String, String>, TestClock) -> AsyncFunc<String, String>
  ) -> [Duration] {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let watch = RetryWatch()
    _ = driveToEnd(make(flaky.function, clock), on: clock, observer: watch)
    return watch.durations
  }
}

@Suite struct RepeatingTests {
  /// A job's status: done from poll `doneAt` (from 1), each poll recorded with its instant.
  final class Job: Sendable {
    let clock: TestClock
    let doneAt: Int
    let polls = Locked<[Duration]>([])
    init(clock: TestClock, doneAt: Int = .max) {
      self.clock = clock
      self.doneAt = doneAt
    }

    var status: AsyncFunc<String, Int> {
      AsyncFunc(name: "status") { _, complete in
        let poll = self.polls.withLock { polls in
          polls.append(TestClock.Instant.start.duration(to: self.clock.now))
          return polls.count
        }
        complete(.success(poll))
      }
    }
  }

  @Test func polls_each_second_and_ends_at_the_first_done_status() throws {
    let clock = TestClock()
    let job = Job(clock: clock, doneAt: 5)
    let polling = job.status.repeating(
      .spaced(.seconds(1)).upTo(.seconds(60)), until: { $0 >= job.doneAt }, clock: clock)
    let result = driveToEnd(polling, on: clock)
    #expect(try #require(result).get() == 5)
    #expect(job.polls.withLock { $0 } == (0..<5).map { .seconds($0) })
  }

  @Test func ends_with_the_last_status_when_the_time_is_spent() throws {
    let clock = TestClock()
    let job = Job(clock: clock)
    let polling = job.status.repeating(
      .spaced(.seconds(1)).upTo(.seconds(60)), until: { _ in false }, clock: clock)
    let result = driveToEnd(polling, on: clock)
    #expect(try #require(result).get() == 61)  // polls at 0, 1, …, 60 s
    #expect(job.polls.withLock { $0.last } == .seconds(60))
    #expect(clock.now == .start + .seconds(60))
  }

  @Test func a_done_first_output_runs_once() throws {
    let clock = TestClock()
    let job = Job(clock: clock, doneAt: 1)
    let result = driveToEnd(
      job.status.repeating(.spaced(.seconds(1)), until: { $0 >= 1 }, clock: clock), on: clock)
    #expect(try #require(result).get() == 1)
    #expect(job.polls.withLock { $0 } == [.zero])
  }

  @Test func a_failure_ends_it_with_that_error() async {
    let polls = Atomic(0)
    let failing = AsyncFunc<Int, Int> { _, complete in
      let poll = polls.add(1, ordering: .relaxed).newValue
      complete(poll == 3 ? .failure(TestError(poll)) : .success(poll))
    }
    let result = await runToCompletion(failing.repeating(.recurs(10), until: { _ in false }), 0)
    #expect(result.failure as? TestError == TestError(3))
    #expect(polls.load(ordering: .relaxed) == 3)
  }

  @Test func synchronous_outputs_repeat_in_a_loop_not_a_recursion() async throws {
    let polls = Atomic(0)
    let counting = AsyncFunc<Int, Int>.sync { _ in polls.add(1, ordering: .relaxed).newValue }
    let result = try await counting.repeating(.recurs(100_000), until: { _ in false })(0)
    #expect(result == 100_001)
  }

  @Test func cancelling_the_run_cancels_the_wait_at_once() {
    let clock = TestClock()
    let job = Job(clock: clock)
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = job.status.repeating(.spaced(.seconds(1)), until: { _ in false }, clock: clock)
      .run("x") { result in outcome.withLock { $0 = result } }
    clock.advance(by: .seconds(2))
    #expect(job.polls.withLock { $0.count } == 3)
    token.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(clock.nextDeadline == nil)
  }
}

@Suite struct ScheduleLeakTests {
  @Test func finished_scheduled_runs_release_their_completion() async {
    let failing = AsyncFunc<Int, Int> { _, complete in
      DispatchQueue.global().async { complete(.failure(TestError(1))) }
    }
    let retried = failing.retry(.spaced(.milliseconds(1)).intersection(.recurs(2)))
    #expect(await ToolkitLeakTests.leaksCompletion(retried, 1) == false)
    let polled = ToolkitLeakTests.hop.repeating(
      .spaced(.milliseconds(1)).upTo(.seconds(5)).intersection(.recurs(2)), until: { _ in false })
    #expect(await ToolkitLeakTests.leaksCompletion(polled, 1) == false)
  }
}
