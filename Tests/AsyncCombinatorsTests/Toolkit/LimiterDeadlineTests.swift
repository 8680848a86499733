import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct LimiterDeadlineTests {
  @Test func a_rate_limited_run_whose_permit_comes_at_or_after_the_deadline_fails_at_once() throws {
    let clock = TestClock()
    let limiter = Limiter(rate: .tokenBucket(1, per: .milliseconds(100)), clock: clock)
    let parking = Parking<Int, Int>()
    let limited = parking.function.limited(by: limiter)
    limited.run(1) { _ in }  // Takes the one permit; the next comes at 100 ms.
    let early = Locked<Result<Int, any Error>?>(nil)
    limited.timeout(.milliseconds(100), clock: clock).run(2) { result in
      early.withLock { $0 = result }
    }
    let rejected = early.withLock { $0 }?.failure as? LimitExceeded
    #expect(rejected?.retryAfter == .milliseconds(100))
    #expect(clock.pendingCount == 0)  // Neither queued nor timed.
    // With time to spare, a run queues for its permit as before.
    let late = Locked<Result<Int, any Error>?>(nil)
    limited.timeout(.milliseconds(150), clock: clock).run(3) { result in
      late.withLock { $0 = result }
    }
    #expect(late.withLock { $0 } == nil)
    clock.advance(by: .milliseconds(100))
    #expect(parking.started == 2)
    for body in parking.takeAll() { body.complete(.success(0)) }
    #expect(try late.withLock { $0 }?.get() == 0)
  }

  @Test func a_run_waiting_in_a_limiter_queue_leaves_at_the_deadline() {
    let clock = TestClock()
    let limiter = Limiter(concurrency: 1)
    let parking = Parking<Int, Int>()
    let limited = parking.function.limited(by: limiter)
    limited.run(1) { _ in }
    let waiting = Locked<Result<Int, any Error>?>(nil)
    limited.timeout(.milliseconds(50), clock: clock).run(2) { result in
      waiting.withLock { $0 = result }
    }
    #expect(limiter.gate.queuedEntries == 1)
    clock.advance(by: .milliseconds(50))
    #expect(waiting.withLock { $0 }?.failure is TimeoutError)
    #expect(limiter.gate.queuedEntries == 0)
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success(1))
  }
}
