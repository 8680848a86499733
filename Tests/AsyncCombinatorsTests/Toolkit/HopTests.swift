import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// `AsyncFunc.sync(on:…)` and `.sync(body).on(performer)`: a hop for the cost of a dispatch.
@Suite struct HopTests {
  private typealias HeldPerformer = PerformersTests.HeldPerformer

  /// Counts the blocks it is handed and runs each on `queue`.
  final class CountingPerformer: BlockPerformer {
    let queue: DispatchQueue
    let blocks = Tally()
    init(_ queue: DispatchQueue) { self.queue = queue }
    func perform(_ work: @escaping @Sendable () -> Void) {
      blocks.add()
      queue.async(execute: work)
    }
  }

  /// Runs each block at once, on the caller's stack.
  struct InlinePerformer: BlockPerformer {
    func perform(_ work: @escaping @Sendable () -> Void) { work() }
  }

  private func labelled(_ name: String) -> (DispatchQueue, DispatchSpecificKey<String>) {
    let key = DispatchSpecificKey<String>()
    let queue = DispatchQueue(label: name)
    queue.setSpecific(key: key, value: name)
    return (queue, key)
  }

  @Test func the_body_and_the_rest_of_the_chain_run_on_the_queue() async throws {
    let (queue, key) = labelled("hop.context")
    let hop = AsyncFunc<Int, String?>.sync(on: queue, name: "hop") { _ in
      DispatchQueue.getSpecific(key: key)
    }
    let after = AsyncFunc<String?, [String?]>.sync { [$0, DispatchQueue.getSpecific(key: key)] }
    for _ in 0..<200 {
      #expect(try await (hop +> after)(1) == ["hop.context", "hop.context"])
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func the_rest_runs_on_the_queue_even_when_the_block_ends_before_perform_returns() async throws {
    // The performer waits until the block has run on its queue, so the block always ends
    // while the starting thread is still inside `perform`: the race a callback stage's
    // completion settles by handing the loop back to the starting thread. A hop's does not.
    struct WaitingPerformer: BlockPerformer {
      let queue: DispatchQueue
      func perform(_ work: @escaping @Sendable () -> Void) {
        let ran = DispatchSemaphore(value: 0)
        queue.async {
          work()
          ran.signal()
        }
        ran.wait()
      }
    }
    let (queue, key) = labelled("hop.waited")
    let hop = AsyncFunc<Int, Int>.sync(on: WaitingPerformer(queue: queue)) { $0 + 1 }
    let after = AsyncFunc<Int, String?>.sync { _ in DispatchQueue.getSpecific(key: key) }
    // Started on a thread of its own, which the performer blocks, not one of the pool's.
    let result = await withCheckedContinuation { continuation in
      Thread { (hop +> after).run(1) { continuation.resume(returning: $0) } }.start()
    }
    #expect(try result.get() == "hop.waited")
  }

  @Test func a_performer_that_runs_the_block_before_returning_goes_on_after_it_returns()
    async throws
  {
    // Run on the calling thread inside `perform`, the block hands its value back to the loop
    // there rather than nesting a loop: what follows runs once `perform` has returned.
    final class NestingPerformer: BlockPerformer {
      let depth = Atomic(0)
      func perform(_ work: @escaping @Sendable () -> Void) {
        depth.add(1, ordering: .relaxed)
        work()
        depth.subtract(1, ordering: .relaxed)
      }
    }
    let performer = NestingPerformer()
    let hop = AsyncFunc<Int, Int>.sync(on: performer) { $0 + 1 }
    let after = AsyncFunc<Int, Int>.sync { _ in performer.depth.load(ordering: .relaxed) }
    #expect(try await (hop +> after)(1) == 0)
  }

  @Test func a_chain_of_hops_hands_its_performer_one_block_per_hop() async throws {
    let performer = CountingPerformer(DispatchQueue(label: "hop.count"))
    let add = AsyncFunc<Int, Int>.sync(on: performer) { $0 + 1 }
    let spelled = AsyncFunc<Int, Int>.sync { $0 + 10 }.on(performer)
    #expect(try await AsyncFunc.serial([add, spelled, add, spelled])(0) == 22)
    #expect(performer.blocks.value == 4)
  }

  @Test func on_of_a_sync_stage_is_the_same_hop_and_describes_as_written() throws {
    let spelled = AsyncFunc<Int, Int>.sync(name: "add") { $0 + 1 }.on(DispatchQueue(label: "q"))
    guard case .hop = spelled.program else { throw TestError(0) }
    #expect("\(spelled)" == "add.on(q)")
    let named = AsyncFunc<Int, Int>.sync(on: InlinePerformer(), name: "add") { $0 + 1 }
    guard case .hop = named.program else { throw TestError(1) }
    #expect("\(named +> spelled)" == "add +> add.on(q)")
    // Anything but a synchronous stage stays a modifier that starts it.
    let callback = AsyncFunc<Int, Int> { x, complete in complete(.success(x)) }
    guard case .modifier = callback.on(InlinePerformer()).program else { throw TestError(2) }
    // Without a performer, `sync` is the plain synchronous stage.
    let inPlace = AsyncFunc<Int, Int>.sync(on: nil) { $0 }
    guard case .direct = inPlace.program else { throw TestError(3) }
  }

  @Test(arguments: [false, true])
  func a_throw_fails_the_run_and_skips_the_rest(inline: Bool) async {
    let rest = Tally()
    let performer: any BlockPerformer = inline ? InlinePerformer() : testQueue()
    let failing = AsyncFunc<Int, Int>.sync(on: performer) { _ in throw TestError(7) }
    let chain =
      AsyncFunc<Int, Int>.sync { $0 } +> failing
      +> AsyncFunc<Int, Int>.sync {
        rest.add()
        return $0
      }
    let result = await runToCompletion(chain, 1)
    #expect(result.failure as? TestError == TestError(7))
    #expect(rest.value == 0)
  }

  @Test(arguments: [false, true])
  func a_run_cancelled_while_the_block_waits_never_calls_the_body(spelledWithOn: Bool) async {
    let performer = HeldPerformer()
    let called = Tally()
    let body: @Sendable (Int) -> Int = {
      called.add()
      return $0
    }
    let hop =
      spelledWithOn
      ? AsyncFunc<Int, Int>.sync(body).on(performer) : .sync(on: performer, body)
    // After a synchronous stage, so the run's own loop reaches the hop.
    let chain = AsyncFunc<Int, Int>.sync { $0 } +> hop
    let done = Gate()
    let token = chain.run(1) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    await performer.arrived.wait()
    token.cancel()
    performer.runAll()
    await done.wait()
    #expect(called.value == 0)
  }

  @Test func a_hop_started_by_a_fold_and_cancelled_while_it_waits_never_calls_the_body() async {
    let performer = HeldPerformer()
    let called = Tally()
    let hop = AsyncFunc<Int, Int>.sync(on: performer) {
      called.add()
      return $0
    }
    let done = Gate()
    let token = hop.concurrentMap().run([1]) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    await performer.arrived.wait()
    token.cancel()
    performer.runAll()
    await done.wait()
    #expect(called.value == 0)
  }

  @Test func a_cancelled_runs_hop_keeps_its_slot_until_its_block_has_run() async {
    // As a callback body that ignores cancellation keeps its slot: a hop waiting for its
    // performer is work in flight, even once its run is over.
    let performer = TestPerformer()
    let arrivals = Countdown(2)
    let counting = ArrivalPerformer(performer, arrivals)
    let limited = AsyncFunc<Int, Int>.sync(on: counting) { $0 }.limit(1)
    let first = Gate()
    let token = limited.run(0) { result in
      #expect(result.failure is CancellationError)
      first.open()
    }
    #expect(performer.pendingCount == 1)
    token.cancel()
    await first.wait()  // The result is out at once...
    let second = Gate()
    limited.run(1) { result in
      #expect((try? result.get()) == 1)
      second.open()
    }
    #expect(performer.pendingCount == 1)  // ...but the hop still holds the slot.
    performer.runNext()
    await arrivals.wait()
    performer.runAll()
    await second.wait()
  }

  /// Hands blocks on to `performer`, counting each arrival.
  final class ArrivalPerformer: BlockPerformer {
    let performer: TestPerformer
    let arrivals: Countdown
    init(_ performer: TestPerformer, _ arrivals: Countdown) {
      self.performer = performer
      self.arrivals = arrivals
    }
    func perform(_ work: @escaping @Sendable () -> Void) {
      performer.perform(work)
      arrivals.tick()
    }
  }

  @Test func hops_as_the_elements_of_a_limited_fold_give_their_slots_back() async throws {
    let hop = AsyncFunc<Int, Int>.sync(on: testQueue()) { $0 * 2 }
    #expect(try await hop.concurrentMap(limit: 2)(Array(0..<100)) == (0..<100).map { $0 * 2 })
  }

  @Test(.timeLimit(.minutes(1)))
  func a_performer_that_runs_the_block_at_once_keeps_a_long_chain_on_one_stack() async throws {
    let add = AsyncFunc<Int, Int>.sync(on: InlinePerformer()) { $0 + 1 }
    let chain = AsyncFunc.serial(Array(repeating: add, count: 100_000))
    // On a 512 KiB stack: a loop that nested once per hop would overflow it.
    let result = await withCheckedContinuation { continuation in
      let thread = Thread { chain.run(0) { continuation.resume(returning: $0) } }
      thread.stackSize = 512 * 1024
      thread.start()
    }
    #expect(try result.get() == 100_000)
  }

  @Test func an_observer_sees_the_stage_when_the_performer_runs_it() async {
    final class Events: RunObserver {
      let all = Recorder<String>()
      func observe(_ event: RunEvent) {
        if event.kind == .stageStarted { all.record("start \(event.subject)") }
        if event.kind == .stageEnded { all.record("end \(event.subject)") }
      }
    }
    let performer = HeldPerformer()
    let events = Events()
    let hop = AsyncFunc<Int, Int>.sync(on: performer, name: "hop") { $0 }
    let done = Gate()
    hop.run(1, observer: events) { _ in done.open() }
    await performer.arrived.wait()
    #expect(events.all.all.isEmpty)
    performer.runAll()
    await done.wait()
    #expect(events.all.all == ["start hop", "end hop"])
  }

  @Test(.timeLimit(.minutes(1)))
  func runs_cancelled_at_any_moment_complete_exactly_once_with_no_body_after_the_cancel()
    async
  {
    // Many chains of hops on a concurrent queue, each cancelled from another thread at a
    // different point: every run completes once, and no body starts after its run's cancel
    // returned. ThreadSanitizer runs this too.
    let queue = DispatchQueue(label: "hop.stress", attributes: .concurrent)
    let runs = 400
    let completions = Tally()
    let late = Tally()
    let finished = Countdown(runs)
    for index in 0..<runs {
      let cancelled = Atomic(false)
      let step = AsyncFunc<Int, Int>.sync(on: queue) { x in
        if cancelled.load(ordering: .acquiring) { late.add() }
        return x &+ 1
      }
      let once = Atomic(false)
      let token = AsyncFunc.serial(Array(repeating: step, count: 20)).run(0) { _ in
        if once.exchange(true, ordering: .relaxed) { Issue.record("completed twice") }
        completions.add()
        finished.tick()
      }
      queue.async {
        for _ in 0..<(index % 7) { _ = token.isCancelled }
        token.cancel()
        cancelled.store(true, ordering: .releasing)
      }
    }
    await finished.wait()
    #expect(completions.value == runs)
    #expect(late.value == 0)
  }
}
