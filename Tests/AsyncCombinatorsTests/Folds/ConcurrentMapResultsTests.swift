import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ConcurrentMapResultsTests {
  struct ParseError: Error {}

  @Test func results_keep_every_outcome_in_input_order() async throws {
    let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
      guard let number = Int(text) else { throw ParseError() }
      return number
    }
    let outcomes = try await parse.concurrentMapResults(limit: 2)(["1", "x", "3"])
    #expect(outcomes.map { (try? $0.get()).map(String.init) ?? "failed" } == ["1", "failed", "3"])
    #expect(outcomes[1].failure is ParseError)
  }

  @Test func results_hold_each_failure_where_it_happened_whatever_the_finishing_order()
    async throws
  {
    let parking = Parking<Int, Int>()
    let result = Task {
      await runToCompletion(parking.function.concurrentMapResults(limit: 4), [0, 1, 2, 3])
    }
    await parking.waitForStarts(4)
    let parked = parking.takeAll()
    for index in [3, 1, 0, 2] {
      parked[index].complete(
        index.isMultiple(of: 2) ? .success(index * 10) : .failure(TestError(index)))
    }
    let outcomes = try await result.value.get()
    #expect(outcomes.map { try? $0.get() } == [0, nil, 20, nil])
    #expect(outcomes.map { $0.failure as? TestError } == [nil, TestError(1), nil, TestError(3)])
  }

  @Test func results_still_fail_beyond_tolerance_carrying_every_failure_seen() async {
    let work = AsyncFunc<Int, Int>.sync(name: "work") { x in
      if x % 3 == 0 { throw TestError(x) }
      return x
    }
    let result = await runToCompletion(
      work.concurrentMapResults(limit: 1, acceptableFailure: .count(2)), Array(0..<10))
    let error = result.failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [0, 3, 6])
    #expect(
      error?.failures.map { $0.error as? TestError } == [TestError(0), TestError(3), TestError(6)])
    #expect(error?.count == 10)
  }

  @Test func results_describe_themselves_and_report_progress() async throws {
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    #expect("\(square.concurrentMapResults())" == "square.concurrentMapResults()")
    #expect(
      "\(square.concurrentMapResults(limit: 2, acceptableFailure: .count(1)))"
        == "square.concurrentMapResults(limit: 2, acceptableFailure: .count(1))")
    let reports = Recorder<Int>()
    let outcomes = try await square.concurrentMapResults(limit: 2) { reports.record($0.completed) }(
      [1, 2])
    #expect(outcomes.map { try? $0.get() } == [1, 4])
    #expect(reports.all.last == 2)  // Reports may be coalesced; the last always comes.
    #expect(try await square.concurrentMapResults()([]).isEmpty)
  }

  @Test func a_limit_below_one_is_a_precondition_failure_naming_the_callers_line() async throws {
    // Inside an exit test, the caller's line is the line of the macro around it.
    let line = #line + 1
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.concurrentMapResults(limit: 0)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("concurrentMapResults(limit: 0): the limit must be at least 1"))
    #expect(message.contains("ConcurrentMapResultsTests.swift:\(line)"))
  }
}
