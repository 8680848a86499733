import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The article's calculation worker: it records when each computation starts and finishes,
/// and suspends in between — on a real thread hop rather than `Task.yield()`.
private actor CalculationWorker {
  enum CalculationError: Error { case inputOutOfRange }

  private var events: [String] = []
  private let lane = testQueue("worker")

  func square(_ input: Int, label: String) async throws -> Int {
    events.append("start \(label)")
    guard (-1000...1000).contains(input) else { throw CalculationError.inputOutOfRange }
    await hop(lane)
    try Task.checkCancellation()
    events.append("finish \(label)")
    return input * input
  }

  func trace() -> [String] { events }
}

private func answers(_ jobs: [Task<Int, any Error>]) async -> [Int] {
  var answers: [Int] = []
  for job in jobs {
    if case .success(let answer) = await job.result { answers.append(answer) }
  }
  return answers
}

/// Records the order of `submit` calls under the same lock as the calls themselves.
private final class Submissions: Sendable {
  private let state = Locked<(order: [Int], jobs: [Task<Void, any Error>])>(([], []))

  func submit(_ index: Int, to queue: OrderedQueue, _ job: @escaping @Sendable () async -> Void) {
    state.withLock { state in
      state.order.append(index)
      state.jobs.append(queue.submit(job))
    }
  }

  var order: [Int] { state.withLock { $0.order } }
  var jobs: [Task<Void, any Error>] { state.withLock { $0.jobs } }
}

@Suite struct OrderedQueueTests {
  @Test func scenario_A_computes_in_submission_order() async throws {
    let queue = OrderedQueue()
    let worker = CalculationWorker()
    let a = queue.submit { try await worker.square(3, label: "A") }
    let b = queue.submit { try await worker.square(4, label: "B") }
    let c = queue.submit { try await worker.square(5, label: "C") }

    #expect(await answers([a, b, c]) == [9, 16, 25])
    #expect(
      await worker.trace() == [
        "start A", "finish A", "start B", "finish B", "start C", "finish C",
      ])
  }

  @Test func scenario_B_a_failure_stays_on_its_handle_and_the_queue_goes_on() async throws {
    let queue = OrderedQueue()
    let worker = CalculationWorker()
    let a = queue.submit { try await worker.square(3, label: "A") }
    let b = queue.submit { try await worker.square(1001, label: "B") }
    let c = queue.submit { try await worker.square(5, label: "C") }

    #expect(await answers([a, b, c]) == [9, 25])
    #expect(await worker.trace() == ["start A", "finish A", "start B", "start C", "finish C"])
    await #expect(throws: CalculationWorker.CalculationError.inputOutOfRange) { try await b.value }
  }

  @Test func scenario_C_a_job_cancelled_before_it_starts_never_runs() async throws {
    let queue = OrderedQueue()
    let worker = CalculationWorker()
    // The article relies on A not finishing before `b.cancel()`; a plug in front makes that
    // certain instead of likely.
    let plug = Gate()
    queue.submit { await plug.wait() }
    let a = queue.submit { try await worker.square(3, label: "A") }
    let b = queue.submit { try await worker.square(4, label: "B") }
    let c = queue.submit { try await worker.square(5, label: "C") }
    b.cancel()
    plug.open()

    #expect(await answers([a, b, c]) == [9, 25])
    #expect(await worker.trace() == ["start A", "finish A", "start C", "finish C"])
    await #expect(throws: CancellationError.self) { try await b.value }
  }

  @Test func a_cancelled_job_reports_only_after_its_predecessor_completed() async {
    let queue = OrderedQueue()
    let trace = Recorder<String>()
    let release = Gate()
    queue.submit {
      await release.wait()
      trace.record("A returned")
    }
    let b = queue.submit { trace.record("B ran") }
    b.cancel()
    let observer = Task {
      if case .failure(let error) = await b.result, error is CancellationError {
        trace.record("B cancelled")
      }
    }
    release.open()
    await observer.value
    #expect(trace.all == ["A returned", "B cancelled"])
  }

  @Test func cancelling_a_running_job_holds_its_successor_until_it_returns() async throws {
    let queue = OrderedQueue()
    let trace = Recorder<String>()
    let started = Gate()
    let release = Gate()
    let a = queue.submit {
      started.open()
      await release.wait()  // ignores cancellation, as long-running work may
      trace.record("A returned")
    }
    let b = queue.submit { trace.record("B started") }
    await started.wait()
    a.cancel()
    release.open()
    try await b.value
    #expect(trace.all == ["A returned", "B started"])
  }

  @Test func three_hundred_jobs_of_random_length_run_in_order_without_overlap() async throws {
    try await forAll("OrderedQueue: 300 random jobs in submission order", count: 1) {
      random, _ in
      let queue = OrderedQueue()
      let probe = InFlight()
      let trace = Recorder<Int>()
      let lane = testQueue("jobs")
      var jobs: [Task<Int, any Error>] = []
      for index in 0..<300 {
        let hops = Int.random(in: 0...4, using: &random)
        let fails = Int.random(in: 0..<10, using: &random) == 0
        jobs.append(
          queue.submit {
            probe.enter()
            defer { probe.leave() }
            trace.record(index)
            for _ in 0..<hops { await hop(lane) }
            if fails { throw TestError() }
            return index
          })
      }
      for job in jobs { _ = await job.result }
      return trace.all == Array(0..<300) && probe.peak <= 1
    }
  }

  @Test func submissions_from_many_threads_run_in_submission_order_without_overlap() async {
    let queue = OrderedQueue()
    let probe = InFlight()
    let trace = Recorder<Int>()
    let submissions = Submissions()
    let lane = testQueue("jobs")
    await withCheckedContinuation { continuation in
      testQueue("submitters").async {
        DispatchQueue.concurrentPerform(iterations: 200) { index in
          submissions.submit(index, to: queue) {
            probe.enter()
            defer { probe.leave() }
            trace.record(index)
            for _ in 0..<(index % 3) { await hop(lane) }
          }
        }
        continuation.resume()
      }
    }
    for job in submissions.jobs { _ = await job.result }
    #expect(trace.all == submissions.order)
    #expect(trace.count == 200)
    #expect(probe.peak <= 1)
  }

  @Test func a_job_submitted_after_the_queue_drained_runs() async throws {
    let queue = OrderedQueue()
    #expect(try await queue.submit { 1 }.value == 1)
    #expect(try await queue.submit { 2 }.value == 2)
  }
}

/// `run` is `submit` for a caller that awaits: cancelling the caller cancels the job.
@Suite struct OrderedQueueRunTests {
  @Test func run_returns_the_operations_value_in_queue_order() async throws {
    let queue = OrderedQueue()
    let order = Locked<[String]>([])
    let first = queue.submit { order.withLock { $0.append("first") } }
    let second = try await queue.run {
      order.withLock { $0.append("second") }
      return 42
    }
    _ = await first.result
    #expect(second == 42)
    #expect(order.withLock { $0 } == ["first", "second"])
  }

  @Test func cancelling_the_waiter_before_the_job_starts_means_it_never_starts() async {
    let queue = OrderedQueue()
    let release = Gate()
    let predecessor = queue.submit { await release.wait() }
    let ran = Tally()
    let waiter = Task { try await queue.run { ran.add() } }
    waiter.cancel()
    release.open()
    let result = await waiter.result
    _ = await predecessor.result
    // A job queued after the cancelled one still runs, after it.
    let after = try? await queue.run { 7 }
    #expect(isCancellation(result))
    #expect(ran.value == 0)
    #expect(after == 7)
  }

  @Test func cancelling_the_waiter_while_the_job_runs_cancels_the_jobs_task() async {
    let queue = OrderedQueue()
    let started = Gate()
    let sawCancellation = Gate()
    let waiter = Task {
      try await queue.run {
        started.open()
        await withTaskCancellationHandler {
          await sawCancellation.wait()
        } onCancel: {
          sawCancellation.open()
        }
        return Task.isCancelled
      }
    }
    await started.wait()
    waiter.cancel()
    let result = await waiter.result
    #expect((try? result.get()) == true)
  }

  @Test func a_waiter_cancelled_before_calling_run_never_starts_the_job() async {
    let queue = OrderedQueue()
    let ran = Tally()
    let gate = Gate()
    let waiter = Task {
      await gate.wait()
      return try await queue.run { ran.add() }
    }
    waiter.cancel()
    gate.open()
    let result = await waiter.result
    #expect(isCancellation(result))
    #expect(ran.value == 0)
  }
}
