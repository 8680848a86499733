import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

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

  @Test func progress_is_serialized_increasing_and_done_before_the_result_under_many_threads()
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
    // Reports that piled up while the closure ran were coalesced: fewer, each newer.
    #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completed < $1.completed })
    #expect(reports.allSatisfy { $0.total == count && $0.inFlight <= 16 })
    #expect(
      reports.last == BatchProgress(completed: count, failed: count / 10, inFlight: 0, total: count)
    )
    #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.failed <= $1.failed })
  }

  @Test func progress_of_a_synchronous_fold_ends_with_the_whole() async throws {
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    let lines = Recorder<String>()
    let squares = square.concurrentMap(limit: 2) { progress in
      lines.record("\(progress.completed) of \(progress.total ?? 0)")
    }
    #expect(try await squares([1, 2, 3]) == [1, 4, 9])
    #expect(lines.all.last == "3 of 3")
  }

  @Test func filter_forEach_compactMap_and_results_report_progress_up_to_the_whole() async throws {
    let isEven = AsyncFunc<Int, Bool>.sync(name: "isEven") { $0 % 2 == 0 }
    let filtered = Recorder<String>()
    let evens = try await isEven.concurrentFilter(limit: 1) { filtered.record("\($0)") }([1, 2])
    #expect(evens == [2])
    #expect(filtered.all.last == "2/2 done (0 failed, 0 in flight)")
    let sent = Recorder<Int>()
    let send = AsyncFunc<String, Void>.sync(name: "send") { _ in }
    try await send.concurrentForEach(limit: 1) { sent.record($0.completed) }(["a", "b"])
    #expect(sent.all.last == 2)
    let parsed = Recorder<Int>()
    let parse = AsyncFunc<String, Int?>.sync(name: "parse") { Int($0) }
    let numbers = try await parse.concurrentCompactMap { parsed.record($0.completed) }(["1", "x"])
    #expect(numbers == [1])
    #expect(parsed.all.last == 2)
    let outcomes = Recorder<Int>()
    let results = try await parse.concurrentMapResults { outcomes.record($0.completed) }(["1"])
    #expect(results.count == 1)
    #expect(outcomes.all == [1])
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
    #expect(watcher.reports.all.last?.completed == 2)
    let reported = watcher.reports.count
    parked[2].complete(.success(2))  // After the end: not reported.
    #expect(watcher.reports.count == reported)
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
        proceed.blockingWait()  // on the reports' own lane, never the cooperative pool
      }
      trace.record("report \(progress.completed) ends")
    }
    squares.run([0, 1]) { result in
      trace.record("result: \(result)")
      finished.open()
    }
    await parking.waitForStarts(2)
    let parked = parking.takeAll()
    parked[0].complete(.success(0))
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

  // MARK: A slow closure holds up nothing but the reports and the result

  /// Completes `running`, then every element started after them, oldest first, each with its
  /// input, waiting after each completion for the start it allows, until all `count` started.
  static func completeInOrder(
    _ running: [Parking<Int, Int>.Parked], of count: Int, in parking: Parking<Int, Int>
  ) async {
    var running = running
    var started = parking.started
    while !running.isEmpty {
      let oldest = running.removeFirst()
      oldest.complete(.success(oldest.input))
      if started < count {
        started += 1
        await parking.waitForStarts(started)
        running += parking.takeAll()
      }
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func a_slow_progress_closure_holds_up_neither_an_elements_completion_nor_the_next_start()
    async
  {
    let parking = Parking<Int, Int>()
    let inReport = Gate()
    let release = Gate()
    let reports = Recorder<Int>()
    let finished = Gate()
    let fold = parking.function.concurrentMap(limit: 2) { progress in
      reports.record(progress.completed)
      inReport.open()
      release.blockingWait()  // on the reports' own lane, never the cooperative pool
    }
    fold.run(Array(0..<5)) { result in
      #expect(reports.all.last == 5)  // The last report returned before the result came.
      #expect((try? result.get()) == [0, 1, 2, 3, 4])
      finished.open()
    }
    await parking.waitForStarts(2)
    // The first completion's thread is a plain thread here, so that a closure run on it (as it
    // once was) would hold only that thread: the completion returns at once all the same.
    let first = parking.takeAll()
    let returned = Gate()
    blockingLane("completer").async {
      first[0].complete(.success(0))
      returned.open()
    }
    await returned.wait()
    await inReport.wait()  // The closure is held from now on...
    await parking.waitForStarts(3)  // ...and the next element started all the same.
    await Self.completeInOrder([first[1]] + parking.takeAll(), of: 5, in: parking)
    #expect(!finished.isOpen)  // Every element is done; the result waits for the reports...
    release.open()
    await finished.wait()
    // ...which piled up while the closure was held, and were coalesced into the newest.
    #expect(reports.all == [1, 5])
  }

  @Test(.timeLimit(.minutes(1)))
  func a_slow_progress_closure_holds_up_neither_a_streams_elements_nor_its_pulls() async throws {
    let parking = Parking<Int, Int>()
    let inReport = Gate()
    let release = Gate()
    let reports = Recorder<Int>()
    let stream = parking.function.concurrentMap(
      over: ControlledSource(count: 5), limit: 2, ordered: false
    ) { progress in
      reports.record(progress.completed)
      inReport.open()
      release.blockingWait()  // on the reports' own lane, never the cooperative pool
    }
    let ended = Gate()
    let outputs = Task {
      var outputs: [Int] = []
      for try await output in stream { outputs.append(output) }
      ended.open()
      return outputs
    }
    await parking.waitForStarts(2)
    let first = parking.takeAll()
    let returned = Gate()
    blockingLane("completer").async {
      first[0].complete(.success(0))
      returned.open()
    }
    await returned.wait()
    await inReport.wait()
    await parking.waitForStarts(3)  // The consumer took the output and pulled the next.
    await Self.completeInOrder([first[1]] + parking.takeAll(), of: 5, in: parking)
    #expect(!ended.isOpen)  // The end waits for the last report.
    release.open()
    #expect(try await outputs.value.sorted() == [0, 1, 2, 3, 4])
    #expect(reports.all == [1, 5])
  }

  // MARK: In flight

  @Test func a_saturated_batch_reports_limit_in_flight_until_its_tail() async throws {
    let parking = Parking<Int, Int>()
    let reports = Recorder<BatchProgress>()
    let fold = parking.function.concurrentMap(limit: 2) { reports.record($0) }
    let outputs = Task { try await fold(Array(0..<5)) }
    await parking.waitForStarts(2)
    await Self.completeInOrder(parking.takeAll(), of: 5, in: parking)
    #expect(try await outputs.value == [0, 1, 2, 3, 4])
    // Whichever reports were delivered, each says what ran once its element finished: the
    // other running element and the one the freed slot starts, until none is left to start.
    let expected = [1: 2, 2: 2, 3: 2, 4: 1, 5: 0]
    #expect(reports.all.allSatisfy { expected[$0.completed] == $0.inFlight })
    #expect(reports.all.last?.completed == 5)
  }

  @Test func a_streams_report_counts_the_pulled_element_the_freed_slot_starts() async throws {
    let parking = Parking<Int, Int>()
    let reports = Recorder<BatchProgress>()
    let source = FoldsCountRealWorkTests.ThreeThenEnd()
    let stream = parking.function.concurrentMap(over: source, limit: 2) { reports.record($0) }
    let outputs = Task {
      var outputs: [Int] = []
      for try await output in stream { outputs.append(output) }
      return outputs
    }
    await parking.waitForStarts(2)
    await source.ended.wait()  // The third element waits in the window for a slot.
    let first = parking.takeAll()
    first[0].complete(.success(0))  // Reported with 2 in flight: element 1, and 2 starting.
    first[1].complete(.success(1))
    await parking.waitForStarts(3)
    parking.takeAll()[0].complete(.success(2))
    #expect(try await outputs.value == [0, 1, 2])
    let expected = [1: 2, 2: 1, 3: 0]
    #expect(reports.all.allSatisfy { expected[$0.completed] == $0.inFlight })
    #expect(reports.all.last?.completed == 3)
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
