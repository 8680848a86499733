import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinators

@Suite struct BatchProgressTests {
  /// Records reports and counts any two calls that overlapped.
  final class Watcher: Sendable {
    let reports = Recorder<BatchProgress>()
    private let inside = Atomic<Bool>(false)
    let overlaps = Tally()

    @Sendable func report(_ progress: BatchProgress) {
      if inside.exchange(true, ordering: .acquiringAndReleasing) { overlaps.add() }
      reports.record(progress)
      inside.store(false, ordering: .releasing)
    }
  }

  @Test func progress_is_serialized_monotone_and_done_before_the_result_under_many_threads()
    async throws
  {
    let queue = testQueue("progress")
    let work = AsyncFunc<Int, Int> { x, complete in
      queue.async { complete(x % 10 == 0 ? .failure(TestError(x)) : .success(x)) }
    }
    let watcher = Watcher()
    let count = 2_000
    let outputs = try await work.concurrentMap(
      limit: 16, acceptableFailure: .ratio(0.1), progress: watcher.report)(Array(0..<count))
    let reports = watcher.reports.all  // Read once the result is in: every call has returned.
    #expect(outputs.count == count - count / 10)
    #expect(watcher.overlaps.value == 0)
    #expect(reports.map(\.completed) == Array(1...count))
    #expect(reports.allSatisfy { $0.total == count && $0.inFlight <= 16 })
    #expect(
      reports.last == BatchProgress(completed: count, failed: count / 10, inFlight: 0, total: count)
    )
    #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.failed <= $1.failed })
  }

  @Test func progress_of_a_synchronous_fold_reports_each_element_in_turn() async throws {
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    let lines = Recorder<String>()
    let squares = square.concurrentMap(limit: 2) { progress in
      lines.record("\(progress.completed) of \(progress.total ?? 0)")
    }
    #expect(try await squares([1, 2, 3]) == [1, 4, 9])
    #expect(lines.all == ["1 of 3", "2 of 3", "3 of 3"])
  }

  @Test func filter_and_forEach_report_progress_for_every_element() async throws {
    let isEven = AsyncFunc<Int, Bool>.sync(name: "isEven") { $0 % 2 == 0 }
    let filtered = Recorder<String>()
    let evens = try await isEven.concurrentFilter(limit: 1) { filtered.record("\($0)") }([1, 2])
    #expect(evens == [2])
    #expect(
      filtered.all == ["1/2 done (0 failed, 0 in flight)", "2/2 done (0 failed, 0 in flight)"])
    let sent = Recorder<Int>()
    let send = AsyncFunc<String, Void>.sync(name: "send") { _ in }
    try await send.concurrentForEach(limit: 1) { sent.record($0.completed) }(["a", "b"])
    #expect(sent.all == [1, 2])
  }

  @Test func the_last_report_comes_before_a_failure_beyond_tolerance() async {
    let parking = Parking<Int, Int>()
    let watcher = Watcher()
    let result = Task {
      await runToCompletion(
        parking.function.concurrentMap(limit: 3, progress: watcher.report), [0, 1, 2])
    }
    await parking.waitForStarts(3)
    let parked = parking.takeAll()
    parked[0].complete(.success(0))
    parked[1].complete(.failure(TestError(1)))
    let error = await result.value.failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [1])
    #expect(watcher.reports.all.map(\.completed) == [1, 2])
    parked[2].complete(.success(2))  // After the end: not reported.
    #expect(watcher.reports.count == 2)
  }

  @Test func an_outcome_decided_while_a_report_is_delivered_waits_for_the_last_report() async {
    let parking = Parking<Int, Int>()
    let trace = Recorder<String>()
    let inFirstReport = Gate()
    let proceed = Gate()
    let finished = Gate()
    let squares = parking.function.concurrentMap { progress in
      trace.record("report \(progress.completed) begins")
      if progress.completed == 1 {
        inFirstReport.open()
        proceed.blockingWait()  // on the drainer's lane, never the cooperative pool
      }
      trace.record("report \(progress.completed) ends")
    }
    squares.run([0, 1]) { result in
      trace.record("result: \(result)")
      finished.open()
    }
    await parking.waitForStarts(2)
    let parked = parking.takeAll()
    blockingLane("drainer").async { parked[0].complete(.success(0)) }
    await inFirstReport.wait()
    parked[1].complete(.success(1))  // the last element: the outcome is decided here
    trace.record("last element delivered")
    proceed.open()
    await finished.wait()
    #expect(
      trace.all == [
        "report 1 begins", "last element delivered", "report 1 ends", "report 2 begins",
        "report 2 ends", "result: success([0, 1])",
      ])
  }

  @Test func progress_description_and_fraction() {
    let progress = BatchProgress(completed: 3, failed: 1, inFlight: 2, total: 10)
    #expect(progress.description == "3/10 done (1 failed, 2 in flight)")
    #expect(progress.fractionCompleted == 0.3)
    let stream = BatchProgress(completed: 3, failed: 0, inFlight: 1, total: nil)
    #expect(stream.description == "3 done (0 failed, 1 in flight)")
    #expect(stream.fractionCompleted == nil)
  }
}
