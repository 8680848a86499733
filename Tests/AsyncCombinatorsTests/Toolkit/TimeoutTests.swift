import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct TimeoutTests {
  @Test func a_zero_timeout_times_out_a_result_that_comes_after_the_start_returned() async throws {
    // Completes after one hop: not before its start returns, so zero times it out, on every
    // clock.
    let hop = AsyncFunc<Int, Int> { x, complete in
      DispatchQueue.global().async { complete(.success(x)) }
    }
    let outcomes = [
      await runToCompletion(hop.timeout(.zero), 1),
      await runToCompletion(hop.timeout(.zero, clock: TestClock()), 1),
    ]
    for outcome in outcomes {
      #expect(outcome.failure as? TimeoutError == TimeoutError(duration: .zero))
    }
    let synchronous = AsyncFunc<Int, Int>.sync { $0 }
    #expect(try await synchronous.timeout(.zero)(2) == 2)
  }

  @Test func a_result_in_time_passes_through() async throws {
    // On a clock that never moves: the result is in time however long a loaded machine
    // takes to run the body.
    let clock = TestClock()
    let quick = AsyncFunc<Int, Int>.async { $0 + 1 }
    #expect(try await quick.timeout(.seconds(30), clock: clock)(1) == 2)
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    await #expect(throws: TestError(1)) {
      try await failing.timeout(.seconds(30), clock: clock)(1)
    }
  }

  @Test func a_late_result_fails_with_timeout_error_and_cancels_the_inner_run() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    parking.function.timeout(.milliseconds(20), clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
    }
    clock.advance(by: .milliseconds(20))
    let result = outcome.withLock { $0 }
    #expect(result?.failure as? TimeoutError == TimeoutError(duration: .milliseconds(20)))
    let parked = parking.takeAll()
    #expect(parked.count == 1 && parked[0].token.isCancelled)
    parked[0].complete(.success(1))  // Late: dropped.
    #expect(outcome.withLock { $0?.failure } is TimeoutError)
  }

  @Test func a_late_result_times_out_on_the_default_clock_too() async {
    let parking = Parking<Int, Int>()
    let result = await runToCompletion(parking.function.timeout(.milliseconds(1)), 1)
    #expect(result.failure as? TimeoutError == TimeoutError(duration: .milliseconds(1)))
    #expect(parking.takeAll()[0].token.isCancelled)
  }

  @Test(.timeLimit(.minutes(1)))
  func a_long_timeout_armed_in_a_batch_still_fires_on_the_default_clock() async {
    // A tenth of a second or more is armed a millisecond later, with its batch.
    let parking = Parking<Int, Int>()
    let result = await runToCompletion(parking.function.timeout(.milliseconds(100)), 1)
    #expect(result.failure as? TimeoutError == TimeoutError(duration: .milliseconds(100)))
    #expect(parking.takeAll()[0].token.isCancelled)
  }

  @Test func a_zero_timeout_does_not_fail_a_synchronous_stage() throws {
    let clock = TestClock()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    AsyncFunc<Int, Int>.sync { $0 + 1 }.timeout(.zero, clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
    }
    #expect(try outcome.withLock { $0 }?.get() == 2)
    #expect(clock.pendingCount == 0)  // No timer was armed at all.
  }

  @Test func a_zero_timeout_on_the_default_clock_does_not_fail_synchronous_stages() async throws {
    let bounded = AsyncFunc<Int, Int>.sync { $0 + 1 }.timeout(.zero)
    for input in 0..<1_000 {
      let result = await runToCompletion(bounded, input)
      #expect(try result.get() == input + 1)
    }
  }

  @Test func a_zero_timeout_fails_a_stage_that_completes_later() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    parking.function.timeout(.zero, clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
    }
    #expect(outcome.withLock { $0?.failure } is TimeoutError)
    #expect(parking.takeAll().first?.token.isCancelled == true)
  }

  @Test func cancelling_the_run_cancels_the_inner_run_and_the_timer() async {
    let parking = Parking<Int, Int>()
    let done = Gate()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = parking.function.timeout(.seconds(30)).run(1) { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await parking.waitForStarts(1)
    token.cancel()
    await done.wait()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(parking.takeAll()[0].token.isCancelled)
  }

  @Test func description_reads_like_the_code() {
    let slow = AsyncFunc<Int, Int>.sync(name: "slow") { $0 }
    #expect("\(slow.timeout(.seconds(2)))" == "slow.timeout(2.0 seconds)")
    #expect(
      "\(TimeoutError(duration: .seconds(2)))" == "TimeoutError: no result within 2.0 seconds")
  }

  @Test func a_negative_duration_is_a_precondition_failure_naming_the_callers_line()
    async throws
  {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.timeout(.seconds(-1))
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("the duration must not be negative"))
    #expect(message.contains("TimeoutTests.swift"))
  }

  @Test func a_negative_delay_names_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.delay(.seconds(-1))
      })
    #expect(
      String(decoding: result.standardErrorContent, as: UTF8.self).contains("TimeoutTests.swift"))
  }
}

/// The default clock's timers are shared by every test in the process, so these count only
/// timers due more than six hours from now, which no other test arms; serialized, so that
/// each count is one test's own.
@Suite(.serialized) struct TimeoutTimerRemovalTests {
  static let hours = Duration.seconds(7 * 3600)
  static func farTimers() -> Int {
    SharedTimers.shared.pendingCount(dueAfter: .now() + .seconds(6 * 3600))
  }

  @Test func the_default_clocks_timer_is_removed_when_the_result_arrives() async throws {
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    parking.function.timeout(Self.hours).run(1) { result in outcome.withLock { $0 = result } }
    #expect(Self.farTimers() == 1)  // Armed before `run` returns: the stage started inline.
    parking.takeAll()[0].complete(.success(2))
    #expect(try outcome.withLock { $0 }?.get() == 2)
    #expect(Self.farTimers() == 0)
  }

  @Test func the_default_clocks_timer_is_removed_when_the_run_is_cancelled() async {
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = parking.function.timeout(Self.hours).run(1) { result in
      outcome.withLock { $0 = result }
    }
    #expect(Self.farTimers() == 1)
    token.cancel()
    #expect(Self.farTimers() == 0)  // At once, before the inner run has answered.
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(parking.takeAll()[0].token.isCancelled)
  }

  @Test func the_runs_token_keeps_no_registration_once_the_result_arrives() throws {
    // The inner stage registers on its token and never removes it: that links the inner token
    // to the run's, and the race must undo the link, and its own handler, once the result is in.
    let parked = Locked<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let stage = AsyncFunc<Int, Int> { input, token, complete in
      token.onCancel {}
      parked.withLock { $0 = complete }
    }
    let token = CancellationToken()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    stage.timeout(Self.hours).run(1, token: token) { result in outcome.withLock { $0 = result } }
    #expect(Self.farTimers() == 1)
    // The run's, the race's, and the link of the inner token, which the stage is on.
    #expect(token.registrationCount == 3)
    parked.withLock { $0 }?(.success(2))
    #expect(try outcome.withLock { $0 }?.get() == 2)
    #expect(Self.farTimers() == 0)
    #expect(token.registrationCount == 0)
  }

  @Test func timers_come_off_in_any_order() async throws {
    // Results arrive in a random order, and now and then the token is cancelled partway:
    // each timer comes off when its result arrives, or all of them with their token, and
    // the token keeps no registration either way.
    try await forAll("timers come off in any order", count: 30) { random, _ in
      let parking = Parking<Int, Int>()
      let token = CancellationToken()
      let runs = Int.random(in: 1...60, using: &random)
      for index in 0..<runs {
        parking.function.timeout(Self.hours).run(index, token: token) { _ in }
      }
      let parked = parking.takeAll().shuffled(using: &random)
      let cancelAt = Bool.random(using: &random) ? Int.random(in: 0..<runs, using: &random) : nil
      var pending = runs
      for (done, run) in parked.enumerated() {
        if done == cancelAt {
          token.cancel()
          pending = 0
        }
        run.complete(.success(1))
        if pending > 0 { pending -= 1 }
        let timers = Self.farTimers()
        guard timers == pending else {
          print(
            "runs \(runs), cancelled at \(String(describing: cancelAt)), after \(done):",
            "\(timers) timers, \(pending) expected")
          return false
        }
      }
      return token.registrationCount == 0
    }
  }

  @Test func cancelling_a_token_takes_off_only_its_own_timers() {
    let parking = Parking<Int, Int>()
    let (cancelled, kept) = (CancellationToken(), CancellationToken())
    for index in 0..<500 {
      parking.function.timeout(Self.hours).run(index, token: cancelled) { _ in }
      parking.function.timeout(Self.hours).run(index, token: kept) { _ in }
    }
    #expect(Self.farTimers() == 1_000)
    cancelled.cancel()
    #expect(Self.farTimers() == 500)  // At once: the inner runs have not answered.
    for parked in parking.takeAll() { parked.complete(.success(1)) }
    #expect(Self.farTimers() == 0)
    #expect(kept.registrationCount == 0)
  }

  @Test func no_timer_is_left_by_cancellations_racing_the_results() async throws {
    // Each run is cancelled from one thread while its result arrives on another: whichever
    // wins, the timer comes off and the run's token holds nothing.
    let runs = 2_000
    let parking = Parking<Int, Int>()
    let tokens = (0..<runs).map { _ in CancellationToken() }
    let finished = Tally()
    for index in 0..<runs {
      parking.function.timeout(Self.hours).run(index, token: tokens[index]) { _ in
        finished.add()
      }
    }
    let parked = parking.takeAll()
    #expect(parked.count == runs)
    DispatchQueue.concurrentPerform(iterations: 2 * runs) { job in
      if job % 2 == 0 { tokens[job / 2].cancel() } else { parked[job / 2].complete(.success(1)) }
    }
    #expect(finished.value == runs)
    #expect(Self.farTimers() == 0)
    #expect(tokens.allSatisfy { $0.registrationCount == 0 })
  }

  @Test func no_timer_is_left_by_results_racing_the_arming() async throws {
    // Each result arrives on another thread while its stage arms the timer, on either side of
    // the moment the timer is stored: every timer must come off, and every result through.
    let hop = AsyncFunc<Int, Int> { input, _, complete in
      DispatchQueue.global().async { complete(.success(input * 2)) }
    }
    let outputs = try await hop.timeout(Self.hours).concurrentMap()(Array(0..<5_000))
    #expect(outputs == (0..<5_000).map { $0 * 2 })
    #expect(Self.farTimers() == 0)
    let synchronous = AsyncFunc<Int, Int>.sync { $0 }.timeout(Self.hours)
    #expect(try await synchronous(1) == 1)
    #expect(Self.farTimers() == 0)
  }
}
