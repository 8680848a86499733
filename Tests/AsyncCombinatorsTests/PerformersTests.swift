import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

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
