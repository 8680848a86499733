import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// An element that fails with `CancellationError` while its fold was not cancelled cancels the
/// fold: it ends with that bare `CancellationError` and the elements still running are
/// cancelled, whatever the tolerance. Never wrapped in `FailureRateExceeded`, never a tolerated
/// failure.
@Suite struct ElementCancellationTests {
  /// Runs `fold` over `[0, 1, 2]` with a parked function, fails element 1 with
  /// `CancellationError`, and checks the outcome and the cancellation of elements 0 and 2.
  private func check<Output: Sendable>(
    _ makeFold: (AsyncFunc<Int, Int>) -> AsyncFunc<[Int], Output>
  ) async {
    let parking = Parking<Int, Int>()
    let fold = makeFold(parking.function)
    let result = Task { await runToCompletion(fold, [0, 1, 2]) }
    await parking.waitForStarts(3)
    let parked = parking.takeAll()
    let cancelled = Countdown(2)
    for run in [parked[0], parked[2]] { run.token.onCancel { cancelled.tick() } }
    parked[1].complete(.failure(CancellationError()))
    let error = await result.value.failure
    #expect(error.map { type(of: $0) == CancellationError.self } == true)
    await cancelled.wait()
    parked[0].complete(.success(0))  // Late: dropped.
  }

  @Test func concurrentMap_ends_with_an_elements_own_cancellation_whatever_the_tolerance() async {
    await check { $0.concurrentMap(limit: 3, acceptableFailure: .unlimited) }
    await check { $0.concurrentMap(limit: 3, acceptableFailure: .ratio(1)) { _ in } }
  }

  @Test func concurrentFilter_ends_with_an_elements_own_cancellation() async {
    await check { $0.map(name: "isEven") { $0 % 2 == 0 }.concurrentFilter(limit: 3) }
  }

  @Test func concurrentForEach_ends_with_an_elements_own_cancellation() async {
    await check { $0.concurrentForEach(limit: 3, acceptableFailure: .unlimited) }
  }

  @Test func concurrentCompactMap_ends_with_an_elements_own_cancellation() async {
    await check {
      $0.map(name: "optional") { Optional($0) }
        .concurrentCompactMap(limit: 3, acceptableFailure: .count(5))
    }
  }

  @Test func concurrentMapResults_ends_with_an_elements_own_cancellation() async {
    await check { $0.concurrentMapResults(limit: 3) }
  }

  @Test func a_cancelled_element_is_not_reported_as_a_failure_in_progress_after_the_end() async {
    let reports = Recorder<BatchProgress>()
    await check { $0.concurrentMap(limit: 3, acceptableFailure: .unlimited) { reports.record($0) } }
    // Element 1's end is the last report: elements finishing after it are not reported.
    #expect(reports.all == [BatchProgress(completed: 1, failed: 1, inFlight: 2, total: 3)])
  }
}
