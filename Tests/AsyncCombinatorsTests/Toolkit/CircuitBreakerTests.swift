import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct CircuitBreakerTests {
  /// A service whose every call ends as `outcome` says, counting the calls that reach it.
  final class Service: Sendable {
    let calls = Atomic(0)
    let outcome: Locked<Result<Int, any Error>>

    init(_ outcome: Result<Int, any Error> = .failure(TestError(1))) {
      self.outcome = Locked(outcome)
    }

    var function: AsyncFunc<Int, Int> {
      AsyncFunc(name: "fetch") { _, complete in
        self.calls.add(1, ordering: .relaxed)
        complete(self.outcome.withLock { $0 })
      }
    }
    var count: Int { calls.load(ordering: .relaxed) }
    func set(_ result: Result<Int, any Error>) { outcome.withLock { $0 = result } }
  }

  /// Runs a function whose calls complete synchronously, and returns its result.
  static func call(_ function: AsyncFunc<Int, Int>) -> Result<Int, any Error> {
    let outcome = Locked<Result<Int, any Error>?>(nil)
    function.run(0) { result in outcome.withLock { $0 = result } }
    return outcome.withLock { $0 }!
  }

  static func breaker(
    _ clock: TestClock, ratio: Double = 0.5, throughput: Int = 2,
    sampling: Duration = .seconds(10),
    isFailure: @escaping @Sendable (any Error) -> Bool = {
      _ in true
    }
  ) -> CircuitBreaker {
    CircuitBreaker(
      name: "payments", failureRatio: ratio, minimumThroughput: throughput,
      samplingDuration: sampling, breakDuration: .seconds(30), isFailure: isFailure, clock: clock)
  }

  @Test func pollys_documented_case_lets_three_failing_calls_through_and_fails_seven_fast() {
    let clock = TestClock()
    let breaker = CircuitBreaker(
      failureRatio: 0.1, minimumThroughput: 3, samplingDuration: .seconds(1),
      breakDuration: .seconds(30), clock: clock)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    let results = (0..<10).map { _ in Self.call(guarded) }
    #expect(service.count == 3)
    #expect(results.prefix(3).allSatisfy { $0.failure is TestError })
    #expect(results.dropFirst(3).allSatisfy { $0.failure is BrokenCircuitError })
    #expect(breaker.state == .open)
  }

  @Test func it_opens_only_once_the_window_holds_the_minimum_throughput() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.1, throughput: 5)
    let guarded = Service().function.guarded(by: breaker)
    for _ in 0..<4 { _ = Self.call(guarded) }
    #expect(breaker.state == .closed)
    _ = Self.call(guarded)
    #expect(breaker.state == .open)
  }

  @Test func it_opens_when_the_failures_reach_the_ratio() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 4)
    let service = Service(.success(1))
    let guarded = service.function.guarded(by: breaker)
    for _ in 0..<3 { _ = Self.call(guarded) }
    service.set(.failure(TestError(1)))
    _ = Self.call(guarded)  // 1 of 4
    _ = Self.call(guarded)  // 2 of 5
    #expect(breaker.state == .closed)
    _ = Self.call(guarded)  // 3 of 6: half
    #expect(breaker.state == .open)
  }

  @Test func outcomes_older_than_the_sampling_duration_are_forgotten() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 3, sampling: .seconds(1))
    let guarded = Service().function.guarded(by: breaker)
    _ = Self.call(guarded)
    _ = Self.call(guarded)
    clock.advance(by: .seconds(1))
    _ = Self.call(guarded)  // the first two are out of the window
    #expect(breaker.state == .closed)
    clock.advance(by: .milliseconds(500))
    _ = Self.call(guarded)
    _ = Self.call(guarded)  // three in the last second
    #expect(breaker.state == .open)
  }

  @Test func cancellations_and_errors_that_are_not_failures_count_as_nothing() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 1) { ($0 as? TestError)?.id != 0 }
    let service = Service(.failure(TestError(0)))
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    service.set(.failure(CancellationError()))
    _ = Self.call(guarded)
    #expect(breaker.state == .closed)
    let parked = ParkedCompletion<Int>()
    let token = AsyncFunc<Int, Int> { _, complete in parked.park(complete) }
      .guarded(by: breaker).run(0) { _ in }
    token.cancel()
    parked.complete(.failure(TestError(1)))  // late, after the cancellation
    #expect(breaker.state == .closed)
    service.set(.failure(TestError(1)))
    _ = Self.call(guarded)
    #expect(breaker.state == .open)
  }

  @Test func an_open_breaker_fails_fast_with_the_time_left_and_calls_nothing() throws {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    clock.advance(by: .seconds(10))
    let error = try #require(Self.call(guarded).failure as? BrokenCircuitError)
    #expect(error.retryAfter == .seconds(20))
    #expect(error.breaker == "payments")
    #expect("\(error)" == "circuit breaker payments is open: retry after 20.0 seconds")
    #expect(service.count == 1)
    #expect(breaker.state == .open)
    clock.advance(by: .seconds(20))
    #expect(breaker.state == .halfOpen)
  }

  @Test func a_probe_that_succeeds_closes_the_breaker_with_a_fresh_window() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 2)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    _ = Self.call(guarded)
    clock.advance(by: .seconds(30))
    service.set(.success(1))
    #expect((try? Self.call(guarded).get()) == 1)
    #expect(breaker.state == .closed)
    service.set(.failure(TestError(2)))
    _ = Self.call(guarded)  // one failure in a fresh window: below the throughput
    #expect(breaker.state == .closed)
    #expect(service.count == 4)
  }

  @Test func a_probe_that_fails_opens_the_breaker_for_another_break() throws {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    clock.advance(by: .seconds(30))
    #expect(Self.call(guarded).failure is TestError)  // the probe
    #expect(breaker.state == .open)
    clock.advance(by: .seconds(5))
    let error = try #require(Self.call(guarded).failure as? BrokenCircuitError)
    #expect(error.retryAfter == .seconds(25))
    #expect(service.count == 2)
  }

  /// Opens `breaker` (throughput 1) and moves its clock to the end of the break.
  static func openUntilHalfOpen(_ breaker: CircuitBreaker, _ clock: TestClock) {
    _ = call(Service().function.guarded(by: breaker))
    clock.advance(by: .seconds(30))
  }

  @Test func half_open_lets_exactly_one_probe_through() throws {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    Self.openUntilHalfOpen(breaker, clock)
    let parking = Parking<Int, Int>()
    let guarded = parking.function.guarded(by: breaker)
    guarded.run(1) { _ in }
    let second = Self.call(guarded)
    #expect(parking.started == 1)
    #expect(breaker.state == .halfOpen)
    let error = try #require(second.failure as? BrokenCircuitError)
    #expect(error.retryAfter == .milliseconds(1500))  // A twentieth of the break, at first.
    #expect("\(error)" == "circuit breaker payments is half-open, probing: retry after 1.5 seconds")
    for parked in parking.takeAll() { parked.complete(.success(1)) }
    #expect(breaker.state == .closed)
  }

  @Test func while_a_probe_is_out_the_hint_is_how_long_it_has_been_out() throws {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    Self.openUntilHalfOpen(breaker, clock)
    let parking = Parking<Int, Int>()
    let guarded = parking.function.guarded(by: breaker)
    guarded.run(1) { _ in }
    func hint() throws -> Duration? {
      try #require(Self.call(guarded).failure as? BrokenCircuitError).retryAfter
    }
    #expect(try hint() == .milliseconds(1500))
    clock.advance(by: .seconds(1))
    #expect(try hint() == .milliseconds(1500))
    clock.advance(by: .seconds(3))
    #expect(try hint() == .seconds(4))
    clock.advance(by: .seconds(20))
    #expect(try hint() == .seconds(6))  // Capped: a new probe may go 30 s after this one.
    clock.advance(by: .seconds(5))
    #expect(try hint() == .seconds(1))
    #expect(parking.started == 1)
    for parked in parking.takeAll() { parked.complete(.success(1)) }
  }

  @Test func a_caller_retrying_outside_the_guard_comes_back_soon_after_the_probe_closes_it() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    Self.openUntilHalfOpen(breaker, clock)
    let parking = Parking<Int, Int>()
    let guarded = parking.function.guarded(by: breaker)
    guarded.run(1) { _ in }  // The probe.
    let outcome = Locked<Result<Int, any Error>?>(nil)
    guarded.retry(10, clock: clock).run(2) { result in outcome.withLock { $0 = result } }
    clock.advance(by: .milliseconds(1500))  // Turned away again: the probe is still out.
    #expect(parking.started == 1)
    clock.advance(by: .milliseconds(500))
    // The probe closes the breaker 2 s after it went out; the caller comes back 1 s later,
    // not a whole 30 s break after it was first turned away.
    parking.takeAll()[0].complete(.success(1))
    #expect(breaker.state == .closed)
    clock.advance(by: .seconds(1))
    #expect(parking.started == 2)
    parking.takeAll()[0].complete(.success(2))
    #expect((try? outcome.withLock { $0 }?.get()) == 2)
  }

  @Test func a_cancelled_probe_lets_a_new_probe_through_one_break_later() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    Self.openUntilHalfOpen(breaker, clock)
    let parking = Parking<Int, Int>()
    let guarded = parking.function.guarded(by: breaker)
    let probe = guarded.run(1) { _ in }
    probe.cancel()
    for parked in parking.takeAll() { parked.complete(.failure(CancellationError())) }
    #expect(breaker.state == .halfOpen)
    clock.advance(by: .seconds(29))
    #expect(Self.call(guarded).failure is BrokenCircuitError)
    clock.advance(by: .seconds(1))
    guarded.run(2) { _ in }
    #expect(parking.started == 2)
  }

  @Test func a_probe_that_never_calls_back_lets_a_new_probe_through_one_break_later() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    Self.openUntilHalfOpen(breaker, clock)
    let parking = Parking<Int, Int>()
    let guarded = parking.function.guarded(by: breaker)
    guarded.run(1) { _ in }
    clock.advance(by: .seconds(29))
    #expect(Self.call(guarded).failure is BrokenCircuitError)
    clock.advance(by: .seconds(1))
    guarded.run(2) { _ in }
    #expect(parking.started == 2)
    // The first probe calls back at last: it no longer decides anything.
    let parked = parking.takeAll()
    parked[0].complete(.failure(TestError(1)))
    #expect(breaker.state == .halfOpen)
    parked[1].complete(.success(2))
    #expect(breaker.state == .closed)
  }

  @Test func a_probe_failing_with_an_error_that_is_not_a_failure_lets_the_next_run_probe() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1) { ($0 as? TestError)?.id != 0 }
    Self.openUntilHalfOpen(breaker, clock)
    let service = Service(.failure(TestError(0)))
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    #expect(breaker.state == .halfOpen)
    service.set(.success(1))
    #expect((try? Self.call(guarded).get()) == 1)
    #expect(breaker.state == .closed)
    #expect(service.count == 2)
  }

  @Test func isolate_holds_it_open_until_reset_which_closes_it_with_a_fresh_window() throws {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 2)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)  // one failure counted
    breaker.isolate()
    #expect(breaker.state == .isolated)
    clock.advance(by: .seconds(3600))
    let error = try #require(Self.call(guarded).failure as? BrokenCircuitError)
    #expect(error.retryAfter == nil)
    #expect("\(error)" == "circuit breaker payments is isolated")
    #expect(breaker.state == .isolated)
    breaker.reset()
    #expect(breaker.state == .closed)
    _ = Self.call(guarded)  // the failure before isolating is forgotten
    #expect(breaker.state == .closed)
    #expect(service.count == 2)
  }

  @Test func an_outcome_of_a_run_admitted_before_the_breaker_last_closed_counts_as_nothing() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, ratio: 0.5, throughput: 2)
    let parked = ParkedCompletion<Int>()
    AsyncFunc<Int, Int> { _, complete in parked.park(complete) }
      .guarded(by: breaker).run(0) { _ in }  // admitted while closed, in the first window
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    _ = Self.call(guarded)
    _ = Self.call(guarded)
    #expect(breaker.state == .open)
    breaker.reset()  // closed again, with a fresh window
    parked.complete(.failure(TestError(2)))  // late: it belongs to the first window
    _ = Self.call(guarded)
    #expect(breaker.state == .closed)  // one failure in the window, not two
    _ = Self.call(guarded)
    #expect(breaker.state == .open)
  }

  @Test func a_closed_breaker_reads_its_clock_once_per_run() throws {
    let clock = CountingClock()
    let breaker = CircuitBreaker(clock: clock)
    let guarded = AsyncFunc<Int, Int>.sync { $0 }.guarded(by: breaker)
    let before = clock.reads.count.load(ordering: .relaxed)
    for _ in 0..<10 { #expect(try Self.call(guarded).get() == 0) }
    // Admitting reads nothing; counting the outcome reads it once.
    #expect(clock.reads.count.load(ordering: .relaxed) - before == 10)
  }

  @Test func one_breaker_guards_many_functions() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 2)
    let first = Service()
    let second = Service(.success(1))
    _ = Self.call(first.function.guarded(by: breaker))
    _ = Self.call(first.function.guarded(by: breaker))
    #expect(Self.call(second.function.guarded(by: breaker)).failure is BrokenCircuitError)
    #expect(second.count == 0)
  }

  @Test func many_threads_at_the_open_to_half_open_edge_admit_one_probe() {
    for _ in 0..<50 {
      let clock = TestClock()
      let breaker = Self.breaker(clock, throughput: 1)
      _ = Self.call(Service().function.guarded(by: breaker))
      let probes = Atomic(0)
      let rejected = Atomic(0)
      let guarded = AsyncFunc<Int, Int> { _, _ in probes.add(1, ordering: .relaxed) }
        .guarded(by: breaker)
      let edge = Atomic(false)
      DispatchQueue.concurrentPerform(iterations: 8) { job in
        if job == 0 {
          clock.advance(by: .seconds(30))
          edge.store(true, ordering: .releasing)
        }
        while !edge.load(ordering: .acquiring) {
          guarded.run(job) {
            if $0.failure is BrokenCircuitError { rejected.add(1, ordering: .relaxed) }
          }
        }
        for _ in 0..<20 {
          guarded.run(job) {
            if $0.failure is BrokenCircuitError { rejected.add(1, ordering: .relaxed) }
          }
        }
      }
      #expect(probes.load(ordering: .relaxed) == 1)
      #expect(rejected.load(ordering: .relaxed) >= 8 * 20 - 1)
    }
  }

  @Test func a_retry_outside_the_guard_waits_the_time_the_breaker_gives() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    let service = Service()
    let whole = service.function.guarded(by: breaker).retry(2, delay: .seconds(1), clock: clock)
    let outcome = Locked<Result<Int, any Error>?>(nil)
    whole.run(0) { result in outcome.withLock { $0 = result } }
    // Attempt 1 failed and opened it; attempt 2, 1 s later, is turned away with 29 s left.
    clock.advance(by: .seconds(1))
    #expect(clock.nextDeadline == .start + .seconds(30))
    service.set(.success(5))
    clock.advance(by: .seconds(29))
    #expect((try? outcome.withLock { $0 }?.get()) == 5)
    #expect(service.count == 2)
  }

  final class Watch: RunObserver {
    let events = Recorder<String>()
    func observe(_ event: RunEvent) {
      if let (old, new) = event.breakerChange { events.record("\(old) -> \(new)") }
      if event.kind == .runRejected, let error = event.error as? BrokenCircuitError {
        events.record("rejected \(error.retryAfter ?? .zero)")
      }
    }
  }

  @Test func an_observer_sees_state_changes_and_rejections() {
    let clock = TestClock()
    let breaker = Self.breaker(clock, throughput: 1)
    let service = Service()
    let guarded = service.function.guarded(by: breaker)
    let watch = Watch()
    for step in 0..<4 {
      if step == 2 { clock.advance(by: .seconds(30)) }
      if step == 3 { service.set(.success(1)) }
      if step == 3 { clock.advance(by: .seconds(30)) }
      guarded.run(0, observer: watch) { _ in }
    }
    #expect(
      watch.events.all == [
        "closed -> open", "rejected 30.0 seconds", "open -> halfOpen", "halfOpen -> open",
        "open -> halfOpen", "halfOpen -> closed",
      ])
  }

  @Test func descriptions_read_as_the_code() {
    let breaker = CircuitBreaker(name: "payments")
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect("\(fetch.guarded(by: breaker))" == "fetch.guarded(by: payments)")
    #expect("\(breaker)" == "CircuitBreaker(payments, closed)")
    #expect("\(CircuitBreaker())" == "CircuitBreaker(closed)")
  }
}

/// The continuous clock, counting how often it is read.
struct CountingClock: Clock {
  final class Reads: Sendable {
    let count = Atomic(0)
  }

  let reads = Reads()

  var now: ContinuousClock.Instant {
    reads.count.add(1, ordering: .relaxed)
    return ContinuousClock.now
  }
  var minimumResolution: Duration { ContinuousClock().minimumResolution }

  func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
    try await ContinuousClock().sleep(until: deadline, tolerance: tolerance)
  }
}
