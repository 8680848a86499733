import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

// flatMap, recover, `Promise { complete in }` and the two spellings of `firstly`.
@Suite struct PromiseRecoverTests {
  // MARK: flatMap

  @Test func flatMap_goes_on_with_the_value_of_the_promise_its_block_returns() async throws {
    let value = try await firstly { 4 }
      .flatMap { x in when(firstly { x }, firstly { "\(x)" }) }
      .then { n, s in "\(s)+\(n + 1)" }
      .value
    #expect(value == "4+5")
  }

  @Test func cancelling_the_chain_cancels_the_promise_flatMap_runs() async {
    let parked = Parking<Void, Int>()
    let finished = Gate()
    let token = firstly { 1 }
      .flatMap { _ in Promise(parked.function) }
      .always { finished.open() }
      .error { _ in }
    await parked.waitForStarts(1)
    let inner = parked.takeAll()[0]
    #expect(!inner.token.isCancelled)
    token.cancel()
    await finished.wait()
    #expect(inner.token.isCancelled)
    inner.complete(.success(2))  // too late: dropped
  }

  // MARK: recover

  @Test func recover_turns_a_failure_into_a_value() async throws {
    let value = try await firstly { () throws -> Int in throw TestError(3) }
      .recover { error in (error as? TestError)?.id ?? -1 }
      .then { $0 * 10 }
      .value
    #expect(value == 30)
  }

  @Test func recover_leaves_a_success_alone() async throws {
    let calls = Recorder<Int>()
    let value = try await firstly { 5 }.recover { _ in
      calls.record(0)
      return -1
    }.value
    #expect(value == 5)
    #expect(calls.all.isEmpty)
  }

  @Test func a_throwing_recover_is_the_new_failure() async {
    await #expect(throws: TestError(2)) {
      try await firstly { () throws -> Int in throw TestError(1) }
        .recover { _ in throw TestError(2) }
        .value
    }
  }

  @Test func recover_never_recovers_a_cancellation_error_a_block_threw() async {
    let calls = Recorder<Int>()
    await #expect(throws: CancellationError.self) {
      try await firstly { () throws -> Int in throw CancellationError() }
        .recover { _ in
          calls.record(0)
          return 0
        }
        .value
    }
    #expect(calls.all.isEmpty)
  }

  @Test func recover_never_recovers_a_cancelled_run() async {
    let parked = ParkedCompletion<Int>()
    let calls = Recorder<Int>()
    let finished = Gate()
    let token = Promise(AsyncFunc<Void, Int> { _, complete in parked.park(complete) })
      .recover { _ in
        calls.record(0)
        return 0
      }
      .always { finished.open() }
      .error { _ in calls.record(1) }
    await parked.arrived.wait()
    token.cancel()
    await finished.wait()
    #expect(calls.all.isEmpty)
    parked.complete(.success(1))  // too late: dropped
  }

  // MARK: Promise { complete in }

  @Test func a_callback_promise_completes_with_what_its_body_passes() async throws {
    let value = try await Promise<Int> { complete in
      DispatchQueue.global().async { complete(.success(41)) }
    }.then { $0 + 1 }.value
    #expect(value == 42)
    await #expect(throws: TestError(4)) {
      try await Promise<Int> { complete in complete(.failure(TestError(4))) }.value
    }
  }

  @Test func a_callback_promise_runs_its_body_at_each_start_not_before() async throws {
    let starts = Recorder<Int>()
    let promise = Promise<Int> { complete in
      starts.record(0)
      complete(.success(starts.count))
    }
    #expect(starts.count == 0)
    #expect(try await promise.value == 1)
    #expect(try await promise.value == 2)
  }

  // MARK: The two spellings of firstly

  @Test func a_value_head_starts_the_chain_with_its_value() async throws {
    #expect(try await firstly { 7 }.then { $0 * 6 }.value == 42)
    let withStatements = firstly { () -> Int in
      let base = 6
      return base * 7
    }
    #expect(try await withStatements.value == 42)
  }

  @Test func a_promise_head_runs_that_promise_and_goes_on_with_its_value() async throws {
    let bodies = Recorder<String>()
    try await firstly {
      when(
        { () in bodies.record("fst") },
        { () in bodies.record("snd") })
    }.then { (info) in
      bodies.record("then")
    }.value
    #expect(Set(bodies.all.prefix(2)) == ["fst", "snd"])
    #expect(bodies.all.last == "then")
    let pair = try await firstly { when({ 1 }, { "a" }) }.then { n, s in "\(s)\(n)" }.value
    #expect(pair == "a1")
  }
}

@Suite struct PromiseHeadTests {
  @Test func a_head_whose_body_is_a_promise_is_flattened_however_deep() async throws {
    #expect(try await firstly { firstly { "deep" } }.value == "deep")
    #expect(try await firstly { firstly { firstly { 3 } } }.value == 3)
  }
}

@Suite struct PromiseDescriptionTests {
  @Test func a_promise_describes_its_blocks_in_order_not_its_plumbing() {
    let chain = firstly { 1 }.then { $0 + 1 }.flatMap { x in firstly { x } }.then { $0 }
    #expect("\(chain.chain)" == "firstly +> then +> flatMap +> then")
    let guarded = firstly { 1 }.then { $0 + 1 }.recover { _ in 0 }.always {}
    #expect("\(guarded.chain)" == "(firstly +> then).recover { … }.always { … }")
  }
}
