import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct PerformersTests {
  /// A performer that holds blocks until the test runs them.
  final class HeldPerformer: BlockPerformer {
    private let blocks = Locked<[@Sendable () -> Void]>([])
    let arrived = Countdown(1)

    func perform(_ work: @escaping @Sendable () -> Void) {
      blocks.withLock { $0.append(work) }
      arrived.tick()
    }

    func runAll() {
      for block in blocks.withLock({ $0 }) { block() }
    }
  }

  @Test func on_a_queue_runs_the_body_on_that_queue() async throws {
    let key = DispatchSpecificKey<String>()
    let queue = DispatchQueue(label: "context")
    queue.setSpecific(key: key, value: "context")
    let whereAmI = AsyncFunc<Void, String?>.sync { DispatchQueue.getSpecific(key: key) }
    #expect(try await whereAmI.on(queue)() == "context")
    #expect(try await whereAmI() == nil)
  }

  @Test func a_custom_performer_is_asked_to_run_the_body() async throws {
    let performer = HeldPerformer()
    let ran = Atomic(false)
    let body = AsyncFunc<Int, Int>.sync {
      ran.store(true, ordering: .relaxed)
      return $0
    }
    let task = Task { try await body.on(performer)(3) }
    await performer.arrived.wait()
    #expect(ran.load(ordering: .relaxed) == false)
    performer.runAll()
    #expect(try await task.value == 3)
  }

  @Test func a_run_cancelled_before_the_performer_runs_it_never_starts() async {
    let performer = HeldPerformer()
    let ran = Atomic(false)
    let body = AsyncFunc<Int, Int>.sync {
      ran.store(true, ordering: .relaxed)
      return $0
    }
    let done = Gate()
    let token = body.on(performer).run(1) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    await performer.arrived.wait()
    token.cancel()
    performer.runAll()
    await done.wait()
    #expect(ran.load(ordering: .relaxed) == false)
  }

  @Test func description_names_the_queue() {
    let show = AsyncFunc<Int, Int>.sync(name: "show") { $0 }
    #expect("\(show.on(DispatchQueue(label: "ui")))" == "show.on(ui)")
    #expect("\(show.on(HeldPerformer()))" == "show.on(HeldPerformer)")
  }
}

/// `on` of a single callback stage, the shape most code has.
@Suite struct OnOfOneCallbackStageTests {
  private typealias HeldPerformer = PerformersTests.HeldPerformer

  /// A callback stage that reports whether it ran on `queue`, from another queue.
  private func reportsQueue(_ key: DispatchSpecificKey<String>) -> AsyncFunc<Int, String?> {
    AsyncFunc(name: "where") { _, complete in
      let here = DispatchQueue.getSpecific(key: key)
      testQueue().async { complete(.success(here)) }
    }
  }

  @Test func a_callback_stage_on_a_queue_starts_its_body_there() async throws {
    let key = DispatchSpecificKey<String>()
    let queue = DispatchQueue(label: "fused.context")
    queue.setSpecific(key: key, value: "fused.context")
    let onQueue = reportsQueue(key).on(queue)
    #expect("\(onQueue)" == "where.on(fused.context)")
    #expect(try await onQueue(0) == "fused.context")
  }

  @Test func a_cancelled_run_never_starts_the_body_of_a_callback_stage() async {
    let performer = HeldPerformer()
    let parking = Parking<Int, Int>()
    let done = Gate()
    let token = parking.function.on(performer).run(1) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    await performer.arrived.wait()
    token.cancel()
    performer.runAll()
    await done.wait()
    #expect(parking.started == 0)
  }

  @Test func a_traced_stage_starts_when_the_performer_runs_it_not_while_it_waits() async throws {
    final class Starts: RunObserver {
      let names = Recorder<String>()
      func observe(_ event: RunEvent) {
        if event.kind == .stageStarted { names.record(event.subject) }
      }
    }
    let performer = HeldPerformer()
    let starts = Starts()
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { x, complete in complete(.success(x)) }
    let done = Gate()
    fetch.on(performer).run(1, token: CancellationToken(observedBy: starts)) { _ in done.open() }
    await performer.arrived.wait()
    #expect(starts.names.all.isEmpty)
    performer.runAll()
    await done.wait()
    #expect(starts.names.all == ["fetch"])
  }

  @Test func the_outer_of_two_performers_comes_first() async throws {
    let key = DispatchSpecificKey<String>()
    let inner = DispatchQueue(label: "inner")
    inner.setSpecific(key: key, value: "inner")
    let outer = HeldPerformer()
    let twice = reportsQueue(key).on(inner).on(outer)
    #expect("\(twice)" == "where.on(inner).on(HeldPerformer)")
    let task = Task { try await twice(0) }
    await outer.arrived.wait()
    outer.runAll()
    #expect(try await task.value == "inner")
  }

  @Test func a_retry_of_a_hopping_stage_hops_on_every_attempt() async throws {
    let key = DispatchSpecificKey<String>()
    let queue = DispatchQueue(label: "fused.retry")
    queue.setSpecific(key: key, value: "fused.retry")
    let places = Recorder<String?>()
    let attempts = Tally()
    let flaky = AsyncFunc<Int, Int>(name: "flaky") { x, complete in
      places.record(DispatchQueue.getSpecific(key: key))
      attempts.add()
      complete(attempts.value < 3 ? .failure(TestError(0)) : .success(x))
    }
    #expect(try await flaky.on(queue).retry(2)(1) == 1)
    #expect(places.all == ["fused.retry", "fused.retry", "fused.retry"])
  }
}
