import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct SharedTests {
  @Test func ten_runs_while_the_call_is_parked_make_exactly_one_call_and_all_get_its_value()
    async
  {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let (results, finished) = startRuns(shared, "ada", count: 10)
    await parking.waitForStarts(1)
    #expect(parking.started == 1)
    let calls = parking.takeAll()
    #expect(calls.map(\.input) == ["ada"])
    calls[0].complete(.success("ada.png"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == Array(repeating: "ada.png", count: 10))
    #expect(parking.started == 1)
  }

  @Test func ten_joined_runs_all_get_the_calls_error() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let (results, finished) = startRuns(shared, "ada", count: 10)
    await parking.waitForStarts(1)
    parking.takeAll()[0].complete(.failure(TestError(7)))
    await finished.wait()
    #expect(
      results.all.map { $0.failure as? TestError } == Array(repeating: TestError(7), count: 10))
    #expect(parking.started == 1)
  }

  @Test func cancelling_one_joined_run_ends_that_run_alone() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let first = Recorder<Result<String, any Error>>()
    let others = Recorder<Result<String, any Error>>()
    let othersDone = Countdown(2)
    let firstToken = shared.run("ada") { first.record($0) }
    shared.run("ada") {
      others.record($0)
      othersDone.tick()
    }
    shared.run("ada") {
      others.record($0)
      othersDone.tick()
    }
    await parking.waitForStarts(1)
    let call = parking.takeAll()[0]
    firstToken.cancel()
    #expect(first.all.count == 1)
    #expect(first.all.first.map(isCancellation) == true)
    #expect(call.token.isCancelled == false)
    call.complete(.success("ada.png"))
    await othersDone.wait()
    #expect(others.all.map { try? $0.get() } == ["ada.png", "ada.png"])
    #expect(first.all.count == 1)
  }

  @Test func the_call_is_cancelled_only_when_every_joined_run_is() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let tokens = (0..<3).map { _ in shared.run("ada") { _ in } }
    await parking.waitForStarts(1)
    let call = parking.takeAll()[0]
    tokens[0].cancel()
    tokens[1].cancel()
    #expect(call.token.isCancelled == false)
    tokens[2].cancel()
    #expect(call.token.isCancelled == true)
    call.complete(.failure(CancellationError()))
  }

  @Test func a_run_after_the_call_was_cancelled_waits_for_it_and_never_overlaps_it() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    shared.run("ada") { _ in }.cancel()
    await parking.waitForStarts(1)
    let cancelled = parking.takeAll()[0]
    #expect(cancelled.token.isCancelled)
    // The cancelled call has not called back: the next runs wait for it, together.
    let (results, finished) = startRuns(shared, "ada", count: 2)
    #expect(parking.started == 1)
    cancelled.complete(.failure(CancellationError()))
    await parking.waitForStarts(2)
    let fresh = parking.takeAll()
    #expect(fresh.count == 1)
    #expect(fresh[0].token.isCancelled == false)
    fresh[0].complete(.success("ada.png"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == ["ada.png", "ada.png"])
    #expect(parking.started == 2)
  }

  @Test func runs_waiting_for_a_cancelled_call_that_all_leave_make_no_call() async {
    let parking = Parking<String, String>()
    let table = FlightTable(policy: nil)
    let shared = parking.function.sharing(by: { $0 }, in: table, call: "shared()")
    shared.run("ada") { _ in }.cancel()
    await parking.waitForStarts(1)
    let cancelled = parking.takeAll()[0]
    let waiting = Recorder<Result<String, any Error>>()
    shared.run("ada") { waiting.record($0) }.cancel()
    #expect(waiting.all.first.map(isCancellation) == true)
    cancelled.complete(.success("late"))
    #expect(parking.started == 1)
    #expect(table.flightCount == 0)
  }

  @Test func after_the_call_ends_the_table_holds_nothing_for_its_key() async {
    let parking = Parking<String, String>()
    let table = FlightTable(policy: nil)
    let shared = parking.function.sharing(by: { $0 }, in: table, call: "shared()")
    let done = Gate()
    shared.run("ada") { _ in done.open() }
    shared.run("bob") { _ in }
    await parking.waitForStarts(2)
    #expect(table.flightCount == 2)
    let calls = parking.takeAll()
    calls[0].complete(.success("ada.png"))
    await done.wait()
    #expect(table.flightCount == 1)
    calls[1].complete(.success("bob.png"))
    #expect(table.flightCount == 0)
    // And a run after it makes a new call.
    shared.run("ada") { _ in }
    #expect(parking.started == 3)
    parking.takeAll()[0].complete(.success("again"))
    #expect(table.flightCount == 0)
  }

  @Test func a_run_whose_token_is_cancelled_as_it_joins_makes_no_call() {
    let parking = Parking<String, String>()
    let table = FlightTable(policy: nil)
    let token = CancellationToken()
    token.cancel()
    let stage = ReportedStage()
    // The table itself, as a run would reach it just after its token was cancelled: the
    // handler runs at once and the run leaves before its flight could launch.
    table.run(
      "ada", key: FlightKey("ada"), token: token,
      report: ModifierReport(parent: stage, tag: 0, counted: nil), inner: parking.function.program)
    #expect(stage.outcomes.all.count == 1)
    #expect(stage.outcomes.all.first.map(isCancellation) == true)
    #expect(parking.started == 0)
    #expect(table.flightCount == 0)
  }

  @Test func a_cancelled_call_leaves_the_table_when_it_calls_back() async {
    let parking = Parking<String, String>()
    let table = FlightTable(policy: nil)
    let shared = parking.function.sharing(by: { $0 }, in: table, call: "shared()")
    shared.run("ada") { _ in }.cancel()
    await parking.waitForStarts(1)
    #expect(table.flightCount == 1)
    parking.takeAll()[0].complete(.failure(CancellationError()))
    #expect(table.flightCount == 0)
  }

  @Test func distinct_keys_never_wait_for_each_other() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let bob = Gate()
    let ada = Recorder<Result<String, any Error>>()
    shared.run("ada") { ada.record($0) }
    shared.run("bob") { _ in bob.open() }
    await parking.waitForStarts(2)
    let calls = parking.takeAll()
    #expect(calls.map(\.input) == ["ada", "bob"])
    calls[1].complete(.success("bob.png"))
    await bob.wait()
    #expect(ada.all.isEmpty)
    calls[0].complete(.success("ada.png"))
    #expect(ada.all.map { try? $0.get() } == ["ada.png"])
  }

  @Test func shared_by_key_joins_inputs_of_one_key_with_the_first_input() async {
    let parking = Parking<(user: String, attempt: Int), String>()
    let shared = parking.function.shared(by: \.user)
    let finished = Countdown(2)
    let results = Recorder<Result<String, any Error>>()
    for attempt in 1...2 {
      shared.run((user: "ada", attempt: attempt)) {
        results.record($0)
        finished.tick()
      }
    }
    await parking.waitForStarts(1)
    let call = parking.takeAll()[0]
    #expect(call.input.attempt == 1)
    call.complete(.success("ada.png"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == ["ada.png", "ada.png"])
    #expect(parking.started == 1)
  }

  @Test func keys_of_a_class_and_its_subclass_compare_as_the_class_does() async {
    let parking = Parking<Account, String>()
    let shared = parking.function.shared()
    let finished = Countdown(2)
    let results = Recorder<Result<String, any Error>>()
    for account in [Account(id: 1), Business(id: 1)] {
      shared.run(account) {
        results.record($0)
        finished.tick()
      }
    }
    await parking.waitForStarts(1)
    parking.takeAll()[0].complete(.success("one"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == ["one", "one"])
    #expect(parking.started == 1)
  }

  @Test(.timeLimit(.minutes(1)))
  func keys_of_one_hash_have_flights_of_their_own() async {
    let parking = Parking<Colliding, String>()
    let table = FlightTable(policy: nil)
    let shared = parking.function.sharing(by: { $0 }, in: table, call: "shared()")
    let results = Recorder<String>()
    let finished = Countdown(4)
    for name in ["ada", "bob", "ada", "bob"] {
      shared.run(Colliding(name: name)) {
        results.record("\(name): \((try? $0.get()) ?? "failed")")
        finished.tick()
      }
    }
    await parking.waitForStarts(2)
    let calls = parking.takeAll()
    #expect(calls.map(\.input.name) == ["ada", "bob"])
    #expect(table.flightCount == 2)
    calls[1].complete(.success("bob.png"))
    #expect(table.flightCount == 1)
    // Ada's flight is still the head of its key: a run of it joins.
    shared.run(Colliding(name: "ada")) { _ in finished.tick() }
    #expect(parking.started == 2)
    calls[0].complete(.success("ada.png"))
    await finished.wait()
    #expect(table.flightCount == 0)
    #expect(
      results.all.sorted() == ["ada: ada.png", "ada: ada.png", "bob: bob.png", "bob: bob.png"])
  }

  @Test func a_delivered_run_leaves_no_registration_on_its_token() async {
    let parking = Parking<String, String>()
    let shared = parking.function.shared()
    let token = CancellationToken()
    let done = Countdown(3)
    for _ in 0..<3 { shared.run("ada", token: token) { _ in done.tick() } }
    await parking.waitForStarts(1)
    parking.takeAll()[0].complete(.success("ada.png"))
    await done.wait()
    #expect(token.registrationCount == 0)
  }

  @Test func synchronous_calls_each_run_once_in_sequence() async throws {
    let calls = Tally()
    let shared = AsyncFunc<Int, Int>.sync {
      calls.add()
      return $0 * 2
    }.shared()
    #expect(try await shared(2) == 4)
    #expect(try await shared(2) == 4)
    #expect(calls.value == 2)
  }

  @Test func description_reads_like_the_code() {
    let avatar = AsyncFunc<String, String>.sync(name: "avatar") { $0 }
    #expect("\(avatar.shared())" == "avatar.shared()")
    #expect("\(avatar.shared(by: \.count))" == "avatar.shared(by: { … })")
  }
}

/// A key whose values all have one hash.
private struct Colliding: Hashable, Sendable {
  let name: String
  func hash(into hasher: inout Hasher) { hasher.combine(0) }
}

/// A class key: accounts are equal by id, whatever their subclass.
private class Account: Hashable, @unchecked Sendable {
  let id: Int
  init(id: Int) { self.id = id }
  static func == (lhs: Account, rhs: Account) -> Bool { lhs.id == rhs.id }
  func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// `@unchecked Sendable`: immutable, as its superclass.
private final class Business: Account, @unchecked Sendable {}

/// Where a stage started by hand reports: it records each outcome.
private final class ReportedStage: StageParent {
  let outcomes = Recorder<Result<any Sendable, any Error>>()
  func childSucceeded(_ value: consuming any Sendable, tag _: Int) {
    outcomes.record(.success(value))
  }
  func childFailed(_ error: any Error, tag _: Int) { outcomes.record(.failure(error)) }
}

@Suite struct SharedStressTests {
  /// Many threads join, cancel and forget on a few keys while the calls end on other threads:
  /// every run completes exactly once, with its key's value or `CancellationError`, and the
  /// cache stays within its capacity. (A forgotten key may have two calls at once, so overlap
  /// is checked by the next test, without forgetting.)
  @Test(.timeLimit(.minutes(1)))
  func joins_cancellations_and_forgets_racing_from_many_threads() async {
    let keys = 6
    let runs = 3_000
    let queue = testQueue("shared-stress")
    let body = AsyncFunc<Int, Int>(name: "body") { key, complete in
      bounce(key % 3, on: queue) { complete(.success(key * 10)) }
    }
    let shared = body.shared()
    let cache = ResultCache<Int, Int>(capacity: 3)
    let memoized = body.memoized(in: cache)
    let finished = Countdown(2 * runs)
    let wrong = Tally()
    let check: @Sendable (Int, Result<Int, any Error>) -> Void = { key, result in
      if case .success(let value) = result, value != key * 10 { wrong.add() }
      if case .failure(let error) = result, !(error is CancellationError) { wrong.add() }
      finished.tick()
    }
    // Off the cooperative pool: `concurrentPerform` waits for its workers.
    blockingLane("shared-stress").async {
      DispatchQueue.concurrentPerform(iterations: runs) { index in
        let key = index % keys
        let first = shared.run(key) { check(key, $0) }
        let second = memoized.run(key) { check(key, $0) }
        if index % 3 == 0 { first.cancel() }
        if index % 5 == 0 { second.cancel() }
        if index % 7 == 0 { cache.forget(key) }
        if index % 301 == 0 { cache.forgetAll() }
      }
    }
    await finished.wait()
    #expect(wrong.value == 0)
    #expect(cache.count <= 3)
  }

  @Test(.timeLimit(.minutes(1)))
  func calls_of_one_key_never_overlap_however_runs_join_and_cancel() async {
    let keys = 4
    let runs = 2_000
    let queue = testQueue("shared-overlap")
    /// A body that counts its calls of each key in flight.
    func counted(_ inFlight: [InFlight]) -> AsyncFunc<Int, Int> {
      AsyncFunc<Int, Int>(name: "body") { key, complete in
        inFlight[key].enter()
        bounce(1 + key % 2, on: queue) {
          inFlight[key].leave()
          complete(.success(key))
        }
      }
    }
    let sharedInFlight = (0..<keys).map { _ in InFlight() }
    let memoizedInFlight = (0..<keys).map { _ in InFlight() }
    let shared = counted(sharedInFlight).shared()
    // Every second run is cancelled, so many calls end cancelled and are not kept.
    let memoized = counted(memoizedInFlight).memoized(in: ResultCache<Int, Int>())
    let finished = Countdown(2 * runs)
    blockingLane("shared-overlap").async {
      DispatchQueue.concurrentPerform(iterations: runs) { index in
        let token = shared.run(index % keys) { _ in finished.tick() }
        let other = memoized.run(index % keys) { _ in finished.tick() }
        if index % 2 == 0 {
          token.cancel()
          other.cancel()
        }
      }
    }
    await finished.wait()
    #expect(sharedInFlight.map(\.peak).allSatisfy { $0 <= 1 })
    #expect(memoizedInFlight.map(\.peak).allSatisfy { $0 <= 1 })
  }
}
