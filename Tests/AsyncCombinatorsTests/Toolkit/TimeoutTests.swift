import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

@Suite struct TimeoutTests {
  @Test func a_result_in_time_passes_through() async throws {
    let quick = AsyncFunc<Int, Int>.async { $0 + 1 }
    #expect(try await quick.timeout(.seconds(30))(1) == 2)
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    await #expect(throws: TestError(1)) { try await failing.timeout(.seconds(30))(1) }
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

  /// For an exit test, in its own process: holds the shared timers' batches, then starts
  /// `runs` parked runs on one token, each bounded by `duration`.
  static func startWithBatchesHeld(_ runs: Int, _ duration: Duration)
    -> (Parking<Int, Int>, CancellationToken)
  {
    SharedTimers.shared.holdBatchesForTesting()
    let parking = Parking<Int, Int>()
    let token = CancellationToken()
    for index in 0..<runs {
      parking.function.timeout(duration).run(index, token: token) { _ in }
    }
    return (parking, token)
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
    // The inner stage registers on its token and never removes it: that links the race to the
    // run's token, and the race must undo the link once the result is in.
    let parked = Locked<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let stage = AsyncFunc<Int, Int> { input, token, complete in
      token.onCancel {}
      parked.withLock { $0 = complete }
    }
    let token = CancellationToken()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    stage.timeout(Self.hours).run(1, token: token) { result in outcome.withLock { $0 = result } }
    #expect(Self.farTimers() == 1)
    #expect(token.registrationCount == 3)  // The run's, the race's, and the link.
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

  @Test func a_run_that_finishes_before_its_batch_is_armed_never_arms_a_timer() async {
    // In a process of its own, whose batches wait for a count to arm them: what a run's
    // long timeout leaves behind is then seen before and after its batch is armed.
    await #expect(processExitsWith: .success) {
      let (parking, token) = TimeoutTimerRemovalTests.startWithBatchesHeld(
        1_000, .seconds(7 * 3600))
      precondition(token.registrationCount == 1_000, "only the runs' own handlers")
      let parked = parking.takeAll()
      for run in parked.prefix(900) { run.complete(.success(1)) }
      // Counting arms the batch: only the hundred runs still going get a timer and a handler.
      precondition(SharedTimers.shared.pendingCount == 100)
      precondition(token.registrationCount == 200)
      for run in parked.dropFirst(900) { run.complete(.success(1)) }
      precondition(SharedTimers.shared.pendingCount == 0)
      precondition(token.registrationCount == 0)
    }
  }

  @Test func a_run_cancelled_before_its_batch_is_armed_keeps_no_timer() async {
    // Arming a batch after its runs' token was cancelled runs each handler at once, in the
    // middle of arming: the race must then take back the timer it has just scheduled.
    await #expect(processExitsWith: .success) {
      let (parking, token) = TimeoutTimerRemovalTests.startWithBatchesHeld(100, .seconds(7 * 3600))
      token.cancel()
      precondition(SharedTimers.shared.pendingCount == 0, "a cancelled run armed a timer")
      precondition(token.registrationCount == 0)
      withExtendedLifetime(parking.takeAll()) {}
    }
  }

  @Test func a_run_still_going_at_its_batch_waits_in_a_longer_one_until_its_deadline_nears() async {
    // A fold wider than its workers keep up with leaves thousands of runs going past their
    // first millisecond; each waits, level by level, until four of the next level's waits
    // would pass its deadline, and only then arms its timer.
    await #expect(processExitsWith: .success) {
      let (hours, token) = TimeoutTimerRemovalTests.startWithBatchesHeld(60, .seconds(7 * 3600))
      let (seconds, _) = TimeoutTimerRemovalTests.startWithBatchesHeld(40, .seconds(3))
      let timers = SharedTimers.shared
      precondition(timers.waitingCount(level: 0) == 100)
      // Levels 0 to 3 wait 1, 4, 16 and 64 ms: each is followed by one whose four waits
      // (64 ms to 4 s) still end before the 3 s deadline.
      for level in 0...3 {
        timers.lookAtBatch(level: level)
        precondition(timers.armedCount == 0, "armed at level \(level)")
        precondition(timers.waitingCount(level: level + 1) == 100)
      }
      precondition(token.registrationCount == 60, "only the runs' own handlers")
      timers.lookAtBatch(level: 4)  // Four waits of a second: past the 3 s deadline.
      precondition(timers.armedCount == 40)
      precondition(timers.waitingCount(level: 5) == 60)
      timers.lookAtBatch(level: 5)  // The last level arms whatever is still waiting.
      precondition(timers.armedCount == 100)
      precondition(token.registrationCount == 120)
      for run in hours.takeAll() + seconds.takeAll() { run.complete(.success(1)) }
      precondition(timers.armedCount == 0)
      precondition(token.registrationCount == 0)
    }
  }

  @Test func a_batch_lets_go_of_runs_that_finished_or_were_cancelled_while_they_waited() async {
    await #expect(processExitsWith: .success) {
      let (parking, token) = TimeoutTimerRemovalTests.startWithBatchesHeld(30, .seconds(7 * 3600))
      let (cancelledParking, cancelled) = TimeoutTimerRemovalTests.startWithBatchesHeld(
        30, .seconds(7 * 3600))
      let timers = SharedTimers.shared
      let parked = parking.takeAll()
      for run in parked.prefix(10) { run.complete(.success(1)) }
      cancelled.cancel()
      timers.lookAtBatch(level: 0)
      precondition(timers.waitingCount(level: 1) == 20, "only the runs still going wait on")
      for run in parked.dropFirst(10) { run.complete(.success(1)) }
      timers.lookAtBatch(level: 1)
      precondition(timers.waitingCount(level: 2) == 0)
      precondition(timers.armedCount == 0)
      precondition(token.registrationCount == 0)
      withExtendedLifetime(cancelledParking.takeAll()) {}
    }
  }

  @Test func the_first_batch_fixes_a_deadline_never_earlier_than_the_start_allows() async {
    // The start reads no clock: the batch that first looks at the run fixes its deadline from
    // its own reading, taken after the run was queued.
    await #expect(processExitsWith: .success) {
      let start = DispatchTime.now().uptimeNanoseconds
      let (parking, _) = TimeoutTimerRemovalTests.startWithBatchesHeld(20, .seconds(3))
      let timers = SharedTimers.shared
      for level in 0...4 { timers.lookAtBatch(level: level) }  // Armed at level 4.
      let armed = DispatchTime.now().uptimeNanoseconds
      precondition(timers.armedCount == 20)
      let threeSeconds: UInt64 = 3_000_000_000
      let notEarly = timers.pendingCount(
        dueAfter: DispatchTime(uptimeNanoseconds: start + threeSeconds - 1))
      precondition(notEarly == 20, "a deadline came before its run's start plus 3 s")
      let late = timers.pendingCount(
        dueAfter: DispatchTime(uptimeNanoseconds: armed + threeSeconds))
      precondition(late == 0, "a deadline came after its batch's reading plus 3 s")
      for run in parking.takeAll() { run.complete(.success(1)) }
    }
  }

  @Test func a_finished_run_waiting_in_a_batch_lets_go_of_its_completion() async {
    // A race may wait in a batch for up to a second after its run is over: it must not hold
    // the run's completion, nor what that captured, meanwhile.
    await #expect(processExitsWith: .success) {
      SharedTimers.shared.holdBatchesForTesting()
      final class Tracked: Sendable {}
      let parking = Parking<Int, Int>()
      weak var weakTracked: Tracked?
      do {
        let tracked = Tracked()
        weakTracked = tracked
        parking.function.timeout(.seconds(7 * 3600)).run(1) { _ in _ = tracked }
      }
      parking.takeAll()[0].complete(.success(1))
      precondition(SharedTimers.shared.waitingCount(level: 0) == 1, "the race still waits")
      precondition(weakTracked == nil, "a waiting race held the run's completion")
    }
  }

  @Test func a_short_timeout_is_armed_at_once() async {
    // Under a tenth of a second a timer is not worth batching: being armed a millisecond
    // late would show.
    await #expect(processExitsWith: .success) {
      let (parking, token) = TimeoutTimerRemovalTests.startWithBatchesHeld(1, .milliseconds(99))
      precondition(token.registrationCount == 2, "the run's handler and its timer's")
      parking.takeAll()[0].complete(.success(1))
      precondition(token.registrationCount == 0)
    }
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
