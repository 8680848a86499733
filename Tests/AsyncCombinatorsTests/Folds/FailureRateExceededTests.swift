import AsyncCombinators
import AsyncCombinatorsTesting
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct FailureRateExceededTests {
  struct URLFailure: Error, CustomStringConvertible {
    let code: Int
    var description: String { "URLError(\(code)): the request timed out" }
  }

  @Test func description_is_one_short_line_with_counts_tolerance_and_the_first_failures() {
    let failures = (0..<41).map {
      FailureRateExceeded.Failure(index: $0 * 2, error: URLFailure(code: $0))
    }
    let error = FailureRateExceeded(failures: failures, count: 100, tolerance: .ratio(0.1))
    #expect(
      error.description
        == "FailureRateExceeded: 41 of 100 elements failed, tolerance .ratio(0.1) ("
        + "#0: URLError(0): the request timed out, #2: URLError(1): the request timed out, "
        + "#4: URLError(2): the request timed out, and 38 more)")
    #expect(error.failures.count == 41)  // The whole list stays in the property.
    #expect(error.failures.map(\.index) == Array(stride(from: 0, to: 82, by: 2)))
  }

  @Test func each_shown_error_is_put_on_one_line_and_cut_short() {
    struct Page: Error, CustomStringConvertible {
      var description: String { "HTTP 500\n" + String(repeating: "<html>", count: 100) }
    }
    let error = FailureRateExceeded(
      failures: [.init(index: 7, error: Page())], count: 8, tolerance: .zero)
    #expect(!error.description.contains("\n"))
    #expect(
      error.description.hasPrefix(
        "FailureRateExceeded: 1 of 8 elements failed, tolerance .zero (#7: HTTP 500 <html>"))
    #expect(error.description.hasSuffix("…)"))
    #expect(error.description.count < 200)
  }

  @Test func a_folds_error_lists_every_failure_in_its_property_and_three_in_its_line() async {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { id in
      if id % 2 == 1 { throw URLFailure(code: id) }
      return id
    }
    let result = await runToCompletion(
      fetch.concurrentMap(limit: 1, acceptableFailure: .count(4)), Array(0..<20))
    let error = result.failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [1, 3, 5, 7, 9])
    #expect(error?.description.hasSuffix(", and 2 more)") == true)
  }

  @Test func localized_description_is_the_description_where_foundation_exists() {
    let rate = FailureRateExceeded(
      failures: [.init(index: 3, error: URLFailure(code: -1001))], count: 4, tolerance: .zero)
    #expect((rate as any Error).localizedDescription == rate.description)
    let timeout = TimeoutError(duration: .milliseconds(500))
    #expect(
      (timeout as any Error).localizedDescription == "TimeoutError: no result within 0.5 seconds")
    let violation = ContractViolation(
      kind: .completionNeverCalled, name: "upload", fileID: "App/Upload.swift", line: 12)
    #expect(
      (violation as any Error).localizedDescription
        == "upload (Upload.swift:12) released its completion without calling it")
  }
}
