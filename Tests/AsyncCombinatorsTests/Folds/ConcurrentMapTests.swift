import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ConcurrentMapTests {
  @Test func concurrentMap_keeps_input_order_whatever_the_completion_order() async throws {
    try await forAll("concurrentMap keeps order", count: 30) { random, _ in
      let count = Int.random(in: 0...40, using: &random)
      let limit = Int.random(in: 1...10, using: &random)
      let queue = testQueue()
      let shuffle = AsyncFunc<Int, Int> { x, complete in
        queue.async { complete(.success(x * 10)) }
      }
      let output = try await shuffle.concurrentMap(limit: limit)(Array(0..<count))
      return output == (0..<count).map { $0 * 10 }
    }
  }

  @Test func concurrentMap_runs_at_most_limit_at_once_and_reaches_it() async throws {
    let parking = Parking<Int, Int>()
    let result = Task { try await parking.function.concurrentMap(limit: 3)(Array(0..<7)) }
    var completed = 0
    while completed < 7 {
      await parking.waitForStarts(min(completed + 3, 7))
      #expect(parking.started == min(completed + 3, 7))  // Exactly `limit` in flight.
      let parked = parking.takeAll()
      for run in parked.reversed() { run.complete(.success(run.input)) }
      completed += parked.count
    }
    #expect(try await result.value == Array(0..<7))
  }

  @Test func concurrentMap_of_an_empty_array_is_empty() async throws {
    let never = AsyncFunc<Int, Int> { _, _ in Issue.record("ran") }
    #expect(try await never.concurrentMap(limit: 2)([]) == [])
  }

  @Test func failures_within_tolerance_are_dropped_in_order() async throws {
    let failEvenTens = AsyncFunc<Int, Int>.sync { x in
      if x % 6 == 0 { throw TestError(x) }
      return x
    }
    let input = Array(0..<12)  // 0 and 6 fail: 2 of 12.
    let expected = input.filter { $0 % 6 != 0 }
    #expect(try await failEvenTens.concurrentMap(acceptableFailure: .ratio(0.2))(input) == expected)
    #expect(try await failEvenTens.concurrentMap(acceptableFailure: .count(2))(input) == expected)
    #expect(try await failEvenTens.concurrentMap(acceptableFailure: .unlimited)(input) == expected)
    await #expect(throws: FailureRateExceeded.self) {
      try await failEvenTens.concurrentMap(acceptableFailure: .ratio(0.1))(input)
    }
    await #expect(throws: FailureRateExceeded.self) {
      try await failEvenTens.concurrentMap(acceptableFailure: .count(1))(input)
    }
  }

  @Test func failure_rate_exceeded_lists_each_failed_index_and_error() async throws {
    let failing = AsyncFunc<Int, Int>.sync { x in
      if x >= 2 { throw TestError(x) }
      return x
    }
    let result = await runToCompletion(
      failing.concurrentMap(limit: 1, acceptableFailure: .count(1)), [0, 1, 2, 3, 4])
    let error = try #require(result.failure as? FailureRateExceeded)
    #expect(error.failures.map(\.index) == [2, 3])
    #expect(error.failures.map { $0.error as? TestError } == [TestError(2), TestError(3)])
    #expect(error.count == 5)
    #expect(error.tolerance == .count(1))
    #expect("\(error)".contains("#2: TestError(id: 2)"))
  }

  @Test func failure_beyond_tolerance_cancels_running_elements_and_starts_no_more() async {
    let parking = Parking<Int, Int>()
    let done = Gate()
    let outcome = Locked<Result<[Int], any Error>?>(nil)
    parking.function.concurrentMap(limit: 2).run(Array(0..<5)) { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await parking.waitForStarts(2)
    let parked = parking.takeAll()
    parked[0].complete(.failure(TestError(0)))
    await done.wait()
    #expect(parked[1].token.isCancelled)
    #expect(parking.started == 2)
    let error = outcome.withLock { $0?.failure } as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [0])
    parked[1].complete(.success(1))  // Late: dropped.
  }

  @Test func an_unlimited_map_starts_nothing_after_a_failure_beyond_tolerance() async {
    // Without a limit every element is claimed at once; the ones after the failure must still
    // never start.
    let starts = Locked(0)
    let failsAtThree = AsyncFunc<Int, Int> { x, complete in
      starts.withLock { $0 += 1 }
      complete(x == 3 ? .failure(TestError(x)) : .success(x))
    }
    let error = await #expect(throws: FailureRateExceeded.self) {
      try await failsAtThree.concurrentMap()(Array(0..<10))
    }
    #expect(error?.failures.map(\.index) == [3])
    #expect(starts.withLock { $0 } == 4)
  }

  @Test func a_map_that_finishes_cancels_none_of_its_elements() async throws {
    let parking = Parking<Int, Int>()
    let result = Task { try await parking.function.concurrentMap()([0, 1]) }
    await parking.waitForStarts(2)
    let parked = parking.takeAll()
    for run in parked { run.complete(.success(run.input)) }
    #expect(try await result.value == [0, 1])
    #expect(parked.allSatisfy { !$0.token.isCancelled })
  }

  @Test func cancelling_cancels_every_running_element_and_starts_no_new_ones() async {
    let parking = Parking<Int, Int>()
    let done = Gate()
    let outcome = Locked<Result<[Int], any Error>?>(nil)
    let token = parking.function.concurrentMap(limit: 3).run(Array(0..<10)) { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await parking.waitForStarts(3)
    token.cancel()
    await done.wait()
    let parked = parking.takeAll()
    #expect(parked.allSatisfy { $0.token.isCancelled })
    for run in parked { run.complete(.success(run.input)) }
    #expect(parking.started == 3)
    #expect(outcome.withLock { $0?.failure } is CancellationError)
  }

  @Test func a_limited_map_starts_its_elements_in_index_order_as_slots_free() async throws {
    let parking = Parking<Int, Int>()
    let result = Task { try await parking.function.concurrentMap(limit: 2)(Array(0..<6)) }
    await parking.waitForStarts(2)
    var running = parking.takeAll()
    var startOrder = running.map(\.input)
    // Free the newest slot first each time: the next element to start is still the next index.
    while !running.isEmpty {
      let newest = running.removeLast()
      let startedBefore = parking.started
      newest.complete(.success(newest.input))
      if startedBefore < 6 {
        await parking.waitForStarts(startedBefore + 1)
        let started = parking.takeAll()
        startOrder += started.map(\.input)
        running += started
      }
    }
    #expect(startOrder == Array(0..<6))
    #expect(try await result.value == Array(0..<6))
  }

  @Test func a_cancelled_limited_map_lets_go_of_the_elements_still_waiting() async {
    final class Payload: Sendable {}
    let parking = Parking<Payload, Int>()
    let done = Gate()
    weak var waiting: Payload?
    let token: CancellationToken
    do {
      let payloads = (0..<10).map { _ in Payload() }
      waiting = payloads[9]
      token = parking.function.concurrentMap(limit: 2).run(payloads) { _ in done.open() }
    }
    await parking.waitForStarts(2)
    token.cancel()
    await done.wait()
    for run in parking.takeAll() { run.complete(.success(0)) }
    #expect(parking.started == 2)
    #expect(waiting == nil)  // Neither the gate nor the fold holds it any longer.
  }

  @Test func cancelling_the_awaiting_task_cancels_the_map() async {
    let parking = Parking<Int, Int>()
    let task = Task { try await parking.function.concurrentMap(limit: 2)(Array(0..<4)) }
    await parking.waitForStarts(2)
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(parking.takeAll().allSatisfy { $0.token.isCancelled })
  }

  @Test func hundred_thousand_synchronous_elements_run_without_stack_growth() async throws {
    let inFlight = InFlight()
    let body = AsyncFunc<Int, Int> { x, complete in
      inFlight.enter()
      inFlight.leave()
      complete(.success(x &+ 1))
    }
    let output = try await body.concurrentMap(limit: 8)(Array(0..<100_000))
    #expect(output.count == 100_000)
    #expect(output.last == 100_000)
    #expect(inFlight.peak == 1)  // Synchronous elements end before the next starts.
  }

  @Test func hundred_thousand_asynchronous_elements_never_exceed_the_limit() async throws {
    let inFlight = InFlight()
    let queue = testQueue()
    let body = AsyncFunc<Int, Int> { x, complete in
      inFlight.enter()
      queue.async {
        inFlight.leave()
        complete(.success(x))
      }
    }
    let output = try await body.concurrentMap(limit: 8)(Array(0..<100_000))
    #expect(output == Array(0..<100_000))
    #expect(inFlight.peak <= 8)
    #expect(inFlight.now == 0)
  }

  @Test func description_reads_like_the_code() {
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    #expect("\(square.concurrentMap(limit: 2))" == "square.concurrentMap(limit: 2)")
    #expect("\(square.concurrentMap())" == "square.concurrentMap()")
    #expect(
      "\(square.concurrentMap(limit: 4, acceptableFailure: .ratio(0.5)))"
        == "square.concurrentMap(limit: 4, acceptableFailure: .ratio(0.5))")
    #expect(
      "\(square.concurrentMap(acceptableFailure: .count(1)))"
        == "square.concurrentMap(acceptableFailure: .count(1))")
  }

  @Test func a_limit_below_one_is_a_precondition_failure_naming_the_callers_line() async throws {
    // Inside an exit test, the caller's line is the line of the macro around it.
    let line = #line + 1
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.concurrentMap(limit: 0)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("concurrentMap(limit: 0): the limit must be at least 1"))
    #expect(message.contains("ConcurrentMapTests.swift:\(line)"))
  }
}
