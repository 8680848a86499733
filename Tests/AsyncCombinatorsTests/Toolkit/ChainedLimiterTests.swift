import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ChainedLimiterTests {
  @Test func both_limits_hold_in_every_window_over_three_minutes() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let perSecond = Limiter(rate: .tokenBucket(10, per: .seconds(1)), clock: clock)
    let perMinute = Limiter(rate: .tokenBucket(100, per: .seconds(60)), clock: clock)
    let call = starts.function.limited(by: Limiter(all: [perSecond, perMinute]))
    for input in 0..<500 { call.run(input, completion: starts.completion) }
    #expect(starts.count == 10)
    for _ in 0..<180 { clock.advance(by: .seconds(1)) }
    // The minute's 100, then one every 0.6 s for 180 s: the minute's limit binds, exactly.
    #expect(starts.count == 400)
    #expect(starts.all.last == .seconds(180))
    let times = starts.all
    for first in times.indices {
      for last in first..<times.count {
        let interval = RateBudget.attoseconds(times[last] - times[first])
        let second = RateBudget.attoseconds(.seconds(1))
        #expect(last - first + 1 <= 10 + Int(interval * 10 / second))
        #expect(last - first + 1 <= 100 + Int(interval * 100 / (60 * second)))
      }
    }
    #expect(starts.rejected == 0)
  }

  @Test func a_run_turned_away_takes_nothing_and_hints_the_longest_wait() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let perSecond = Limiter(rate: .tokenBucket(5, per: .seconds(1)), queue: .none, clock: clock)
    let perMinute = Limiter(
      rate: .tokenBucket(1, per: .seconds(60)), queue: .none, clock: clock)
    let chained = starts.function.limited(by: Limiter(all: [perSecond, perMinute]))
    chained.run(0, completion: starts.completion)
    for input in 1...4 { chained.run(input, completion: starts.completion) }
    #expect(starts.count == 1)
    #expect(starts.rejected == 4)
    #expect(starts.lastHint == .seconds(60))  // only the minute turned them away
    // The second's four permits are all still there.
    let direct = starts.function.limited(by: perSecond)
    for input in 5...9 { direct.run(input, completion: starts.completion) }
    #expect(starts.count == 5)
    #expect(starts.lastHint == .milliseconds(200))
    chained.run(10, completion: starts.completion)  // both turn it away: the longer wait
    #expect(starts.lastHint == .seconds(60))
    clock.advance(by: .seconds(60))
    chained.run(11, completion: starts.completion)
    #expect(starts.count == 6)
  }

  @Test func a_waiting_run_holds_nothing_while_it_waits() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let perSecond = Limiter(rate: .tokenBucket(5, per: .seconds(1)), clock: clock)
    let perMinute = Limiter(rate: .tokenBucket(1, per: .seconds(60)), clock: clock)
    let chained = starts.function.limited(by: Limiter(all: [perSecond, perMinute]))
    chained.run(0, completion: starts.completion)
    chained.run(1, completion: starts.completion)  // waits for the minute
    let direct = starts.function.limited(by: perSecond)
    for input in 2...5 { direct.run(input, completion: starts.completion) }
    #expect(starts.count == 5)  // the waiting run took none of the second's permits
    clock.advance(by: .seconds(60) - .nanoseconds(1))
    #expect(starts.count == 5)
    clock.advance(by: .nanoseconds(1))
    #expect(starts.count == 6)
    #expect(starts.all.last == .seconds(60))
    #expect(clock.pendingCount == 0)
  }

  @Test func a_chain_waits_for_a_concurrency_slot_and_starts_when_it_is_given_back() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let slots = Limiter(concurrency: 1)
    let rate = Limiter(rate: .tokenBucket(10, per: .seconds(1)), clock: clock)
    let chained = parking.function.limited(by: Limiter(all: [slots, rate]))
    chained.run(1) { _ in }
    chained.run(2) { _ in }
    #expect(parking.started == 1)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(parking.started == 2)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(slots.gate.counts.admitted == 0)
    #expect(rate.gate.counts.admitted == 0)
  }

  @Test func a_cancelled_waiting_run_takes_nothing_and_leaves_no_timer() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let perSecond = Limiter(rate: .tokenBucket(5, per: .seconds(1)), clock: clock)
    let perMinute = Limiter(rate: .tokenBucket(1, per: .seconds(60)), clock: clock)
    let chained = starts.function.limited(by: Limiter(all: [perSecond, perMinute]))
    chained.run(0, completion: starts.completion)
    let waiting = chained.run(1, completion: starts.completion)
    #expect(clock.pendingCount == 1)
    waiting.cancel()
    #expect(clock.pendingCount == 0)
    #expect(starts.rejected == 1)
    #expect(starts.count == 1)
  }

  @Test func a_chain_holds_a_keyed_ones_member_and_a_shared_one() {
    let clock = TestClock()
    let starts = TimedStarts(clock)
    let global = Limiter(rate: .tokenBucket(3, per: .seconds(1)), queue: .none, clock: clock)
    let perCustomer = KeyedLimiter<Int>(clock: clock) { _ in
      Limiter(
        all: [Limiter(rate: .tokenBucket(2, per: .seconds(1)), queue: .none, clock: clock), global])
    }
    let call = starts.function.limited(by: perCustomer, key: { $0 })
    for _ in 0..<3 { call.run(1, completion: starts.completion) }  // its own 2
    #expect(starts.count == 2)
    #expect(starts.lastHint == .milliseconds(500))
    for _ in 0..<2 { call.run(2, completion: starts.completion) }  // the global's last one
    #expect(starts.count == 3)
    // A third of a second, to the attosecond, rounded up.
    #expect(starts.lastHint == Duration(attoseconds: 333_333_333_333_333_334))
    #expect(perCustomer.count == 2)
    clock.advance(by: .seconds(60))
    #expect(perCustomer.count == 0)
  }

  @Test(.timeLimit(.minutes(1)))
  func chains_sharing_limiters_in_any_order_never_deadlock_nor_exceed_a_limit() {
    let (a, b) = (Limiter(concurrency: 2), Limiter(concurrency: 3))
    let inA = Atomic(0)
    let inB = Atomic(0)
    let over = Atomic(0)
    let done = Atomic(0)
    func body(holding a: Bool, _ b: Bool) -> AsyncFunc<Int, Int> {
      AsyncFunc.sync(name: "body") { input in
        if a, inA.add(1, ordering: .relaxed).newValue > 2 { over.add(1, ordering: .relaxed) }
        if b, inB.add(1, ordering: .relaxed).newValue > 3 { over.add(1, ordering: .relaxed) }
        if a { inA.subtract(1, ordering: .relaxed) }
        if b { inB.subtract(1, ordering: .relaxed) }
        return input
      }
    }
    let calls = [
      body(holding: true, true).limited(by: Limiter(all: [a, b])),
      body(holding: true, true).limited(by: Limiter(all: [b, a])),
      body(holding: true, false).limited(by: a),
      body(holding: false, true).limited(by: b),
    ]
    DispatchQueue.concurrentPerform(iterations: 8) { job in
      for n in 0..<2_000 {
        calls[(job + n) % calls.count].run(n) { _ in done.add(1, ordering: .relaxed) }
      }
    }
    #expect(done.load(ordering: .relaxed) == 16_000)
    #expect(over.load(ordering: .relaxed) == 0)
    #expect(a.gate.counts.admitted == 0 && a.gate.counts.waiting == 0)
    #expect(b.gate.counts.admitted == 0 && b.gate.counts.waiting == 0)
  }

  @Test func describes_its_limiters() {
    let chain = Limiter(all: [Limiter(concurrency: 2), Limiter(concurrency: 3, queue: .none)])
    #expect(
      "\(chain)"
        == "Limiter(all: [Limiter(concurrency: 2, queue: unbounded), Limiter(concurrency: 3, queue: none)])"
    )
    #expect(chain.gate.queueLimit == .none)
    #expect(chain.largestWeight == 2)
  }
}
