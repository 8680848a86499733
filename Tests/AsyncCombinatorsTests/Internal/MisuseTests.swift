import AsyncCombinators
import AsyncCombinatorsTesting
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A misuse stops the program with `fatalError`, whose message, file and line a release build
/// keeps (`.ci/misuse-release` checks that build); here, in a debug build, each misuse that
/// did not name its caller, or was not a misuse, is checked for its message and the caller's
/// file.
@Suite struct MisuseTests {
  /// The standard error of an exit test's run.
  static func standardError(_ result: ExitTest.Result) -> String {
    String(decoding: result.standardErrorContent, as: UTF8.self)
  }

  @Test func a_misuse_names_the_caller_and_the_rule_after_one_prefix() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        require(true, "never", file: "Client/main.swift", line: 1)
        require(false, "limit(0): the limit must be at least 1", file: "Client/main.swift", line: 7)
      })
    #expect(
      Self.standardError(result).contains(
        "Client/main.swift:7: Fatal error: AsyncCombinators misuse: limit(0): the limit must be"))
  }

  @Test func a_negative_queue_wait_is_a_misuse_naming_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = QueueLimit.wait(.seconds(-1))
      })
    let message = Self.standardError(result)
    #expect(
      message.contains("QueueLimit.wait(-1.0 seconds): the longest wait must not be negative"))
    #expect(message.contains("MisuseTests.swift:"))
  }

  @Test func a_zero_queue_wait_is_allowed() {
    #expect(QueueLimit.wait(.zero).description == "wait(0.0 seconds)")
  }

  @Test func a_work_queue_limit_below_one_names_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = WorkQueue(limit: 0)
      })
    let message = Self.standardError(result)
    #expect(message.contains("WorkQueue(limit: 0): the limit must be at least 1"))
    #expect(message.contains("MisuseTests.swift:"))
  }

  @Test func a_retry_budget_out_of_range_names_the_callers_line() async throws {
    for result in [
      try #require(
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
          _ = RetryBudget(tokens: -1)
        }),
      try #require(
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
          _ = RetryBudget(retryCost: 0)
        }),
      try #require(
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
          _ = RetryBudget(successRefund: -1)
        }),
    ] {
      let message = Self.standardError(result)
      #expect(message.contains("AsyncCombinators misuse: RetryBudget("))
      #expect(message.contains("MisuseTests.swift:"))
    }
  }

  @Test func a_circuit_breaker_out_of_range_names_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = CircuitBreaker(breakDuration: .zero)
      })
    let message = Self.standardError(result)
    #expect(message.contains("CircuitBreaker(breakDuration: 0.0 seconds): must be more than zero"))
    #expect(message.contains("MisuseTests.swift:"))
  }

  @Test func a_contract_checker_without_runs_names_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = ContractChecker(runs: 0)
      })
    let message = Self.standardError(result)
    #expect(message.contains("ContractChecker(runs: 0, threads: 4): both must be at least 1"))
    #expect(message.contains("MisuseTests.swift:"))
  }

  struct Hint: RetryAfterHint {
    let retryAfter: Duration?
  }

  /// A server's hint is not the program's argument: a negative one (a date already past) is
  /// waited as zero, not a misuse.
  @Test func a_negative_retry_after_hint_is_waited_as_zero() {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock, failures: 2) { attempt in
      Hint(retryAfter: attempt == 1 ? .seconds(-5) : .seconds(3))
    }
    let result = driveToEnd(flaky.function.retry(2, delay: .seconds(1), clock: clock), on: clock)
    #expect((try? result?.get()) == "x")
    #expect(flaky.seconds == [0, 0, 3].map { .seconds($0) })
  }
}
