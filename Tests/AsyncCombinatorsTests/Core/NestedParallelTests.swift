import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A join nested in another's branch, or started from the completion of one, starts at once
/// and means what it means on its own: a synchronous function completes before its run
/// returns, wherever it runs.
@Suite(.timeLimit(.minutes(1))) struct NestedParallelTests {
  private static let one = AsyncFunc<Int, Int>.sync { $0 + 1 }
  private static let two = AsyncFunc<Int, Int>.sync { $0 + 2 }

  /// Runs `function` on `input` and returns its result if the run completed before returning.
  private static func runNow<I, O>(_ function: AsyncFunc<I, O>, _ input: I) -> Result<O, any Error>?
  {
    let result = Mutex<Result<O, any Error>?>(nil)
    function.run(input) { outcome in result.withLock { $0 = outcome } }
    return result.withLock { $0 }
  }

  @Test func a_join_started_inside_a_branch_completes_before_its_run_returns() async throws {
    let inner = NestedParallelTests.one <> NestedParallelTests.two
    let probe = AsyncFunc<Int, Bool>.sync { x in
      (try? NestedParallelTests.runNow(inner, x)?.get()).map { $0 == (x + 1, x + 2) } ?? false
    }
    let outer = probe <> NestedParallelTests.one
    let (completedInline, _) = try #require(NestedParallelTests.runNow(outer, 1)).get()
    #expect(completedInline)
  }

  @Test func a_join_started_after_a_join_completes_before_its_run_returns() throws {
    // The stage after a join runs in the join's completion, on the thread that joined it.
    let inner = NestedParallelTests.one <> NestedParallelTests.two
    let probe = AsyncFunc<(Int, Int), Bool>.sync { pair in
      (try? NestedParallelTests.runNow(inner, pair.0)?.get()).map { $0 == (pair.0 + 1, pair.0 + 2) }
        ?? false
    }
    let outer = NestedParallelTests.one <> NestedParallelTests.two +> probe
    #expect(try NestedParallelTests.runNow(outer, 1)?.get() == true)
    // And when the join completes later, from a branch's completion on this thread.
    let parked = ParkedCompletion<Int>()
    let later = AsyncFunc<Int, Int> { _, complete in parked.park(complete) }
    let resumed = Mutex<Result<Bool, any Error>?>(nil)
    (later <> NestedParallelTests.two +> probe).run(1) { result in
      resumed.withLock { $0 = result }
    }
    parked.complete(.success(1))
    #expect(try resumed.withLock { try $0?.get() } == true)
  }

  @Test func a_body_that_waits_for_a_join_it_started_inside_a_branch_gets_its_result() async throws
  {
    // The inner join's sides complete on another queue; the body blocks its own thread (a
    // thread of its own, not the pool's) until the join has joined them.
    let lane = DispatchQueue(label: "nested-parallel")
    let later = AsyncFunc<Int, Int> { x, complete in lane.async { complete(.success(x * 2)) } }
    let waits = AsyncFunc<Int, Int>.sync { x in
      let joined = DispatchSemaphore(value: 0)
      let total = Mutex(0)
      (later <> later).run(x) { result in
        total.withLock { $0 = (try? result.get()).map { $0 + $1 } ?? -1 }
        joined.signal()
      }
      guard joined.wait(timeout: .now() + 10) == .success else { return -2 }
      return total.withLock { $0 }
    }
    let outer = waits <> NestedParallelTests.one
    let result = await withCheckedContinuation { continuation in
      blockingLane("nested-parallel").async {
        outer.run(3) { continuation.resume(returning: $0) }
      }
    }
    let (total, _) = try result.get()
    #expect(total == 12)
  }

  @Test func a_synchronous_contender_wins_a_race_inside_a_branch_as_it_does_alone() throws {
    let first = AsyncFunc<Int, String>.sync { _ in "a" } <> AsyncFunc<Int, String>.sync { _ in "b" }
    let pair = first +> AsyncFunc<(String, String), String>.sync { $0.0 + $0.1 }
    let race = AsyncFunc.race([pair, .sync { _ in "c" }])
    #expect(try NestedParallelTests.runNow(race, 0)?.get() == "ab")
    let branch = race <> NestedParallelTests.one
    #expect(try NestedParallelTests.runNow(branch, 0)?.get().0 == "ab")
  }

  @Test func a_synchronous_join_is_not_timed_out_inside_a_branch_as_it_is_not_alone() throws {
    let timed = (NestedParallelTests.one <> NestedParallelTests.two).timeout(.zero)
    #expect(try NestedParallelTests.runNow(timed, 1)?.get().0 == 2)
    let branch = timed <> NestedParallelTests.one
    #expect(try NestedParallelTests.runNow(branch, 1)?.get().0.1 == 3)
  }
}
