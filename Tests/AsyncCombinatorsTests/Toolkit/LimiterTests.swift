import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Outcomes of runs, by input, recorded by their completions.
private final class Outcomes: Sendable {
  private let results = Locked<[Int: Result<Int, any Error>]>([:])

  func record(_ input: Int) -> @Sendable (Result<Int, any Error>) -> Void {
    { result in self.results.withLock { $0[input] = result } }
  }

  subscript(input: Int) -> Result<Int, any Error>? { results.withLock { $0[input] } }
  var count: Int { results.withLock { $0.count } }
}

@Suite struct LimiterTests {
  @Test func functions_sharing_a_limiter_share_its_concurrency_in_arrival_order() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 2)
    let search = parking.function.limited(by: limiter)
    let lookup = parking.function.limited(by: limiter)
    for input in 0..<6 { (input.isMultiple(of: 2) ? search : lookup).run(input) { _ in } }
    var order: [Int] = []
    var running = parking.takeAll()
    while !running.isEmpty {
      #expect(running.count == min(2, 6 - order.count))
      let next = running.removeFirst()
      order.append(next.input)
      next.complete(.success(0))
      running += parking.takeAll()
    }
    #expect(order == Array(0..<6))
  }

  /// Go's `TestLargeAcquireDoesntStarve`: small holders that keep giving back and taking again
  /// a slot never starve a run that needs every slot.
  @Test func a_large_weight_is_not_starved_by_small_ones_that_keep_coming_back() {
    let n = 4
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: n)
    let small = parking.function.limited(by: limiter)
    let large = parking.function.limited(by: limiter, weight: n)
    let cycling = Atomic(true)
    @Sendable func cycle(_ input: Int) {
      small.run(input) { _ in if cycling.load(ordering: .relaxed) { cycle(input) } }
    }
    for input in 0..<n { cycle(input) }
    #expect(parking.started == n)
    let outcomes = Outcomes()
    large.run(100, completion: outcomes.record(100))
    // Each small holder gives its slot back and asks again: it must wait behind the large run.
    for run in parking.takeAll() {
      run.complete(.success(run.input))
      #expect(parking.started == n || run.input == n - 1)
    }
    let admitted = parking.takeAll()
    #expect(admitted.map(\.input) == [100])  // Alone: the small ones wait behind it.
    cycling.store(false, ordering: .relaxed)
    admitted[0].complete(.success(100))
    #expect((try? outcomes[100]?.get()) == 100)
    let again = parking.takeAll()
    #expect(again.map(\.input).sorted() == Array(0..<n))
    for run in again { run.complete(.success(run.input)) }
  }

  /// Go's `TestAllocCancelDoesntStarve`: a cancelled large waiter at the head lets in the
  /// small run behind it.
  @Test func cancelling_a_blocked_large_waiter_admits_the_small_ones_behind_it() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 10)
    let small = parking.function.limited(by: limiter)
    let large = parking.function.limited(by: limiter, weight: 10)
    let outcomes = Outcomes()
    small.run(1, completion: outcomes.record(1))  // holds 1 of 10
    let blocked = large.run(10, completion: outcomes.record(10))
    small.run(2, completion: outcomes.record(2))
    #expect(parking.started == 1)  // 9 are free, but the large run at the head comes first
    blocked.cancel()
    #expect(outcomes[10]?.failure is CancellationError)
    #expect(parking.started == 2)  // at once, on the cancelling thread
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(outcomes.count == 3)
  }

  @Test func a_large_weight_starts_once_enough_is_given_back() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 3)
    let small = parking.function.limited(by: limiter)
    let large = parking.function.limited(by: limiter, weight: 2)
    small.run(1) { _ in }
    small.run(2) { _ in }
    large.run(3) { _ in }
    let first = parking.takeAll()
    #expect(first.map(\.input) == [1, 2])
    first[0].complete(.success(1))
    #expect(parking.takeAll().map(\.input) == [3])
    first[1].complete(.success(2))
  }

  @Test func none_rejects_at_once_and_starts_nothing() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1, queue: .none)
    let limited = parking.function.limited(by: limiter)
    let outcomes = Outcomes()
    limited.run(1, completion: outcomes.record(1))
    limited.run(2, completion: outcomes.record(2))
    let rejection = outcomes[2]?.failure as? LimitExceeded
    #expect(rejection != nil)
    #expect(rejection?.retryAfter == nil)
    #expect(parking.started == 1)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    limited.run(3, completion: outcomes.record(3))  // the slot is free again
    #expect(parking.started == 2)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
  }

  @Test func count_rejects_the_waiter_past_the_count() {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limited(by: Limiter(concurrency: 1, queue: .count(2)))
    let outcomes = Outcomes()
    for input in 1...4 { limited.run(input, completion: outcomes.record(input)) }
    #expect(outcomes[4]?.failure is LimitExceeded)
    #expect(outcomes.count == 1)
    for _ in 1...3 { for run in parking.takeAll() { run.complete(.success(run.input)) } }
    #expect((2...3).allSatisfy { (try? outcomes[$0]?.get()) == $0 })
  }

  @Test func wait_fails_a_waiter_at_exactly_its_wait_on_the_limiters_clock() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1, queue: .wait(.seconds(2)), clock: clock)
    let limited = parking.function.limited(by: limiter)
    let outcomes = Outcomes()
    limited.run(1, completion: outcomes.record(1))
    limited.run(2, completion: outcomes.record(2))
    clock.advance(by: .seconds(2) - .nanoseconds(1))
    #expect(outcomes[2] == nil)
    clock.advance(by: .nanoseconds(1))
    #expect(outcomes[2]?.failure is LimitExceeded)
    #expect(!(outcomes[2]?.failure is CancellationError))
    limited.run(3, completion: outcomes.record(3))
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(parking.takeAll().map(\.input) == [3])  // run 2 never started
    #expect(clock.pendingCount == 0)  // an admitted waiter's timer is gone
  }

  @Test func a_waiter_admitted_in_time_cancels_its_wait_timer() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1, queue: .wait(.seconds(2)), clock: clock)
    let limited = parking.function.limited(by: limiter)
    limited.run(1) { _ in }
    limited.run(2) { _ in }
    #expect(clock.pendingCount == 1)
    parking.takeAll()[0].complete(.success(1))
    #expect(clock.pendingCount == 0)
    clock.advance(by: .seconds(5))
    let second = parking.takeAll()
    #expect(second.map(\.input) == [2])
    second[0].complete(.success(2))
  }

  @Test func a_cancelled_waiter_is_let_go_at_once_while_the_gate_is_busy() {
    // Issue 29, item 6.
    final class Marker: Sendable {
      let released: Tally
      init(_ released: Tally) { self.released = released }
      deinit { released.add() }
    }
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(1)
    let released = Tally()
    limited.run(0) { _ in }
    let tokens = (1...1_000).map { input -> CancellationToken in
      let marker = Marker(released)
      return limited.run(input) { _ in withExtendedLifetime(marker) {} }
    }
    #expect(released.value == 0)
    for token in tokens { token.cancel() }
    #expect(released.value == 1_000)  // while run 0 still holds the gate
    for run in parking.takeAll() { run.complete(.success(0)) }
  }

  @Test func describes_itself_and_its_limiter() {
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 }
    #expect(
      "\(f.limited(by: Limiter(concurrency: 8)))"
        == "f.limited(by: Limiter(concurrency: 8, queue: unbounded))")
    #expect(
      "\(f.limited(by: Limiter(concurrency: 8, queue: .count(3)), weight: 2))"
        == "f.limited(by: Limiter(concurrency: 8, queue: count(3)), weight: 2)")
    #expect("\(LimitExceeded(retryAfter: .seconds(1)))".contains("retry after 1.0 seconds"))
  }

  @Test func a_weight_above_the_concurrency_is_a_precondition_failure_naming_the_callers_line()
    async throws
  {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.limited(by: Limiter(concurrency: 2), weight: 3)
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("the weight must be from 1 to 2"))
    #expect(message.contains("LimiterTests.swift"))
  }
}

/// The core's own rules, on a gate with no run around it.
@Suite struct AdmissionCoreTests {
  typealias Waiter = LimitTests.TestWaiter

  @Test func higher_priorities_first_and_arrival_order_within_one() {
    let gate = Admission<Waiter>(capacity: 1)
    let started = Recorder<Int>()
    gate.enter(Waiter(on: CancellationToken()) { started.record(0) }, input: ())
    for (index, priority) in [(1, 0), (2, 5), (3, 0), (4, 5), (5, -3), (6, 0)] {
      gate.enter(
        Waiter(on: CancellationToken()) { started.record(index) }, input: (), priority: priority)
    }
    for _ in 0..<6 { gate.leave() }
    #expect(started.all == [0, 2, 4, 1, 3, 6, 5])
  }

  @Test func a_paused_gate_admits_nothing_until_resumed_and_keeps_the_order() {
    let gate = Admission<Waiter>(capacity: 2)
    let started = Recorder<Int>()
    gate.setPaused(true)
    for index in 0..<3 {
      gate.enter(Waiter(on: CancellationToken()) { started.record(index) }, input: ())
    }
    #expect(started.all.isEmpty)
    gate.setPaused(false)
    #expect(started.all == [0, 1])
    gate.leave()
    #expect(started.all == [0, 1, 2])
  }

  @Test func raising_the_capacity_admits_waiters_at_once_and_lowering_it_waits_for_holders() {
    let gate = Admission<Waiter>(capacity: 2)
    let started = Recorder<Int>()
    for index in 0..<8 {
      gate.enter(Waiter(on: CancellationToken()) { started.record(index) }, input: ())
    }
    #expect(started.count == 2)
    gate.setCapacity(4)
    #expect(started.all == [0, 1, 2, 3])
    gate.setCapacity(1)
    for _ in 0..<3 { gate.leave() }
    #expect(started.count == 4)  // 1 still holds: at the new capacity
    gate.leave()
    #expect(started.all == [0, 1, 2, 3, 4])
  }

  @Test func idle_callbacks_run_once_nothing_waits_or_runs() {
    let gate = Admission<Waiter>(capacity: 1)
    let idle = Tally()
    gate.whenIdle { idle.add() }
    #expect(idle.value == 1)  // at once when already idle
    let token = CancellationToken()
    gate.enter(Waiter(on: CancellationToken()) {}, input: ())
    gate.enter(Waiter(on: token) {}, input: ())
    gate.whenIdle { idle.add() }
    gate.leave()  // the waiter is admitted: not idle
    #expect(idle.value == 1)
    gate.setPaused(true)
    gate.enter(Waiter(on: token) {}, input: ())
    gate.leave()  // nothing runs, but one waits while paused: not idle
    #expect(idle.value == 1)
    token.cancel()  // the waiter leaves: idle
    #expect(idle.value == 2)
  }

  @Test func under_a_flood_of_cancellations_the_gate_holds_only_its_live_waiters() {
    let gate = Admission<Waiter>(capacity: 1)
    gate.enter(Waiter(on: CancellationToken()) {}, input: ())
    let live = CancellationToken()
    for round in 0..<50 {
      gate.enter(Waiter(on: live) {}, input: ())
      let tokens = (0..<200).map { _ in CancellationToken() }
      for token in tokens { gate.enter(Waiter(on: token) {}, input: ()) }
      for token in tokens.shuffled() { token.cancel() }
      #expect(gate.queuedEntries == round + 1)
    }
    live.cancel()
    #expect(gate.queuedEntries == 0)
  }
}
