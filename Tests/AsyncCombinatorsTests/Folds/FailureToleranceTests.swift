import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct FailureToleranceTests {
  @Test func allowed_failures_follow_the_tolerance() {
    #expect(FailureTolerance.zero.allowedFailures(outOf: 100) == 0)
    #expect(FailureTolerance.count(3).allowedFailures(outOf: 100) == 3)
    #expect(FailureTolerance.unlimited.allowedFailures(outOf: 100) == .max)
    #expect(FailureTolerance.ratio(0.1).allowedFailures(outOf: 12) == 1)
    #expect(FailureTolerance.ratio(0.2).allowedFailures(outOf: 12) == 2)
    #expect(FailureTolerance.ratio(0.5).allowedFailures(outOf: 7) == 3)
    #expect(FailureTolerance.ratio(0.29).allowedFailures(outOf: 100) == 29)
    #expect(FailureTolerance.ratio(0.3).allowedFailures(outOf: 10) == 3)
    #expect(FailureTolerance.ratio(1).allowedFailures(outOf: 10) == 10)
  }

  @Test func description_reads_like_the_code() {
    #expect("\(FailureTolerance.zero)" == ".zero")
    #expect("\(FailureTolerance.unlimited)" == ".unlimited")
    #expect("\(FailureTolerance.count(2))" == ".count(2)")
    #expect("\(FailureTolerance.ratio(0.5))" == ".ratio(0.5)")
  }

  @Test func a_negative_count_is_a_precondition_failure_naming_the_callers_line() async throws {
    // Inside an exit test, the caller's line is the line of the macro around it.
    let line = #line + 1
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = FailureTolerance.count(-1)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("FailureTolerance.count(-1): the count must not be negative"))
    #expect(message.contains("FailureToleranceTests.swift:\(line)"))
  }

  @Test func a_ratio_outside_zero_to_one_is_a_precondition_failure_naming_the_callers_line()
    async throws
  {
    // Inside an exit test, the caller's line is the line of the macro around it.
    let line = #line + 1
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = FailureTolerance.ratio(1.5)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("FailureTolerance.ratio(1.5): the ratio must be in 0...1"))
    #expect(message.contains("FailureToleranceTests.swift:\(line)"))
    await #expect(processExitsWith: .failure) { _ = FailureTolerance.ratio(.nan) }
  }
}
