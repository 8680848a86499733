import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ConcurrentForEachTests {
  @Test func forEach_runs_every_element() async throws {
    let seen = Recorder<Int>()
    let record = AsyncFunc<Int, Void>.async { seen.record($0) }
    try await record.concurrentForEach(limit: 2)(Array(0..<20))
    #expect(seen.all.sorted() == Array(0..<20))
  }

  @Test func forEach_tolerates_failures_as_asked() async throws {
    let failOdd = AsyncFunc<Int, Void>.sync { if $0 % 2 == 1 { throw TestError($0) } }
    try await failOdd.concurrentForEach(acceptableFailure: .ratio(0.5))(Array(0..<10))
    await #expect(throws: FailureRateExceeded.self) {
      try await failOdd.concurrentForEach(acceptableFailure: .ratio(0.4))(Array(0..<10))
    }
  }

  @Test func compactMap_keeps_the_non_nil_outputs_in_order() async throws {
    let parse = AsyncFunc<String, Int?>.async { Int($0) }
    #expect(
      try await parse.concurrentCompactMap(limit: 2)(["1", "x", "3", "y", "5"]) == [1, 3, 5])
  }

  @Test func compactMap_tolerates_failures_and_reports_progress_last() async throws {
    let parse = AsyncFunc<String, Int?>.sync { text in
      if text == "!" { throw TestError(0) }
      return Int(text)
    }
    let reports = Recorder<BatchProgress>()
    let numbers = parse.concurrentCompactMap(limit: 2, acceptableFailure: .count(1)) {
      reports.record($0)
    }
    #expect(try await numbers(["1", "!", "x", "4"]) == [1, 4])
    #expect(reports.all.last == BatchProgress(completed: 4, failed: 1, inFlight: 0, total: 4))
  }

  @Test func a_limit_below_one_is_a_precondition_failure_that_names_the_fold_called() async throws {
    let forEach = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Void>.sync { _ in }.concurrentForEach(limit: 0)
      })
    #expect(
      String(decoding: forEach.standardErrorContent, as: UTF8.self)
        .contains("concurrentForEach(limit: 0): the limit must be at least 1"))
    #expect(
      String(decoding: forEach.standardErrorContent, as: UTF8.self)
        .contains("ConcurrentForEachTests.swift"))
    let compactMap = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int?>.sync { $0 }.concurrentCompactMap(limit: -1)
      })
    #expect(
      String(decoding: compactMap.standardErrorContent, as: UTF8.self)
        .contains("concurrentCompactMap(limit: -1): the limit must be at least 1"))
    #expect(
      String(decoding: compactMap.standardErrorContent, as: UTF8.self)
        .contains("ConcurrentForEachTests.swift"))
  }
}
