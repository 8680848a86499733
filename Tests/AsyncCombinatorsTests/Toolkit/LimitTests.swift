import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct LimitTests {
  @Test func runs_share_one_gate_and_start_in_arrival_order() async throws {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(2)
    let finished = Countdown(6)
    for input in 0..<6 { limited.run(input) { _ in finished.tick() } }
    var order: [Int] = []
    while order.count < 6 {
      await parking.waitForStarts(min(order.count + 2, 6))
      #expect(parking.started == min(order.count + 2, 6))
      let parked = parking.takeAll()
      order += parked.map(\.input)
      for run in parked { run.complete(.success(run.input)) }
    }
    await finished.wait()
    #expect(order == Array(0..<6))
  }

  @Test func a_finished_run_is_let_go_while_runs_behind_it_still_wait() async {
    // The gate drops its queue's spent entries only when it compacts, dozens of admissions
    // later. An admitted run must not be among what they hold: whatever its completion
    // captured would live on, and die under the gate's lock when they go.
    final class Marker: Sendable {
      let released: Tally
      init(_ released: Tally) { self.released = released }
      deinit { released.add() }
    }
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(1)
    let released = Tally()
    limited.run(0) { _ in }
    do {
      let marker = Marker(released)
      limited.run(1) { _ in withExtendedLifetime(marker) {} }
    }
    limited.run(2) { _ in }
    limited.run(3) { _ in }  // Still waiting when run 1 ends: the queue is not emptied.
    await parking.waitForStarts(1)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    await parking.waitForStarts(2)
    // Run 1 ends here, on this thread, and with it the last reference to its completion.
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    #expect(released.value == 1)
    #expect(parking.started == 3)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    await parking.waitForStarts(4)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
  }

  @Test func each_call_of_limit_makes_an_independent_gate() async {
    let parking = Parking<Int, Int>()
    parking.function.limit(1).run(0) { _ in }
    parking.function.limit(1).run(1) { _ in }
    await parking.waitForStarts(2)
    for run in parking.takeAll() { run.complete(.success(0)) }
  }

  @Test func a_thousand_wide_gate_with_thousands_waiting_neither_blocks_nor_deadlocks() async {
    let parking = Parking<Int, Int>()
    let finished = Countdown(5000)
    let inFlight = InFlight()
    let probed = AsyncFunc<Int, Int> { x, complete in
      inFlight.enter()
      parking.function.run(x) { result in
        inFlight.leave()
        complete(result)
      }
    }.limit(1000)
    // `run` returns at once for every call: this loop would hang if waiting blocked it.
    for input in 0..<5000 { probed.run(input) { _ in finished.tick() } }
    await parking.waitForStarts(1000)
    #expect(parking.started == 1000)
    var released = 0
    while released < 5000 {
      await parking.waitForStarts(min(released + 1000, 5000))
      let parked = parking.takeAll()
      released += parked.count
      for run in parked { run.complete(.success(run.input)) }
    }
    await finished.wait()
    #expect(inFlight.peak == 1000)
  }

  @Test func a_cancelled_waiter_leaves_the_queue_at_once() async {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(1)
    let results = Recorder<(Int, Bool)>()
    let cancelled = Gate()
    let finished = Countdown(2)
    limited.run(0) { _ in finished.tick() }
    let second = limited.run(1) { result in
      results.record((1, result.failure is CancellationError))
      cancelled.open()
    }
    limited.run(2) { _ in finished.tick() }
    await parking.waitForStarts(1)
    second.cancel()
    await cancelled.wait()  // Completed while run 0 still holds the only slot.
    #expect(results.all.map(\.1) == [true])
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)
    #expect(parking.takeAll().map(\.input) == [2])  // Run 1 never started; run 2 did.
  }

  /// Waits at a gate for the tests of the gate itself: runs `admitted` when it gets a slot,
  /// `turnedAway` when its run is cancelled first.
  final class TestWaiter: AdmissionWaiter, @unchecked Sendable {
    // `@unchecked Sendable`: `place` is guarded by the gate's lock; the rest are `let`s.
    var place = AdmissionPlace<TestWaiter>()
    let waitsOn: CancellationToken
    private let onAdmitted: @Sendable () -> Void
    private let onTurnedAway: @Sendable () -> Void
    private let onRejected: @Sendable (LimitExceeded) -> Void

    init(
      on token: CancellationToken,
      turnedAway: @escaping @Sendable () -> Void = {},
      rejected: @escaping @Sendable (LimitExceeded) -> Void = { _ in },
      admitted: @escaping @Sendable () -> Void
    ) {
      waitsOn = token
      onAdmitted = admitted
      onTurnedAway = turnedAway
      onRejected = rejected
    }

    func admitted(_: AnyValue) { onAdmitted() }
    func turnedAway() { onTurnedAway() }
    func rejected(_ error: LimitExceeded) { onRejected(error) }
  }

  @Test func cancelled_waiters_do_not_pile_up_while_the_slot_is_held() {
    let gate = Admission<TestWaiter>(capacity: 1)
    let started = Recorder<Int>()
    let turnedAway = Recorder<Int>()
    gate.enter(TestWaiter(on: CancellationToken()) { started.record(0) }, input: ())
    let tokens = (1...10_000).map { _ in CancellationToken() }
    for (index, token) in tokens.enumerated() {
      let waiter = TestWaiter(
        on: token, turnedAway: { turnedAway.record(index + 1) },
        admitted: { started.record(index + 1) })
      gate.enter(waiter, input: ())
    }
    #expect(gate.queuedEntries == 10_000)
    // Cancelled in arrival order, and from the back, around one that stays.
    for token in tokens[0..<5_000] { token.cancel() }
    for token in tokens[5_001...].reversed() { token.cancel() }
    #expect(gate.queuedEntries == 1)  // Each let go as it is cancelled: no tombstones.
    #expect(turnedAway.count == 9_999)  // Each told at once that it will not start.
    gate.leave()
    #expect(started.all == [0, 5_001])  // Only the waiter left gets the slot.
  }

  @Test func waiters_on_one_token_share_one_handler_that_goes_with_the_last_of_them() {
    let gate = Admission<TestWaiter>(capacity: 1)
    let token = CancellationToken()
    let started = Recorder<Int>()
    gate.enter(TestWaiter(on: token) { started.record(0) }, input: ())
    #expect(token.registrationCount == 0)  // Admitted at once: nothing to watch.
    for index in 1...1_000 {
      gate.enter(TestWaiter(on: token) { started.record(index) }, input: ())
    }
    #expect(token.registrationCount == 1)  // A fold's elements take its token's lock once.
    for _ in 1...999 { gate.leave() }
    #expect(token.registrationCount == 1)
    gate.leave()  // The last waiter is admitted: the handler has nothing left to guard.
    #expect(token.registrationCount == 0)
    #expect(started.all == Array(0...1_000))  // In arrival order.
    // Waiting again on the same token watches it afresh.
    let turnedAway = Recorder<Int>()
    for index in 1_001...1_003 {
      let waiter = TestWaiter(
        on: token, turnedAway: { turnedAway.record(index) }, admitted: { started.record(index) })
      gate.enter(waiter, input: ())
    }
    #expect(token.registrationCount == 1)
    token.cancel()
    #expect(turnedAway.all.sorted() == [1_001, 1_002, 1_003])
    #expect(gate.queuedEntries == 0)
  }

  @Test func cancelling_one_token_turns_away_its_waiters_only() {
    let gate = Admission<TestWaiter>(capacity: 1)
    let (kept, cancelled) = (CancellationToken(), CancellationToken())
    let started = Recorder<Int>()
    let turnedAway = Recorder<Int>()
    gate.enter(TestWaiter(on: kept) { started.record(0) }, input: ())
    for index in 1...6 {
      let token = index.isMultiple(of: 2) ? cancelled : kept
      let waiter = TestWaiter(
        on: token, turnedAway: { turnedAway.record(index) }, admitted: { started.record(index) })
      gate.enter(waiter, input: ())
    }
    cancelled.cancel()
    #expect(turnedAway.all.sorted() == [2, 4, 6])
    #expect(cancelled.registrationCount == 0)
    for _ in 1...3 { gate.leave() }
    #expect(started.all == [0, 1, 3, 5])
    #expect(kept.registrationCount == 0)
  }

  @Test func a_waiter_on_a_token_cancelled_already_is_turned_away_at_once() {
    let gate = Admission<TestWaiter>(capacity: 1)
    let started = Recorder<Int>()
    let turnedAway = Recorder<Int>()
    gate.enter(TestWaiter(on: CancellationToken()) { started.record(0) }, input: ())
    let token = CancellationToken()
    token.cancel()
    let waiter = TestWaiter(
      on: token, turnedAway: { turnedAway.record(1) }, admitted: { started.record(1) })
    gate.enter(waiter, input: ())
    #expect(turnedAway.all == [1])
    #expect(gate.queuedEntries == 0)
    gate.leave()
    #expect(started.all == [0])
  }

  @Test func a_waiter_admitted_while_it_registers_its_handler_leaves_no_handler_behind() {
    // The first waiter on a token registers the watch's handler after it has queued, outside
    // the gate's lock; a slot freed in between admits it before the handler is recorded, and
    // then only the waiter itself can take the handler off again.
    let rounds = 5_000
    let tokens = (0..<rounds).map { _ in CancellationToken() }
    let admitted = Tally()
    for round in 0..<rounds {
      let gate = Admission<TestWaiter>(capacity: 1)
      gate.enter(TestWaiter(on: CancellationToken()) {}, input: ())
      DispatchQueue.concurrentPerform(iterations: 2) { job in
        if job == 0 {
          gate.enter(TestWaiter(on: tokens[round]) { admitted.add() }, input: ())
        } else {
          gate.leave()
        }
      }
    }
    #expect(admitted.value == rounds)
    #expect(tokens.allSatisfy { $0.registrationCount == 0 })
  }

  @Test func a_shared_token_cancelled_while_its_waiters_are_admitted_settles_each_once()
    async
  {
    for round in 0..<200 {
      let limit = 2
      let waiters = 64
      let gate = Admission<TestWaiter>(capacity: limit)
      let token = CancellationToken()
      let settlements = Locked<[Int: Int]>([:])
      let settled = Countdown(waiters)
      for index in 0..<waiters {
        let settle: @Sendable () -> Void = {
          settlements.withLock { $0[index, default: 0] += 1 }
          settled.tick()
        }
        let waiter = TestWaiter(
          on: token, turnedAway: settle,
          admitted: {
            settle()
            DispatchQueue.global().async { gate.leave() }
          })
        gate.enter(waiter, input: ())
      }
      DispatchQueue.global().async { token.cancel() }
      await settled.gate.wait()
      let counts = settlements.withLock { $0 }
      #expect(counts.count == waiters && counts.values.allSatisfy { $0 == 1 }, "round \(round)")
      #expect(gate.queuedEntries == 0)
      #expect(token.registrationCount == 0)
    }
  }

  @Test func waiters_cancelled_while_slots_free_up_start_at_most_once_and_never_over_the_limit()
    async
  {
    let limit = 2
    let waiters = 2_000
    let gate = Admission<TestWaiter>(capacity: limit)
    let outcomes = Locked<[Int: [String]]>([:])
    let holding = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    // Every waiter settles once: admitted and then left, or turned away.
    let settled = Countdown(waiters)
    let tokens = (0..<waiters).map { _ in CancellationToken() }
    for index in 0..<waiters {
      let turnedAway: @Sendable () -> Void = {
        outcomes.withLock { $0[index, default: []].append("turned away") }
        settled.tick()
      }
      let admitted: @Sendable () -> Void = {
        outcomes.withLock { $0[index, default: []].append("admitted") }
        let now = holding.add(1, ordering: .relaxed).newValue
        peak.max(now, ordering: .relaxed)
        DispatchQueue.global().async {
          holding.subtract(1, ordering: .relaxed)
          gate.leave()
          settled.tick()
        }
      }
      let waiter = TestWaiter(on: tokens[index], turnedAway: turnedAway, admitted: admitted)
      gate.enter(waiter, input: ())
    }
    // The odd waiters are cancelled from other threads while the holders keep leaving.
    DispatchQueue.global().async {
      DispatchQueue.concurrentPerform(iterations: waiters / 2) { tokens[2 * $0 + 1].cancel() }
    }
    await settled.gate.wait()
    let settledAs = outcomes.withLock { $0 }
    #expect((0..<waiters).allSatisfy { settledAs[$0]?.count == 1 })
    #expect((0..<waiters).filter { $0 % 2 == 0 }.allSatisfy { settledAs[$0] == ["admitted"] })
    #expect(peak.load(ordering: .relaxed) <= limit)
    #expect(gate.queuedEntries == 0)
    // Every slot came back: the next `limit` runs start at once.
    let again = Recorder<Int>()
    for index in 0..<limit {
      gate.enter(TestWaiter(on: CancellationToken()) { again.record(index) }, input: ())
    }
    #expect(again.count == limit)
  }

  @Test func synchronous_runs_released_from_the_queue_do_not_recurse() async {
    let hold = Parking<Int, Int>()
    let mostlySync = AsyncFunc<Int, Int> { x, complete in
      if x == 0 { hold.function.run(x, completion: complete) } else { complete(.success(x)) }
    }
    let limited = mostlySync.limit(1)
    let finished = Countdown(50_000)
    for input in 0..<50_000 { limited.run(input) { _ in finished.tick() } }
    await hold.waitForStarts(1)
    hold.takeAll()[0].complete(.success(0))  // Drains 49,999 waiters on this thread.
    await finished.wait()
  }

  @Test func description_reads_like_the_code() {
    let export = AsyncFunc<Int, Int>.sync(name: "export") { $0 }
    #expect("\(export.limit(1))" == "export.limit(1)")
  }

  @Test func a_limit_below_one_is_a_precondition_failure_naming_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.limit(0)
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("limit(0): the limit must be at least 1"))
    #expect(message.contains("LimitTests.swift"))
  }
}

/// A limit counts bodies that have started and not called back, whatever became of their runs.
@Suite struct LimitCountsRealWorkTests {
  @Test func a_cancelled_runs_slot_waits_for_its_body_to_call_back() async {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(1)
    let first = Gate()
    let token = limited.run(0) { result in
      #expect(isCancellation(result))
      first.open()
    }
    await parking.waitForStarts(1)
    token.cancel()
    await first.wait()  // The result is out at once...
    let second = Gate()
    limited.run(1) { _ in second.open() }
    #expect(parking.started == 1)  // ...but the body ignoring cancellation keeps the slot.
    let cancelled = parking.takeAll()
    cancelled[0].complete(.success(0))
    await parking.waitForStarts(2)
    parking.takeAll()[0].complete(.success(1))
    await second.wait()
  }

  @Test func a_slot_comes_back_when_a_cancelled_body_releases_its_completion_uncalled() async {
    let held = Locked<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let entered = Gate()
    let stage = AsyncFunc<Int, Int>(name: "releasesUncalled") { x, complete in
      guard x == 0 else { return complete(.success(x)) }
      held.withLock { $0 = complete }
      entered.open()
    }
    let limited = stage.limit(1)
    let token = limited.run(0) { _ in }
    await entered.wait()
    token.cancel()
    let second = Gate()
    limited.run(1) { _ in second.open() }
    #expect(!second.isOpen)  // A granted run would have completed synchronously.
    do {
      let completion = held.withLock { $0.take() }
      _ = completion
    }  // Released uncalled here: the slot comes back and the waiting run goes.
    await second.wait()
  }

  @Test func a_timed_out_runs_slot_waits_for_the_body() async {
    let parking = Parking<Int, Int>()
    let limited = parking.function.timeout(.milliseconds(1)).limit(1)
    let first = await runToCompletion(limited, 0)
    #expect(first.failure is TimeoutError)
    let second = Gate()
    limited.run(1) { _ in second.open() }
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)
    parking.takeAll()[0].complete(.success(1))
    await second.wait()
  }

  @Test func a_race_losers_slot_waits_for_the_losing_body() async throws {
    let parking = Parking<Int, Int>()
    let limited = AsyncFunc.race([parking.function, .sync { $0 }]).limit(1)
    let first = await runToCompletion(limited, 7)
    #expect(try first.get() == 7)
    let second = Gate()
    limited.run(1) { _ in second.open() }
    await parking.waitForStarts(1)
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)
    let parked = parking.takeAll()
    parked[0].complete(.success(1))
    await second.wait()
  }
}

/// A fold's limit counts bodies too: a timed-out element keeps its slot until it calls back.
@Suite struct FoldLimitCountsRealWorkTests {
  @Test func timed_out_elements_keep_their_slots_until_their_bodies_call_back() async {
    let parking = Parking<Int, Int>()
    let clock = TestClock()
    let uploads = parking.function.timeout(.seconds(1), clock: clock)
      .concurrentMap(limit: 2, acceptableFailure: .unlimited)
    let done = Gate()
    let outcome = Locked<Result<[Int], any Error>?>(nil)
    uploads.run(Array(0..<4)) { result in
      outcome.withLock { [result] in $0 = result }
      done.open()
    }
    #expect(parking.started == 2)
    clock.advance(by: .seconds(1))  // Both time out; neither body calls back.
    #expect(parking.started == 2)
    let first = parking.takeAll()
    first[0].complete(.success(0))  // One body is done: its slot starts the next element.
    #expect(parking.started == 3)
    first[1].complete(.success(1))
    #expect(parking.started == 4)
    for run in parking.takeAll() { run.complete(.success(run.input)) }
    await done.wait()
    #expect((try? outcome.withLock { $0 }?.get()) == [2, 3])
  }

  @Test func a_cancelled_folds_bodies_keep_a_shared_limit_until_they_call_back() async {
    let parking = Parking<Int, Int>()
    let shared = parking.function.limit(2)
    let token = shared.concurrentMap().run([0, 1]) { _ in }
    #expect(parking.started == 2)
    token.cancel()
    let next = Gate()
    shared.run(9) { _ in next.open() }
    #expect(parking.started == 2)  // Cancelled, but both bodies still hold the gate.
    parking.takeAll()[0].complete(.success(0))
    #expect(parking.started == 3)
    parking.takeAll()[0].complete(.success(9))
    await next.wait()
  }
}

@Suite struct NestedLimitTests {
  @Test(.timeLimit(.minutes(1)))
  func a_run_cancelled_while_waiting_at_an_inner_gate_gives_back_its_outer_slot() async {
    let parking = Parking<Int, Int>()
    let inner = parking.function.limit(1)
    let outer = inner.limit(1)
    let outcomes = Locked<[Int: Result<Int, any Error>]>([:])
    let finished = Countdown(3)
    func record(_ input: Int) -> @Sendable (Result<Int, any Error>) -> Void {
      { result in
        outcomes.withLock { $0[input] = result }
        finished.tick()
      }
    }
    inner.run(0, completion: record(0))  // Holds the inner slot, parked.
    let waiting = outer.run(1, completion: record(1))  // Holds the outer slot, waits inside.
    waiting.cancel()  // Nothing of run 1 is running: its outer slot must come back.
    outer.run(2, completion: record(2))
    await parking.waitForStarts(1)
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)  // Run 2 had the outer slot, so it gets the inner one now.
    let second = parking.takeAll()
    #expect(second.map(\.input) == [2])
    second.first?.complete(.success(2))
    await finished.wait()
    let results = outcomes.withLock { $0 }
    #expect(results[1]?.failure is CancellationError)
    #expect((try? results[0]?.get()) == 0 && (try? results[2]?.get()) == 2)
  }
}
