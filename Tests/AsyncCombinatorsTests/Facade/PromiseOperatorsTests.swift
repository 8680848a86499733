import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

// Promise(value:), Promise(error:), timeout, retry, delay, race, tap and flatMapError.
@Suite struct PromiseOperatorsTests {
  // MARK: Constant promises

  @Test func a_value_promise_succeeds_with_its_value_and_a_then_follows() async throws {
    #expect(try await Promise(value: 41).then { $0 + 1 }.value == 42)
  }

  @Test func an_error_promise_fails_and_skips_the_thens_that_follow() async {
    let thens = Recorder<Int>()
    await #expect(throws: TestError(9)) {
      try await Promise<Int>(error: TestError(9)).then { thens.record($0) }.value
    }
    #expect(thens.all.isEmpty)
  }

  // MARK: timeout

  @Test func timeout_fails_a_late_chain_with_timeout_error_and_cancels_it() {
    let clock = TestClock()
    let parking = Parking<Void, Int>()
    let results = Recorder<Result<Int, any Error>>()
    Promise(parking.function).timeout(.seconds(1), clock: clock).chain.run(()) {
      results.record($0)
    }
    let run = parking.takeAll()[0]
    clock.advance(by: .milliseconds(999))
    #expect(results.all.isEmpty)
    clock.advance(by: .milliseconds(1))
    #expect(results.all.count == 1)
    #expect(throws: TimeoutError(duration: .seconds(1))) { try results.all[0].get() }
    #expect(run.token.isCancelled)
  }

  @Test func timeout_passes_a_value_that_comes_in_time_and_removes_its_timer() {
    let clock = TestClock()
    let parking = Parking<Void, Int>()
    let results = Recorder<Int?>()
    Promise(parking.function).timeout(.seconds(1), clock: clock).chain.run(()) {
      results.record(try? $0.get())
    }
    parking.takeAll()[0].complete(.success(7))
    #expect(results.all == [7])
    #expect(clock.pendingCount == 0)
  }

  // MARK: retry

  @Test func retry_runs_the_whole_chain_again_until_it_succeeds() {
    let parking = Parking<Void, Int>()
    let results = Recorder<Int?>()
    let checks = Recorder<Int>()
    // Two stages, both synchronous here: a failure of the second runs the first again.
    let check = AsyncFunc<Int, Int>.sync { x in
      checks.record(x)
      guard x > 0 else { throw TestError(x) }
      return x * 10
    }
    Promise(parking.function +> check).retry(2).chain.run(()) { results.record(try? $0.get()) }
    parking.takeAll()[0].complete(.success(0))
    #expect(parking.started == 2)
    parking.takeAll()[0].complete(.success(3))
    #expect(results.all == [30])
    #expect(checks.all == [0, 3])
  }

  @Test func retry_fails_with_the_last_error_and_skips_errors_it_declines() {
    let parking = Parking<Void, Int>()
    let results = Recorder<Result<Int, any Error>>()
    Promise(parking.function).retry(5, if: { ($0 as? TestError)?.id != 2 }).chain.run(()) {
      results.record($0)
    }
    parking.takeAll()[0].complete(.failure(TestError(1)))
    parking.takeAll()[0].complete(.failure(TestError(2)))  // Declined: no third attempt.
    #expect(parking.started == 2)
    #expect(throws: TestError(2)) { try results.all[0].get() }
  }

  @Test func retry_never_retries_a_cancellation() {
    let parking = Parking<Void, Int>()
    let results = Recorder<Result<Int, any Error>>()
    Promise(parking.function).retry(3).chain.run(()) { results.record($0) }
    parking.takeAll()[0].complete(.failure(CancellationError()))
    #expect(parking.started == 1)
    #expect(isCancellation(results.all[0]))
  }

  // MARK: delay

  @Test func delay_passes_the_value_on_once_the_clock_reaches_it() {
    let clock = TestClock()
    let results = Recorder<Int?>()
    Promise(value: 5).delay(.seconds(2), clock: clock).chain.run(()) {
      results.record(try? $0.get())
    }
    #expect(clock.pendingCount == 1)
    clock.advance(by: .seconds(1))
    #expect(results.all.isEmpty)
    clock.advance(by: .seconds(1))
    #expect(results.all == [5])
  }

  @Test func delay_does_not_delay_a_failure() {
    let clock = TestClock()
    let results = Recorder<Result<Int, any Error>>()
    Promise<Int>(error: TestError(3)).delay(.seconds(2), clock: clock).chain.run(()) {
      results.record($0)
    }
    #expect(clock.pendingCount == 0)
    #expect(throws: TestError(3)) { try results.all[0].get() }
  }

  // MARK: race

  @Test func race_takes_the_first_success_and_cancels_the_others() {
    let parking = Parking<Void, Int>()
    let results = Recorder<Int?>()
    let contenders = (0..<3).map { _ in Promise(parking.function) }
    race(contenders).chain.run(()) { results.record(try? $0.get()) }
    let runs = parking.takeAll()
    #expect(runs.count == 3)
    runs[1].complete(.failure(TestError(1)))  // A failure does not end the race.
    #expect(results.all.isEmpty)
    runs[2].complete(.success(2))
    #expect(results.all == [2])
    #expect(runs[0].token.isCancelled)
  }

  @Test func race_fails_with_the_last_failure_when_every_promise_fails() {
    let parking = Parking<Void, Int>()
    let results = Recorder<Result<Int, any Error>>()
    race([Promise(parking.function), Promise(parking.function)]).chain.run(()) {
      results.record($0)
    }
    let runs = parking.takeAll()
    runs[1].complete(.failure(TestError(1)))
    runs[0].complete(.failure(TestError(0)))
    #expect(throws: TestError(0)) { try results.all[0].get() }
  }

  @Test func race_of_no_promises_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = race([Promise<Int>]())
    }
  }

  // MARK: tap

  @Test func tap_sees_the_value_or_the_error_on_its_queue_and_passes_it_on() async throws {
    let key = DispatchSpecificKey<Bool>()
    let queue = DispatchQueue(label: "tap")
    queue.setSpecific(key: key, value: true)
    let seen = Recorder<String>()
    let value = try await firstly { 6 }
      .tap(on: queue) { result in
        seen.record("\((try? result.get()) ?? -1) \(DispatchQueue.getSpecific(key: key) == true)")
      }
      .then { $0 * 7 }
      .value
    #expect(value == 42)
    await #expect(throws: TestError(5)) {
      try await Promise<Int>(error: TestError(5))
        .tap { result in seen.record("\(result)") }
        .value
    }
    #expect(seen.all == ["6 true", "\(Result<Int, any Error>.failure(TestError(5)))"])
  }

  // MARK: flatMapError

  @Test func flatMapError_goes_on_with_the_promise_its_block_returns() async throws {
    let seen = Recorder<Int>()
    let value = try await Promise<Int>(error: TestError(4))
      .flatMapError { error in
        seen.record((error as? TestError)?.id ?? -1)
        return firstly { 40 }.then { $0 + 2 }
      }
      .value
    #expect(value == 42)
    #expect(seen.all == [4])
  }

  @Test func flatMapError_leaves_a_success_alone_and_a_throw_is_the_new_failure() async throws {
    let calls = Recorder<Int>()
    let value = try await Promise(value: 5).flatMapError { _ in
      calls.record(0)
      return Promise(value: -1)
    }.value
    #expect(value == 5)
    #expect(calls.all.isEmpty)
    await #expect(throws: TestError(2)) {
      try await Promise<Int>(error: TestError(1)).flatMapError { _ in throw TestError(2) }.value
    }
  }

  @Test func flatMapError_never_recovers_a_cancellation() async {
    let calls = Recorder<Int>()
    await #expect(throws: CancellationError.self) {
      try await Promise<Int>(error: CancellationError()).flatMapError { _ in
        calls.record(0)
        return Promise(value: 0)
      }.value
    }
    #expect(calls.all.isEmpty)
  }

  @Test func cancelling_the_chain_cancels_the_promise_flatMapError_runs() async {
    let parking = Parking<Void, Int>()
    let finished = Gate()
    let token = Promise<Int>(error: TestError(1))
      .flatMapError { _ in Promise(parking.function) }
      .always { finished.open() }
      .error { _ in }
    await parking.waitForStarts(1)
    let fallback = parking.takeAll()[0]
    #expect(!fallback.token.isCancelled)
    token.cancel()
    await finished.wait()
    #expect(fallback.token.isCancelled)
    fallback.complete(.success(2))  // too late: dropped
  }
}
