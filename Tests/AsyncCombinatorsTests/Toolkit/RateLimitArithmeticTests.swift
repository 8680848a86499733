import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Counts the runs of a limited function that start and the rejections they meet.
private final class Admissions: Sendable {
  private let started = Locked(0)
  private let failures = Locked<[any Error]>([])

  var function: AsyncFunc<Int, Int> {
    AsyncFunc.sync(name: "call") { input in
      self.started.withLock { $0 += 1 }
      return input
    }
  }

  func completion(_ result: Result<Int, any Error>) {
    if case .failure(let error) = result { failures.withLock { $0.append(error) } }
  }

  var count: Int { started.withLock { $0 } }
  var lastHint: Duration?? {
    failures.withLock { $0.last.map { ($0 as? LimitExceeded)?.retryAfter } }
  }
  var rejected: Int { failures.withLock { $0.count } }
}

/// Exact permits for any rate a user can write: no product of permits, period and burst may
/// saturate or overflow.
@Suite struct RateLimitArithmeticTests {
  @Test func a_daily_quota_of_a_million_holds_a_million_permits_and_refills_exactly() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(
      rate: .tokenBucket(1_000_000, per: .seconds(86_400)), queue: .none, clock: clock)
    let call = admissions.function.limited(by: limiter, weight: 1_000)
    for input in 0..<200 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 200)
    for input in 0..<800 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 1_000)
    call.run(0, completion: admissions.completion)
    // A thousand permits at a million a day: 86.4 seconds.
    #expect(admissions.lastHint == .milliseconds(86_400))
    clock.advance(by: .milliseconds(86_400) - .nanoseconds(1))
    call.run(0, completion: admissions.completion)
    #expect(admissions.count == 1_000)
    #expect(admissions.lastHint == .nanoseconds(1))
    clock.advance(by: .nanoseconds(1))
    call.run(0, completion: admissions.completion)
    #expect(admissions.count == 1_001)
  }

  @Test func a_monthly_quota_admits_exactly_its_permits() {
    let clock = TestClock()
    let admissions = Admissions()
    let month = Duration.seconds(30 * 86_400)
    let limiter = Limiter(rate: .tokenBucket(10_000, per: month), queue: .none, clock: clock)
    let call = admissions.function.limited(by: limiter, weight: 10)
    for input in 0..<1_000 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 1_000)
    call.run(0, completion: admissions.completion)
    #expect(admissions.lastHint == .seconds(2_592))  // ten permits of ten thousand a month
    clock.advance(by: .seconds(2_592))
    call.run(0, completion: admissions.completion)
    #expect(admissions.count == 1_001)
  }

  @Test func runs_of_two_hundred_thousand_on_a_daily_quota_start_and_wait_exactly() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(rate: .tokenBucket(1_000_000, per: .seconds(86_400)), clock: clock)
    let call = admissions.function.limited(by: limiter, weight: 200_000)
    for input in 0..<7 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 5)
    // Two hundred thousand permits at a million a day: 17,280 seconds each.
    clock.advance(by: .seconds(17_280) - .nanoseconds(1))
    #expect(admissions.count == 5)
    clock.advance(by: .nanoseconds(1))
    #expect(admissions.count == 6)
    clock.advance(by: .seconds(17_280))
    #expect(admissions.count == 7)
    #expect(clock.pendingCount == 0)
  }

  @Test func permits_period_and_burst_near_their_largest_values_stay_exact() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(
      rate: .tokenBucket(.max, per: .seconds(Int64.max)), queue: .none, clock: clock)
    admissions.function.limited(by: limiter, weight: .max).run(0, completion: admissions.completion)
    let one = admissions.function.limited(by: limiter)
    one.run(0, completion: admissions.completion)
    #expect(admissions.count == 1)
    // `Int.max` permits per `Int64.max` seconds is one permit a second, exactly.
    #expect(admissions.lastHint == .seconds(1))
    clock.advance(by: .seconds(1) - Duration(secondsComponent: 0, attosecondsComponent: 1))
    one.run(0, completion: admissions.completion)
    #expect(admissions.count == 1)
    clock.advance(by: Duration(secondsComponent: 0, attosecondsComponent: 1))
    one.run(0, completion: admissions.completion)
    #expect(admissions.count == 2)

    let window = Limiter(rate: .fixedWindow(.max, per: .seconds(1)), queue: .none, clock: clock)
    admissions.function.limited(by: window, weight: .max).run(0, completion: admissions.completion)
    admissions.function.limited(by: window).run(0, completion: admissions.completion)
    #expect(admissions.count == 3)
    #expect(admissions.lastHint == .seconds(1))

    let sliding = Limiter(
      rate: .slidingWindow(.max, per: .seconds(Int64.max), segments: .max), queue: .none,
      clock: clock)
    admissions.function.limited(by: sliding, weight: .max).run(0, completion: admissions.completion)
    admissions.function.limited(by: sliding).run(0, completion: admissions.completion)
    #expect(admissions.count == 4)
    #expect(admissions.rejected == 4)
  }

  @Test func a_period_under_a_nanosecond_is_kept_to_the_attosecond() {
    let clock = TestClock()
    let admissions = Admissions()
    let period = Duration(secondsComponent: 0, attosecondsComponent: 500)
    let window = Limiter(rate: .fixedWindow(5, per: period), queue: .none, clock: clock)
    let call = admissions.function.limited(by: window)
    for input in 0..<6 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 5)
    #expect(admissions.lastHint == period)
    clock.advance(by: period)
    call.run(0, completion: admissions.completion)
    #expect(admissions.count == 6)

    // At one instant a bucket admits its burst, however short its period.
    let bucket = Limiter(rate: .tokenBucket(1, per: period, burst: 3), queue: .none, clock: clock)
    let fromBucket = admissions.function.limited(by: bucket)
    for input in 0..<4 { fromBucket.run(input, completion: admissions.completion) }
    #expect(admissions.count == 9)
    #expect(admissions.lastHint == period)
  }

  @Test func a_sliding_window_with_more_segments_than_attoseconds_spans_its_period() {
    let clock = TestClock()
    let admissions = Admissions()
    let period = Duration(secondsComponent: 0, attosecondsComponent: 10)
    let limiter = Limiter(
      rate: .slidingWindow(2, per: period, segments: 100), queue: .none, clock: clock)
    let call = admissions.function.limited(by: limiter)
    for input in 0..<3 { call.run(input, completion: admissions.completion) }
    #expect(admissions.count == 2)
    #expect(admissions.lastHint == period)
    clock.advance(by: period)
    call.run(0, completion: admissions.completion)
    #expect(admissions.count == 3)
  }

  @Test func a_rejected_run_behind_a_heavier_waiter_is_told_when_it_could_start() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(
      rate: .tokenBucket(1, per: .seconds(1), burst: 5), queue: .count(1), clock: clock)
    admissions.function.limited(by: limiter, weight: 3).run(0, completion: admissions.completion)
    // Two permits left; the head needs five: three seconds, then one more for a run of one.
    admissions.function.limited(by: limiter, weight: 5).run(1, completion: admissions.completion)
    let one = admissions.function.limited(by: limiter)
    one.run(2, completion: admissions.completion)
    #expect(admissions.lastHint == .seconds(4))
    clock.advance(by: .seconds(3))
    #expect(admissions.count == 2)
    one.run(3, completion: admissions.completion)
    clock.advance(by: .seconds(1))
    #expect(admissions.count == 3)
  }

  @Test func retry_behind_a_heavier_waiter_waits_for_the_hint() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(
      rate: .tokenBucket(1, per: .seconds(1), burst: 5), queue: .count(1), clock: clock)
    admissions.function.limited(by: limiter, weight: 3).run(0, completion: admissions.completion)
    admissions.function.limited(by: limiter, weight: 5).run(1, completion: admissions.completion)
    let tries = Tally()
    let counted = AsyncFunc<Int, Int>.sync(name: "count") { input in
      tries.add()
      return input
    }
    let outcome = Recorder<String>()
    (counted +> admissions.function.limited(by: limiter))
      .retry(5, delay: .seconds(1), clock: clock)
      .run(2) { outcome.record("\($0)") }
    #expect(tries.value == 1)  // not all six at once
    clock.advance(by: .seconds(4))
    #expect(outcome.all == ["success(2)"])
    #expect(tries.value == 2)
  }

  @Test func a_cancelled_only_waiter_takes_its_refill_timer_with_it() {
    let clock = TestClock()
    let admissions = Admissions()
    let limiter = Limiter(rate: .tokenBucket(1, per: .seconds(1)), clock: clock)
    let call = admissions.function.limited(by: limiter)
    call.run(0, completion: admissions.completion)
    let waiting = call.run(1, completion: admissions.completion)
    #expect(clock.pendingCount == 1)
    waiting.cancel()
    #expect(clock.pendingCount == 0)
    call.run(2, completion: admissions.completion)
    #expect(clock.pendingCount == 1)
    clock.advance(by: .seconds(1))
    #expect(admissions.count == 2)
    #expect(clock.pendingCount == 0)
  }

  @Test func a_cancelled_waiter_lets_its_limiter_go_at_once() {
    let clock = TestClock()
    weak var gone: Admission<LimitedRun>?
    let waiting: CancellationToken = {
      let limiter = Limiter(rate: .tokenBucket(1, per: .seconds(1)), clock: clock)
      gone = limiter.gate
      let call = AsyncFunc<Int, Int>.sync(name: "call") { $0 }.limited(by: limiter)
      call.run(0) { _ in }
      return call.run(1) { _ in }
    }()
    waiting.cancel()
    #expect(gone == nil)
  }

  @Test func a_refund_as_large_as_an_int_fills_the_budget_without_overflow() {
    let budget = RetryBudget(tokens: 10, retryCost: 5, successRefund: .max)
    #expect(budget.spend())
    budget.refund()
    #expect(budget.available == 10)
  }
}
