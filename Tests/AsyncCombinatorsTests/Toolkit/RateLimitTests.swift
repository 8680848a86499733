import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct RateLimitTests {
  @Test func a_token_bucket_admits_its_burst_then_one_per_refill() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(rate: .tokenBucket(60, per: .seconds(60), burst: 60), clock: clock)
    let call = starts.function.limited(by: limiter)
    for input in 0..<500 { call.run(input, completion: starts.completion) }
    #expect(starts.count == 60)
    for second in 1...440 {
      clock.advance(by: .seconds(1) - .nanoseconds(1))
      #expect(starts.count == 59 + second)
      clock.advance(by: .nanoseconds(1))
      #expect(starts.count == 60 + second)
    }
    #expect(starts.all.last == .seconds(440))
    #expect(starts.rejections.isEmpty)
    #expect(clock.pendingCount == 0)
  }

  @Test func a_cancelled_heavy_head_lets_the_light_run_behind_it_start_at_its_own_refill() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(rate: .tokenBucket(1, per: .seconds(1), burst: 5), clock: clock)
    let call = starts.function.limited(by: limiter)
    for input in 0..<5 { call.run(input, completion: starts.completion) }  // The burst.
    let heavy = starts.function.limited(by: limiter, weight: 5).run(5) { _ in }
    call.run(6, completion: starts.completion)
    #expect(starts.count == 5)
    heavy.cancel()  // The refill armed for five permits is no longer what the head needs.
    clock.advance(by: .seconds(1) - .nanoseconds(1))
    #expect(starts.count == 5)
    clock.advance(by: .nanoseconds(1))
    #expect(starts.all.last == .seconds(1))
    #expect(starts.count == 6)
    clock.advance(by: .seconds(5))  // The earlier timer fires on an empty queue: harmless.
    #expect(starts.count == 6)
    #expect(clock.pendingCount == 0)
  }

  @Test func with_no_queue_the_rest_are_rejected_at_once_with_the_refill_time() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(
      rate: .tokenBucket(60, per: .seconds(60), burst: 60), queue: .none, clock: clock)
    let call = starts.function.limited(by: limiter)
    for input in 0..<500 { call.run(input, completion: starts.completion) }
    #expect(starts.count == 60)
    let rejections = starts.rejections.compactMap { $0 as? LimitExceeded }
    #expect(rejections.count == 440)
    #expect(rejections.allSatisfy { $0.retryAfter == .seconds(1) })
    clock.advance(by: .milliseconds(250))
    call.run(0, completion: starts.completion)
    #expect((starts.rejections.last as? LimitExceeded)?.retryAfter == .milliseconds(750))
    clock.advance(by: .milliseconds(750))
    call.run(0, completion: starts.completion)
    #expect(starts.count == 61)
  }

  @Test
  func retry_waits_as_long_as_the_rejection_says() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(
      rate: .tokenBucket(60, per: .seconds(60), burst: 60), queue: .none, clock: clock)
    let call = starts.function.limited(by: limiter)
    for input in 0..<60 { call.run(input, completion: starts.completion) }
    let outcome = Recorder<String>()
    call.retry(1, delay: .milliseconds(1), clock: clock).run(60) { outcome.record("\($0)") }
    clock.advance(by: .seconds(1) - .nanoseconds(1))
    #expect(outcome.all.isEmpty)  // not after its own 1 ms: after the hint's 1 s
    clock.advance(by: .nanoseconds(1))
    #expect(outcome.all == ["success(60)"])
    #expect(starts.all.last == .seconds(1))
  }

  @Test func a_token_bucket_never_admits_more_than_burst_plus_rate_times_the_interval() {
    let seed = UInt64.random(in: 0...UInt64.max)
    var random = SplitMix64(seed: seed)
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let (permits, period, burst) = (5, Duration.seconds(2), 3)
    let limiter = Limiter(rate: .tokenBucket(permits, per: period, burst: burst), clock: clock)
    let call = starts.function.limited(by: limiter)
    for _ in 0..<200 {
      for input in 0..<Int(random.next() % 4) { call.run(input, completion: starts.completion) }
      clock.advance(by: .milliseconds(Int64(random.next() % 700)))
    }
    let times = starts.all
    for first in times.indices {
      for last in first..<times.count {
        let interval = times[last] - times[first]
        // burst + permits × interval / period, in nanoseconds to stay exact.
        let allowed =
          burst
          + Int(RateBudget.attoseconds(interval) * Int128(permits) / RateBudget.attoseconds(period))
        #expect(last - first + 1 <= allowed, "seed \(seed)")
      }
    }
  }

  @Test func a_fixed_window_starts_over_at_each_window_edge() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(rate: .fixedWindow(10, per: .seconds(1)), clock: clock)
    let call = starts.function.limited(by: limiter)
    clock.advance(by: .milliseconds(900))
    for input in 0..<25 { call.run(input, completion: starts.completion) }
    #expect(starts.count == 10)
    clock.advance(by: .milliseconds(100) - .nanoseconds(1))
    #expect(starts.count == 10)
    clock.advance(by: .nanoseconds(1))  // a new window: twice the permits within 0.1 s
    #expect(starts.count == 20)
    clock.advance(by: .seconds(1))
    #expect(starts.count == 25)
  }

  @Test func a_sliding_window_counts_the_last_segments_across_the_edge() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(rate: .slidingWindow(10, per: .seconds(1), segments: 4), clock: clock)
    let call = starts.function.limited(by: limiter)
    clock.advance(by: .milliseconds(900))  // in the fourth segment, [750, 1000) ms
    for input in 0..<25 { call.run(input, completion: starts.completion) }
    #expect(starts.count == 10)
    clock.advance(to: .start + .seconds(1))  // the window slid, but still holds those 10
    #expect(starts.count == 10)
    clock.advance(to: .start + .milliseconds(1_750) - .nanoseconds(1))
    #expect(starts.count == 10)
    clock.advance(to: .start + .milliseconds(1_750))  // their segment has left the window
    #expect(starts.count == 20)
    #expect(starts.all[10] == .milliseconds(1_750))
  }

  @Test func a_sliding_window_lets_in_as_older_segments_leave() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let limiter = Limiter(rate: .slidingWindow(4, per: .seconds(4), segments: 4), clock: clock)
    let call = starts.function.limited(by: limiter)
    call.run(0, completion: starts.completion)  // segment 0
    clock.advance(to: .start + .seconds(1))
    for input in 1...3 { call.run(input, completion: starts.completion) }  // segment 1
    call.run(4, completion: starts.completion)
    #expect(starts.count == 4)
    clock.advance(to: .start + .seconds(4))  // segment 0 leaves: one permit back
    #expect(starts.count == 5)
  }

  @Test func descriptions_read_like_the_code() {
    #expect(
      "\(RateLimit.tokenBucket(60, per: .seconds(60)))"
        == "tokenBucket(60, per: 60.0 seconds, burst: 60)")
    #expect(
      "\(Limiter(rate: .fixedWindow(5, per: .seconds(1)), queue: .none))"
        == "Limiter(rate: fixedWindow(5, per: 1.0 seconds), queue: none)")
  }
}
