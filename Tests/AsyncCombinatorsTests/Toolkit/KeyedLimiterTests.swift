import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// When each run of each key started, on the test clock, and how many were rejected.
private final class KeyedStarts: Sendable {
  private let times = Locked<[Int: [Duration]]>([:])
  private let failures = Locked(0)
  let clock: TestClock

  init(_ clock: TestClock) { self.clock = clock }

  var function: AsyncFunc<Int, Int> {
    AsyncFunc.sync(name: "call") { key in
      self.times.withLock { $0[key, default: []].append(self.clock.now.sinceStart) }
      return key
    }
  }

  func completion(_ result: Result<Int, any Error>) {
    if case .failure = result { failures.withLock { $0 += 1 } }
  }

  func of(_ key: Int) -> [Duration] { times.withLock { $0[key] ?? [] } }
  var all: [Int: [Duration]] { times.withLock { $0 } }
  var rejected: Int { failures.withLock { $0 } }
}

@Suite struct KeyedLimiterTests {
  @Test func runs_of_different_keys_never_wait_on_each_other() {
    let parking = Parking<Int, Int>()
    let keyed = KeyedLimiter<Int> { _ in Limiter(concurrency: 1) }
    let call = parking.function.limited(by: keyed, key: { $0 % 10 })
    call.run(1) { _ in }
    call.run(2) { _ in }  // another key: starts although key 1 is busy
    call.run(11) { _ in }  // key 1 again: waits for its own slot
    #expect(parking.started == 2)
    let first = parking.takeAll()
    first.first { $0.input == 2 }!.complete(.success(2))
    #expect(parking.started == 2)  // key 2's slot is not key 1's
    first.first { $0.input == 1 }!.complete(.success(1))
    #expect(parking.started == 3)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(keyed.count == 2)
  }

  @Test func a_keys_runs_obey_exactly_its_own_limiter() {
    let clock = TestClock()
    let starts = KeyedStarts(clock)
    let keyed = KeyedLimiter<Int>(clock: clock) { _ in
      Limiter(rate: .tokenBucket(2, per: .seconds(1)), clock: clock)
    }
    let call = starts.function.limited(by: keyed, key: { $0 })
    for _ in 0..<5 { call.run(7, completion: starts.completion) }
    for _ in 0..<2 { call.run(8, completion: starts.completion) }
    #expect(starts.of(7) == [.zero, .zero])
    #expect(starts.of(8) == [.zero, .zero])
    clock.advance(by: .seconds(2))
    #expect(starts.of(7) == [.zero, .zero, .milliseconds(500), .seconds(1), .milliseconds(1_500)])
    #expect(clock.pendingCount == 2)  // the two keys' idle timers
  }

  @Test func a_thousand_keys_each_keep_their_rate_in_every_window() {
    let seed = UInt64.random(in: 0...UInt64.max)
    var random = SplitMix64(seed: seed)
    let clock = TestClock()
    let starts = KeyedStarts(clock)
    let keyed = KeyedLimiter<Int>(clock: clock) { _ in
      Limiter(rate: .tokenBucket(10, per: .seconds(1)), clock: clock)
    }
    let call = starts.function.limited(by: keyed, key: { $0 })
    var runs = [Int](repeating: 0, count: 1_000)
    for _ in 0..<40 {
      for _ in 0..<300 {
        let key = Int(random.next() % 1_000)
        for _ in 0..<Int(random.next() % 4) {
          runs[key] += 1
          call.run(key, completion: starts.completion)
        }
      }
      clock.advance(by: .milliseconds(Int64(random.next() % 200)))
    }
    clock.advance(by: .seconds(30))  // every run has started; no key idle for a minute yet
    #expect(keyed.count == runs.filter { $0 > 0 }.count, "seed \(seed)")
    let all = starts.all
    for key in 0..<1_000 {
      let times = all[key] ?? []
      #expect(times.count == runs[key], "seed \(seed), key \(key)")
      for first in times.indices {
        for last in first..<times.count {
          // burst + permits × interval / period, in whole attoseconds.
          let interval = RateBudget.attoseconds(times[last] - times[first])
          let allowed = 10 + Int(interval * 10 / RateBudget.attoseconds(.seconds(1)))
          #expect(last - first + 1 <= allowed, "seed \(seed), key \(key)")
        }
      }
    }
    #expect(starts.rejected == 0)
  }

  @Test func count_is_back_to_zero_once_idle_after_has_passed() {
    let clock = TestClock()
    let starts = KeyedStarts(clock)
    let keyed = KeyedLimiter<Int>(idleAfter: .seconds(30), clock: clock) { _ in
      Limiter(rate: .tokenBucket(10, per: .seconds(1)), clock: clock)
    }
    let call = starts.function.limited(by: keyed, key: { $0 })
    for key in 0..<1_000 { call.run(key, completion: starts.completion) }
    #expect(keyed.count == 1_000)
    clock.advance(by: .seconds(10))
    call.run(5, completion: starts.completion)  // key 5 is busy again: its wait starts over
    clock.advance(by: .seconds(20) - .nanoseconds(1))
    #expect(keyed.count == 1_000)
    clock.advance(by: .nanoseconds(1))
    #expect(keyed.count == 1)
    clock.advance(by: .seconds(10))
    #expect(keyed.count == 0)
    #expect(clock.pendingCount == 0)
  }

  @Test func a_key_is_kept_while_it_runs_and_while_its_bucket_is_owed() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let keyed = KeyedLimiter<Int>(idleAfter: .seconds(1), clock: clock) { _ in
      Limiter(rate: .tokenBucket(1, per: .seconds(10)), clock: clock)
    }
    let call = parking.function.limited(by: keyed, key: { $0 })
    call.run(1) { _ in }
    clock.advance(by: .seconds(5))
    #expect(keyed.count == 1)  // running
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    clock.advance(by: .seconds(5) - .nanoseconds(1))
    #expect(keyed.count == 1)  // idle for 1 s, but the permit taken at 0 is back only at 10 s
    clock.advance(by: .nanoseconds(1))
    #expect(keyed.count == 0)
    call.run(1) { _ in }  // a new limiter, full: nothing was owed
    #expect(parking.started == 2)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
  }

  @Test func keys_chained_with_a_shared_limiter_owe_it_nothing_when_let_go() {
    let clock = TestClock()
    let starts = KeyedStarts(clock)
    let global = Limiter(rate: .tokenBucket(100, per: .seconds(60)), clock: clock)
    let keyed = KeyedLimiter<Int>(idleAfter: .seconds(1), clock: clock) { _ in
      Limiter(all: [Limiter(rate: .tokenBucket(10, per: .seconds(1)), clock: clock), global])
    }
    let call = starts.function.limited(by: keyed, key: { $0 })
    for key in 0..<3 { call.run(key, completion: starts.completion) }
    #expect(keyed.count == 3)
    // Each key's own bucket is full at 0.1 s; the shared one only at 1.8 s, and it is not theirs.
    clock.advance(by: .seconds(1))
    #expect(keyed.count == 0)
    #expect(clock.pendingCount == 0)
  }

  @Test func a_keys_limiter_is_made_once_when_its_first_runs_arrive_together() {
    let made = Tally()
    let keyed = KeyedLimiter<Int> { _ in
      made.add()
      return Limiter(concurrency: 1_000)
    }
    let call = AsyncFunc<Int, Int>.sync(name: "call") { $0 }.limited(by: keyed, key: { $0 })
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      for _ in 0..<200 { call.run(42) { _ in } }
    }
    #expect(made.value == 1)
    #expect(keyed.count == 1)
  }

  @Test func describes_itself() {
    let keyed = KeyedLimiter<Int> { _ in Limiter(concurrency: 1) }
    #expect("\(keyed)" == "KeyedLimiter(idleAfter: 60.0 seconds)")
    let call = AsyncFunc<Int, Int>.sync(name: "call") { $0 }.limited(by: keyed, key: { $0 })
    #expect("\(call)" == "call.limited(by: KeyedLimiter(idleAfter: 60.0 seconds), key: { … })")
  }
}
