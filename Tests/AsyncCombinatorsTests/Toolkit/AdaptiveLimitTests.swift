import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A sample of `latency` milliseconds.
private func sample(_ latency: Double, inFlight: Int, drop: Bool = false) -> AdaptiveSample {
  AdaptiveSample(latency: latency / 1000, isDrop: drop, inFlight: inFlight)
}

/// Records each move of an adaptive limit a run's observer sees.
private final class LimitLog: RunObserver {
  let changes = Locked<[String]>([])
  func observe(_ event: RunEvent) {
    guard let change = event.limitChange else { return }
    changes.withLock { $0.append("\(change.old)->\(change.new) \(change.reason)") }
  }
}

@Suite struct AdaptiveLimitTests {
  // MARK: AIMD, held to its definition

  @Test func aimd_grows_by_one_only_after_a_success_with_half_the_limit_in_use() {
    var state = AdaptiveLimitState(.aimd(initial: 10, min: 2, max: 20))
    #expect(state.record(sample(10, inFlight: 4), at: 0) == nil)
    #expect(state.limit == 10)
    #expect(
      state.record(sample(10, inFlight: 5), at: 0)
        == AdaptiveLimitChange(old: 10, new: 11, reason: .headroom))
    #expect(state.record(sample(500, inFlight: 6), at: 0)?.new == 12)  // Slow is no drop.
  }

  @Test func aimd_multiplies_by_the_backoff_on_a_drop_down_to_min() {
    var state = AdaptiveLimitState(.aimd(initial: 10, min: 2, max: 20, backoff: 0.5))
    #expect(
      state.record(sample(10, inFlight: 10, drop: true), at: 0)
        == AdaptiveLimitChange(old: 10, new: 5, reason: .drop))
    #expect(state.record(sample(10, inFlight: 5, drop: true), at: 0)?.new == 2)
    #expect(state.record(sample(10, inFlight: 2, drop: true), at: 0) == nil)
    #expect(state.limit == 2)
  }

  /// concurrency-limits #155: reaching `max` must not halve the limit.
  @Test func aimd_stays_at_max_after_successes_at_max() {
    var state = AdaptiveLimitState(.aimd(initial: 19, max: 20))
    #expect(state.record(sample(10, inFlight: 19), at: 0)?.new == 20)
    for _ in 0..<100 { #expect(state.record(sample(10, inFlight: 20), at: 0) == nil) }
    #expect(state.limit == 20)
  }

  // MARK: Vegas

  /// Feeds a first probe of the latency without load: five samples of `latency` under the
  /// pinned limit, at time 0.
  private func probe(_ state: inout AdaptiveLimitState, latency: Double, at now: Double = 0) {
    for _ in 0..<AdaptiveLimitState.probeSamples {
      _ = state.record(sample(latency, inFlight: 1), at: now)
    }
  }

  @Test func the_first_sample_pins_the_limit_low_until_the_probe_has_measured() {
    var state = AdaptiveLimitState(.vegas(initial: 20))
    #expect(
      state.record(sample(10, inFlight: 20), at: 0)
        == AdaptiveLimitChange(old: 20, new: 3, reason: .probe))
    // Samples that started above the pinned limit do not count.
    for _ in 0..<10 { #expect(state.record(sample(30, inFlight: 20), at: 0.01) == nil) }
    for _ in 0..<5 { _ = state.record(sample(10, inFlight: 3), at: 0.02) }
    #expect(state.limit == 20)
    #expect(state.noLoad == 0.01)
  }

  @Test func vegas_decides_once_per_round_trip_not_per_sample() {
    var state = AdaptiveLimitState(.vegas(initial: 20))
    probe(&state, latency: 10)
    #expect(state.limit == 20)
    // A round trip of samples with no queue: one +1 when it closes, none before.
    var changes = 0
    for step in 1...100 {
      if state.record(sample(10, inFlight: 20), at: Double(step) / 10_000) != nil { changes += 1 }
    }
    #expect(changes == 1)
    #expect(state.limit == 21)
  }

  @Test func vegas_shrinks_when_runs_queue_and_grows_only_while_half_the_limit_is_used() {
    var state = AdaptiveLimitState(.vegas(initial: 20))
    probe(&state, latency: 10)
    // 20 × (1 − 10/20) = 10 queued, over beta: down to the middle of the band, 4.5 queued.
    #expect(
      state.record(sample(20, inFlight: 20), at: 0.1)
        == AdaptiveLimitChange(old: 20, new: 14, reason: .queueing))
    // No queue, but a quarter of the limit in use: no growth.
    #expect(state.record(sample(10, inFlight: 3), at: 0.2) == nil)
    #expect(state.record(sample(10, inFlight: 7), at: 0.3)?.new == 15)
  }

  /// concurrency-limits #165: a baseline from a 1 ms health check would hold the limit at its
  /// minimum for ever; the next probe re-measures it.
  @Test func vegas_re_measures_a_baseline_set_by_a_fast_health_check() {
    var state = AdaptiveLimitState(.vegas(initial: 20))
    probe(&state, latency: 1)
    var now = 0.0
    while now < 10 {
      now += 0.01
      _ = state.record(sample(10, inFlight: state.limit), at: now)
    }
    #expect(state.limit < 10)  // Held down: every run looks queued.
    // The probe comes due: the limit is pinned, and the calls at low load take 10 ms.
    now = AdaptiveLimitState.probeInterval
    #expect(state.record(sample(10, inFlight: 1), at: now)?.reason == .probe)
    probe(&state, latency: 10, at: now)
    #expect(state.noLoad == 0.01)
    for _ in 0..<50 {
      now += 0.01
      _ = state.record(sample(10, inFlight: state.limit), at: now)
    }
    #expect(state.limit > 40)
  }

  /// concurrency-limits #125: latency that drifts up under load must not become the baseline,
  /// so the limit does not ratchet up; the probe measures under a pinned limit.
  @Test func vegas_does_not_ratchet_up_when_latency_drifts_under_load() {
    var state = AdaptiveLimitState(.vegas(initial: 20))
    probe(&state, latency: 10)
    var now = 0.0
    // The service queues: latency = 10 ms × limit / 20 for the limit in flight.
    for _ in 0..<20_000 {
      now += 0.005
      let latency = 10 * max(1, Double(state.limit) / 20)
      _ = state.record(sample(latency, inFlight: state.limit), at: now)
      #expect(state.limit <= 30)
    }
    #expect(state.noLoad == 0.01)
  }

  // MARK: Gradient

  @Test func gradient_adds_its_allowance_only_with_headroom() {
    var state = AdaptiveLimitState(.gradient(initial: 20))
    probe(&state, latency: 10)
    // 14 ms: within the tolerance (no shrinking) but not in its lower half (no allowance).
    for step in 1...50 {
      _ = state.record(sample(14, inFlight: 20), at: Double(step) / 10)
    }
    #expect(state.limit == 20)
    // At the latency without load it grows.
    for step in 51...55 {
      _ = state.record(sample(10, inFlight: 20), at: Double(step) / 10)
    }
    #expect(state.limit > 20)
    // At twice the tolerance it shrinks, by `smoothing` of the way to 20 × 0.5.
    let before = state.limit
    _ = state.record(sample(30, inFlight: 25), at: 6)
    #expect(state.limit < before)
  }

  // MARK: Through the limiter

  @Test func a_fixed_limiter_reports_its_concurrency_as_its_limit() {
    #expect(Limiter(concurrency: 7).limit == 7)
    #expect(Limiter(concurrency: 7).sampler == nil)
    #expect(Limiter(rate: .tokenBucket(5, per: .seconds(1))).limit == .max)
    let chain = Limiter(all: [Limiter(concurrency: 7), Limiter(adaptive: .vegas(initial: 4))])
    #expect(chain.limit == 4)
  }

  @Test func an_adaptive_limiter_takes_weights_up_to_its_min_and_describes_itself() {
    let limiter = Limiter(adaptive: .aimd(initial: 8, min: 3, max: 9))
    #expect(limiter.largestWeight == 3)
    #expect(limiter.limit == 8)
    #expect(
      limiter.description
        == "Limiter(adaptive: aimd(initial: 8, min: 3, max: 9, backoff: 0.9), queue: unbounded)")
  }

  @Test func an_observer_of_the_run_sees_the_limit_move_and_why() {
    let clock = TestClock()
    let limiter = Limiter(adaptive: .aimd(initial: 2, min: 1, max: 10), clock: clock)
    let fails = AsyncFunc<Int, Int>.sync(name: "call") { input in
      if input == 0 { throw TimeoutError(duration: .seconds(1)) }
      return input
    }
    .limited(by: limiter)
    let log = LimitLog()
    fails.run(1, observer: log) { _ in }
    fails.run(0, observer: log) { _ in }
    #expect(log.changes.withLock { $0 } == ["2->3 headroom", "3->2 drop"])
    #expect(limiter.limit == 2)
  }

  @Test func a_cancelled_run_is_no_sample_and_moves_nothing() {
    let clock = TestClock()
    let limiter = Limiter(adaptive: .aimd(initial: 1, min: 1, max: 10), clock: clock)
    let parking = Parking<Int, Int>()
    let limited = parking.function.limited(by: limiter)
    let sampler = limiter.sampler!
    let running = limited.run(1) { _ in }
    let waiting = limited.run(2) { _ in }
    _ = limited.run(3) { _ in }
    let first = parking.takeAll()
    #expect(first.map(\.input) == [1])
    running.cancel()
    waiting.cancel()
    #expect(sampler.machine.samples == 0)
    #expect(sampler.machine.inFlight == 1)  // Its body still runs.
    #expect(limiter.limit == 1)
    // The cancelled body calls back late: its slot is back, for run 3; still no sample.
    first[0].complete(.failure(TimeoutError(duration: .seconds(1))))
    #expect(sampler.machine.samples == 0)
    #expect(limiter.limit == 1)
    let third = parking.takeAll()
    #expect(third.map(\.input) == [3])
    #expect(sampler.machine.inFlight == 1)
    third[0].complete(.success(3))
    #expect(sampler.machine.samples == 1)
    #expect(sampler.machine.inFlight == 0)
    #expect(limiter.limit == 2)
  }
}
