import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct WorkQueueTests {
  @Test func higher_priority_first_and_arrival_order_within_a_priority() async {
    // caolan/async #1229: equal priorities must keep their order.
    let queue = WorkQueue(limit: 1)
    let order = Recorder<String>()
    queue.pause()
    let jobs: [(String, WorkQueue.Priority)] = [
      ("low a", .low), ("normal b", .normal), ("high c", .high), ("normal d", .normal),
      ("high e", .high), ("low f", .low), ("normal g", .normal), ("urgent h", .init(7)),
    ]
    for (name, priority) in jobs { queue.submit(priority: priority) { order.record(name) } }
    #expect(queue.progress.total == 8)
    queue.resume()
    await queue.drained()
    #expect(
      order.all == [
        "urgent h", "high c", "high e", "normal b", "normal d", "normal g", "low a", "low f",
      ])
  }

  @Test func pause_lets_running_work_finish_and_starts_nothing_until_resume() {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 2)
    let job = parking.function.queued(on: queue)
    job.run(1) { _ in }
    queue.pause()
    #expect(queue.isPaused)
    for input in 2...4 { job.run(input) { _ in } }
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success(1))  // finishes while paused
    #expect(parking.started == 1)
    #expect(queue.progress == BatchProgress(completed: 1, failed: 0, inFlight: 0, total: 4))
    queue.resume()
    #expect(!queue.isPaused)
    let resumed = parking.takeAll()
    #expect(resumed.map(\.input) == [2, 3])  // in their order
    for run in resumed { run.complete(.success(run.input)) }
    for run in parking.takeAll() { run.complete(.success(run.input)) }
  }

  @Test func setting_the_limit_takes_effect_at_once() {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 2)
    let job = parking.function.queued(on: queue)
    for input in 0..<8 { job.run(input) { _ in } }
    #expect(parking.started == 2)
    queue.limit = 4  // two more start now, not at the next completion
    #expect(queue.limit == 4)
    #expect(parking.started == 4)
    queue.limit = 1
    var running = parking.takeAll()
    for run in running.prefix(3) { run.complete(.success(run.input)) }
    #expect(parking.started == 4)  // still one running: at the new limit
    running[3].complete(.success(3))
    #expect(parking.started == 5)
    running = parking.takeAll()
    while !running.isEmpty {
      for run in running { run.complete(.success(run.input)) }
      running = parking.takeAll()
    }
    #expect(queue.progress.completed == 8)
  }

  @Test(.timeLimit(.minutes(1)))
  func drained_returns_at_once_when_idle() async {
    let queue = WorkQueue(limit: 3)
    await queue.drained()  // never used
    queue.submit { 1 }
    await queue.drained()
    await queue.drained()  // and again, once done
    #expect(queue.progress.completed == 1)
  }

  @Test func drained_waits_for_the_last_job_also_across_a_pause() {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1)
    let job = parking.function.queued(on: queue)
    job.run(1) { _ in }
    let waiting = job.run(2) { _ in }
    let drained = Tally()
    queue.gate.whenIdle { drained.add() }  // what `drained()` waits on
    queue.pause()
    parking.takeAll()[0].complete(.success(1))
    #expect(drained.value == 0)  // paused with a job waiting: not drained
    queue.resume()
    #expect(drained.value == 0)  // job 2 runs
    parking.takeAll()[0].complete(.success(2))
    #expect(drained.value == 1)  // after the last job's completion
    job.run(3) { _ in }
    queue.gate.whenIdle { drained.add() }
    queue.pause()
    job.run(4) { _ in }
    waiting.cancel()  // already done: nothing changes
    parking.takeAll()[0].complete(.success(3))
    #expect(drained.value == 1)
  }

  @Test func a_job_cancelled_before_it_starts_never_runs_and_is_not_waited_for() async {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1)
    parking.function.queued(on: queue).run(0) { _ in }
    let ran = Tally()
    let task = queue.submit { ran.add() }
    task.cancel()
    // Ends at once, while job 0 still holds the only slot.
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(queue.progress.total == 1)
    parking.takeAll()[0].complete(.success(0))
    await queue.drained()
    #expect(ran.value == 0)
    #expect(queue.progress == BatchProgress(completed: 1, failed: 0, inFlight: 0, total: 1))
  }

  @Test(.timeLimit(.minutes(1)))
  func a_started_job_sees_cancellation_and_keeps_its_slot_until_it_ends() async {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1)
    let started = Gate()
    let release = Gate()
    let sawCancellation = Locked(false)
    let task = queue.submit {
      started.open()
      await release.wait()
      sawCancellation.withLock { $0 = Task.isCancelled }
    }
    await started.wait()
    parking.function.queued(on: queue).run(1) { _ in }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(parking.started == 0)  // the cancelled job still runs, so its slot is held
    release.open()
    await parking.waitForStarts(1)
    #expect(sawCancellation.withLock { $0 })
    parking.takeAll()[0].complete(.success(1))
    await queue.drained()
  }

  @Test func progress_counts_jobs_in_flight_and_waiting_as_they_move() async {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 2)
    let job = parking.function.queued(on: queue)
    for input in 0..<3 { job.run(input) { _ in } }
    await parking.waitForStarts(2)
    #expect(queue.progress == BatchProgress(completed: 0, failed: 0, inFlight: 2, total: 3))
    let first = parking.takeAll()
    first[0].complete(.failure(TestError()))
    await parking.waitForStarts(3)
    #expect(queue.progress == BatchProgress(completed: 1, failed: 1, inFlight: 2, total: 3))
    first[1].complete(.success(1))
    #expect(queue.progress == BatchProgress(completed: 2, failed: 1, inFlight: 1, total: 3))
    parking.takeAll()[0].complete(.success(2))
    await queue.drained()
    #expect(queue.progress == BatchProgress(completed: 3, failed: 1, inFlight: 0, total: 3))
  }

  @Test func a_failure_is_the_jobs_own_and_the_queue_goes_on() async throws {
    let queue = WorkQueue(limit: 1)
    let failing = queue.submit { () throws -> Int in throw TestError() }
    let next = queue.submit { 2 }
    await #expect(throws: TestError.self) { try await failing.value }
    #expect(try await next.value == 2)
    #expect(try await queue.run(priority: .high) { 3 } == 3)
    await queue.drained()
    #expect(queue.progress == BatchProgress(completed: 3, failed: 1, inFlight: 0, total: 3))
  }

  @Test func progress_counts_a_failed_job_as_completed_as_batch_progress_says() async {
    // Issue 40, item 9: 3 succeeded and 2 failed read "3/5 done" and 0.6 when all had ended.
    let queue = WorkQueue(limit: 2)
    for n in 1...5 { queue.submit { if n > 3 { throw TestError() } } }
    await queue.drained()
    #expect(queue.progress == BatchProgress(completed: 5, failed: 2, inFlight: 0, total: 5))
    #expect(queue.progress.fractionCompleted == 1)
    #expect("\(queue.progress)" == "5/5 done (2 failed, 0 in flight)")
  }

  @Test func cancelled_waiting_jobs_leave_the_counts_before_cancel_returns() async {
    // Issue 40, item 9: they were counted until their task first ran, some 50 ms later.
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1)
    parking.function.queued(on: queue).run(0) { _ in }
    let ran = Tally()
    let tasks = (1...3).map { _ in queue.submit { ran.add() } }
    #expect(queue.progress == BatchProgress(completed: 0, failed: 0, inFlight: 1, total: 4))
    tasks[0].cancel()
    tasks[2].cancel()
    #expect(queue.progress == BatchProgress(completed: 0, failed: 0, inFlight: 1, total: 2))
    parking.takeAll()[0].complete(.success(0))
    await queue.drained()
    #expect(ran.value == 1)
    #expect(queue.progress == BatchProgress(completed: 2, failed: 0, inFlight: 0, total: 2))
    for task in [tasks[0], tasks[2]] {
      await #expect(throws: CancellationError.self) { try await task.value }
    }
  }

  @Test func a_full_queue_rejects_with_limit_exceeded() {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1, capacity: .count(1))
    let job = parking.function.queued(on: queue)
    let outcomes = Recorder<String>()
    for input in 1...3 { job.run(input) { outcomes.record("\(input): \($0)") } }
    #expect(outcomes.all == ["3: failure(LimitExceeded: no slot free)"])
    for _ in 1...2 { for run in parking.takeAll() { run.complete(.success(run.input)) } }
    #expect(outcomes.count == 3)
  }

  @Test func queued_passes_cancellation_both_ways() {
    let queue = WorkQueue(limit: 1)
    let cancelledBodies = Tally()
    let hold = Recorder<Int>()
    let body = AsyncFunc<Int, Int>(name: "body") { input, token, complete in
      hold.record(input)
      token.onCancel {
        cancelledBodies.add()
        complete(.failure(CancellationError()))
      }
    }.queued(on: queue, priority: .high)
    let outcomes = Recorder<String>()
    let running = body.run(1) { outcomes.record("1: \($0)") }
    let waiting = body.run(2) { outcomes.record("2: \($0)") }
    waiting.cancel()
    #expect(outcomes.all == ["2: failure(Swift.CancellationError())"])
    #expect(hold.all == [1])  // never started
    running.cancel()
    #expect(cancelledBodies.value == 1)  // the running body heard it
    #expect(queue.progress.inFlight == 0)
    #expect(queue.progress.failed == 1)
  }

  @Test func describes_itself() {
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 }
    #expect(
      "\(f.queued(on: WorkQueue(limit: 2), priority: .high))"
        == "f.queued(on: WorkQueue(limit: 2, capacity: unbounded), priority: high)")
  }
}
