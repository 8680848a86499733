import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct RecoverTests {
  @Test func a_failure_becomes_the_recovered_value() async throws {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    #expect(try await failing.recover { ($0 as! TestError).id * 10 }(0) == 10)
  }

  @Test func a_success_is_untouched() async throws {
    let fine = AsyncFunc<Int, Int>.sync { $0 }
    #expect(try await fine.recover { _ in -1 }(5) == 5)
  }

  @Test func a_throwing_recovery_is_the_new_failure() async {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    let result = await runToCompletion(failing.recover { _ in throw TestError(2) }, 0)
    #expect(result.failure as? TestError == TestError(2))
  }

  @Test func cancellation_is_never_recovered() async {
    let cancelling = AsyncFunc<Int, Int> { _, complete in complete(.failure(CancellationError())) }
    let result = await runToCompletion(cancelling.recover { _ in 0 }, 0)
    #expect(result.failure is CancellationError)
  }

  @Test func cancellation_is_never_recovered_when_the_function_is_not_one_callback_stage() async {
    let recovered = Tally()
    let cancelling = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let result = await runToCompletion(
      cancelling.recover { _ in
        recovered.add()
        return 0
      }, 0)
    #expect(isCancellation(result))
    #expect(recovered.value == 0)
  }

  @Test func description_reads_like_the_code() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect("\(fetch.recover { _ in 0 })" == "fetch.recover { … }")
  }
}

/// `recover(with:)`: the fallback is a function, run as part of the same run.
@Suite struct RecoverWithTests {
  @Test func a_failure_runs_the_fallback_with_the_error() async throws {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(3) }
    let fallback = AsyncFunc<any Error, Int>.async { ($0 as! TestError).id * 100 }
    #expect(try await failing.recover(with: fallback)(0) == 300)
  }

  @Test func a_success_never_starts_the_fallback() async throws {
    let started = Tally()
    let fallback = AsyncFunc<any Error, Int>.sync { _ in
      started.add()
      return 0
    }
    #expect(try await AsyncFunc<Int, Int>.sync { $0 }.recover(with: fallback)(4) == 4)
    #expect(started.value == 0)
  }

  @Test func the_fallbacks_failure_is_the_new_failure() async {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    let fallback = AsyncFunc<any Error, Int>.sync { _ in throw TestError(2) }
    let result = await runToCompletion(failing.recover(with: fallback), 0)
    #expect(result.failure as? TestError == TestError(2))
  }

  @Test func cancellation_never_reaches_the_fallback() async {
    let started = Tally()
    let cancelling = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let fallback = AsyncFunc<any Error, Int>.sync { _ in
      started.add()
      return 0
    }
    let result = await runToCompletion(cancelling.recover(with: fallback), 0)
    #expect(isCancellation(result))
    #expect(started.value == 0)
  }

  @Test func cancelling_the_run_cancels_a_running_fallback() async {
    let parking = Parking<any Error, Int>()
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    let finished = Gate()
    let token = failing.recover(with: parking.function).run(0) { result in
      #expect(isCancellation(result))
      finished.open()
    }
    await parking.waitForStarts(1)
    token.cancel()
    await finished.wait()
    let parked = parking.takeAll()
    #expect(parked[0].token.isCancelled)
    parked[0].complete(.success(1))  // Too late: dropped.
  }

  @Test func description_names_the_fallback() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    let mirror = AsyncFunc<any Error, Int>.sync(name: "mirror") { _ in 0 }
    #expect("\(fetch.recover(with: mirror))" == "fetch.recover(with: mirror)")
  }
}

/// `recover` of a single callback stage, the shape most code has.
@Suite struct RecoverOfOneCallbackStageTests {
  @Test func a_single_callback_stage_takes_the_recovery_into_its_own_completion() async throws {
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { x, complete in
      testQueue().async { complete(.failure(TestError(x))) }
    }
    let recovered = fetch.recover { ($0 as! TestError).id * 10 }
    #expect("\(recovered)" == "fetch.recover { … }")
    #expect(try await recovered(4) == 40)
  }

  @Test func the_timeline_shows_the_stage_itself_failing() async throws {
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { _, complete in
      testQueue().async { complete(.failure(TestError(0))) }
    }
    let (result, timeline) = await fetch.recover { _ in 7 }.traced(1)
    #expect(try result.get() == 7)
    #expect(timeline.spans.map(\.name) == ["fetch"])
    #expect(timeline.spans.map(\.isFailed) == [true])
  }

  @Test func a_completion_released_uncalled_is_recovered_as_a_failure() async throws {
    let forgetful = AsyncFunc<Int, Int>(name: "fused.forgetful") { _, _ in }
    let recovered = forgetful.recover { error in
      (error as? ContractViolation)?.kind == .completionNeverCalled ? 1 : 0
    }
    #expect(try await recovered(0) == 1)
  }

  @Test func steps_run_in_the_order_the_modifiers_were_applied() async throws {
    let failing = AsyncFunc<Int, Int>(name: "failing") { _, complete in
      complete(.failure(TestError(2)))
    }
    // recover first: settled sees the recovered value.
    let recoveredThenSettled = try await failing.recover { _ in 5 }.settled()(0)
    #expect(try recoveredThenSettled.get() == 5)
    // settled first: the failure is a value by the time recover could see it.
    let settledThenRecovered = try await failing.settled().recover { _ in .success(9) }(0)
    #expect(settledThenRecovered.failure as? TestError == TestError(2))
  }

  @Test func a_cancelled_run_ends_cancelled_and_a_late_failure_recovered_is_dropped() async {
    let parking = Parking<Int, Int>()
    let results = Recorder<Result<Int, any Error>>()
    let finished = Gate()
    let token = parking.function.recover { _ in 0 }.run(0) { result in
      results.record(result)
      finished.open()
    }
    await parking.waitForStarts(1)
    token.cancel()
    await finished.wait()
    parking.takeAll()[0].complete(.failure(TestError(1)))  // Recovered, but the run is over.
    #expect(results.count == 1)
    #expect(results.all.allSatisfy(isCancellation))
  }
}
