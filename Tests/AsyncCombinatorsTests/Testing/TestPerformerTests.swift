import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct TestPerformerTests {
  @Test func a_hop_waits_until_the_test_runs_it() throws {
    let performer = TestPerformer()
    let started = Atomic(false)
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let work = AsyncFunc<Int, Int>.sync {
      started.store(true, ordering: .relaxed)
      return $0 + 1
    }
    work.on(performer).run(1) { result in outcome.withLock { $0 = result } }
    #expect(performer.pendingCount == 1)
    #expect(started.load(ordering: .relaxed) == false)
    #expect(performer.runNext())
    #expect(try outcome.withLock { $0 }?.get() == 2)
    #expect(performer.runNext() == false)
  }

  @Test func run_next_runs_one_block_in_submission_order() {
    let performer = TestPerformer()
    let order = Recorder<Int>()
    for index in 0..<3 {
      AsyncFunc<Int, Int>.sync {
        order.record($0)
        return $0
      }.on(performer).run(index) { _ in }
    }
    performer.runNext()
    #expect(order.all == [0])
    #expect(performer.runAll() == 2)
    #expect(order.all == [0, 1, 2])
  }

  @Test func run_all_runs_blocks_that_the_blocks_it_runs_hand_over() throws {
    let performer = TestPerformer()
    let twoHops =
      AsyncFunc<Int, Int>.sync { $0 + 1 }.on(performer) +> AsyncFunc.sync { $0 * 2 }.on(performer)
    let outcome = Locked<Result<Int, any Error>?>(nil)
    twoHops.run(1) { result in outcome.withLock { $0 = result } }
    #expect(performer.runAll() == 2)
    #expect(try outcome.withLock { $0 }?.get() == 4)
  }

  @Test func a_run_cancelled_before_the_hop_never_starts() {
    let performer = TestPerformer()
    let started = Atomic(false)
    let work = AsyncFunc<Int, Int>.sync {
      started.store(true, ordering: .relaxed)
      return $0
    }
    let outcome = Locked<Result<Int, any Error>?>(nil)
    work.on(performer).run(1) { result in outcome.withLock { $0 = result } }.cancel()
    performer.runAll()
    #expect(started.load(ordering: .relaxed) == false)
    #expect(outcome.withLock { $0?.failure } is CancellationError)
  }

  @Test func description_names_the_performer() {
    let work = AsyncFunc<Int, Int>.sync(name: "show") { $0 }
    #expect("\(work.on(TestPerformer()))" == "show.on(TestPerformer)")
  }
}
