import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ConcurrentFilterTests {
  @Test func filter_keeps_accepted_elements_in_order_within_the_limit() async throws {
    let inFlight = InFlight()
    let queue = testQueue()
    let isEven = AsyncFunc<Int, Bool> { x, complete in
      inFlight.enter()
      queue.async {
        inFlight.leave()
        complete(.success(x % 2 == 0))
      }
    }
    #expect(
      try await isEven.concurrentFilter(limit: 3)(Array(0..<50))
        == stride(from: 0, to: 50, by: 2).map { $0 })
    #expect(inFlight.peak <= 3)
  }

  @Test func a_failing_predicate_fails_the_filter() async {
    let failing = AsyncFunc<Int, Bool>.sync { x in
      if x == 3 { throw TestError(3) }
      return true
    }
    let result = await runToCompletion(failing.concurrentFilter(), [1, 2, 3])
    #expect(result.failure is FailureRateExceeded)
  }

  @Test func failed_predicates_within_tolerance_leave_their_elements_out() async throws {
    let isSmall = AsyncFunc<Int, Bool>.sync { x in
      if x % 3 == 0 { throw TestError(x) }
      return x < 7
    }
    let small = isSmall.concurrentFilter(limit: 2, acceptableFailure: .count(3))
    #expect(try await small(Array(1...9)) == [1, 2, 4, 5])
    let error =
      await runToCompletion(
        isSmall.concurrentFilter(limit: 1, acceptableFailure: .count(2)), Array(1...9)
      ).failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [2, 5, 8])
    #expect(error?.tolerance == .count(2))
  }

  @Test func filter_reports_progress_as_its_last_argument() async throws {
    let isEven = AsyncFunc<Int, Bool>.sync { $0 % 2 == 0 }
    let reports = Recorder<BatchProgress>()
    let evens = isEven.concurrentFilter(limit: 2, acceptableFailure: .zero) { reports.record($0) }
    #expect(try await evens([1, 2, 3, 4]) == [2, 4])
    #expect(reports.all.last == BatchProgress(completed: 4, failed: 0, inFlight: 0, total: 4))
  }

  @Test func description_reads_like_the_code() {
    let check = AsyncFunc<Int, Bool>.sync(name: "check") { _ in true }
    #expect("\(check.concurrentFilter(limit: 3))" == "check.concurrentFilter(limit: 3)")
    #expect(
      "\(check.concurrentFilter(acceptableFailure: .count(1)))"
        == "check.concurrentFilter(acceptableFailure: .count(1))")
  }

  @Test func a_limit_below_one_is_a_precondition_failure_that_names_the_filter() async throws {
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Bool>.sync { _ in true }.concurrentFilter(limit: 0)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("concurrentFilter(limit: 0): the limit must be at least 1"))
    #expect(message.contains("ConcurrentFilterTests.swift"))
  }
}
