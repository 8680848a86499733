import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {
  var side = 0
}
private struct NoOverlap: Error {}

/// Something a completion captures, to see whether the run lets go of it.
private final class Witness: Sendable {}

@Suite(.timeLimit(.minutes(1))) struct ParallelTests {
  @Test func pairs_both_results() async throws {
    let a = AsyncFunc<Int, Int>.sync { $0 + 1 }
    let b = AsyncFunc<Int, String>.async { "\($0)" }
    let (x, y) = try await runToCompletion(a <> b, 1).get()
    #expect(x == 2 && y == "1")
  }

  @Test func both_sides_start_before_either_completes() async throws {
    let leftStarted = DispatchSemaphore(value: 0)
    let rightStarted = DispatchSemaphore(value: 0)
    // Each side completes only once the other has started: a join that waited for the left
    // before starting the right would fail here.
    func side(_ mine: DispatchSemaphore, awaits other: DispatchSemaphore) -> AsyncFunc<Int, Int> {
      let lane = blockingLane("side")
      return AsyncFunc { x, complete in
        lane.async {
          mine.signal()
          let overlapped = other.wait(timeout: .now() + 5) == .success
          complete(overlapped ? .success(x) : .failure(NoOverlap()))
        }
      }
    }
    let both =
      side(leftStarted, awaits: rightStarted) <> side(rightStarted, awaits: leftStarted)
    let (left, right) = try await runToCompletion(both, 7).get()
    #expect(left == 7 && right == 7)
  }

  @Test func both_sides_get_the_same_input() async throws {
    let seen = Recorder<Int>()
    let record = AsyncFunc<Int, Int>.sync { x in
      seen.record(x)
      return x
    }
    _ = try await runToCompletion(record <> record, 9).get()
    #expect(seen.all == [9, 9])
  }

  @Test func array_fold_keeps_input_order_whatever_the_completion_order() async throws {
    let parked = (0..<4).map { _ in ParkedCompletion<String>() }
    let branches = (0..<4).map { index in
      AsyncFunc<Int, String> { _, complete in parked[index].park(complete) }
    }
    let results = Recorder<Result<[String], any Error>>()
    AsyncFunc.parallel(branches).run(0) { results.record($0) }
    for branch in parked { await branch.arrived.wait() }
    for index in [2, 0, 3, 1] {
      #expect(results.count == 0)
      parked[index].complete(.success("r\(index)"))
    }
    #expect(try results.all.map { try $0.get() } == [["r0", "r1", "r2", "r3"]])
  }

  @Test func array_fold_of_nothing_is_empty_at_once() {
    let results = Recorder<[Int]?>()
    AsyncFunc<Int, Int>.parallel([]).run(1) { results.record(try? $0.get()) }
    #expect(results.all == [[]])
  }

  @Test func variadic_parallel_returns_a_flat_tuple() async throws {
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 + 1 }
    let g = AsyncFunc<Int, String>.async(name: "g") { "\($0)" }
    let h = AsyncFunc<Int, Bool>(name: "h") { x, complete in complete(.success(x > 0)) }
    let all: AsyncFunc<Int, (Int, String, Bool)> = parallel(f, g, h)
    let (a, b, c) = try await all(1)
    #expect(a == 2 && b == "1" && c)
    let two: AsyncFunc<Int, (Int, String)> = parallel(f, g)
    #expect(try await two(1) == (2, "1"))
  }

  @Test func named_twin_is_the_operator() async throws {
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 + 1 }
    let g = AsyncFunc<Int, Int>.sync(name: "g") { $0 * 2 }
    #expect(try await parallel(f, g)(3) == (4, 6))
    #expect(String(describing: parallel(f, g)) == String(describing: f <> g))
  }

  @Test func spellings_with_different_output_types_describe_differently() {
    let u = AsyncFunc<Int, Int>.sync(name: "u") { $0 }
    let a = AsyncFunc<Int, Int>.sync(name: "a") { $0 }
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 }
    #expect(String(describing: u <> a <> f) == "u <> a <> f")
    #expect(String(describing: parallel(u, a, f)) == "parallel(u, a, f)")
    #expect(String(describing: AsyncFunc.parallel([u, a, f])) == "parallel([u, a, f])")
    #expect(String(describing: u <> (a <> f)) == "u <> (a <> f)")
  }

  @Test func an_empty_parallel_fold_describes_as_one() {
    #expect(String(describing: AsyncFunc<Int, Int>.parallel([])) == "parallel([])")
  }

  @Test func first_failure_completes_at_once_and_cancels_the_other_side() async {
    for failingSide in [0, 1] {
      let parked = ParkedCompletion<Int>()
      let otherCancelled = Gate()
      let name = "parkedSide\(failingSide)"
      let waits = AsyncFunc<Int, Int>(name: name) { _, token, complete in
        token.onCancel { otherCancelled.open() }
        parked.park(complete)
      }
      let queue = testQueue()
      let fails = AsyncFunc<Int, Int> { _, complete in
        queue.async { complete(.failure(Boom(side: failingSide))) }
      }
      let done = Gate()
      let results = Recorder<Result<(Int, Int), any Error>>()
      let both = failingSide == 0 ? (fails <> waits) : (waits <> fails)
      _ = FaultRecorder.shared
      both.run(1) {
        results.record($0)
        done.open()
      }
      await done.wait()  // While the other side is still parked.
      #expect(otherCancelled.isOpen)
      #expect(throws: Boom(side: failingSide)) { try results.all[0].get() }
      parked.complete(.success(2))  // Late: ignored.
      parked.complete(.failure(Boom(side: 9)))  // Later still, and a contract breach.
      #expect(results.count == 1)
      #expect(FaultRecorder.shared.violations(named: name).map(\.kind) == [.completionCalledTwice])
    }
  }

  @Test func late_failure_of_the_other_side_is_ignored() async {
    let left = ParkedCompletion<Int>()
    let right = ParkedCompletion<Int>()
    let both =
      AsyncFunc<Int, Int> { _, complete in left.park(complete) }
      <> AsyncFunc<Int, Int> { _, complete in right.park(complete) }
    let results = Recorder<Result<(Int, Int), any Error>>()
    both.run(1) { results.record($0) }
    right.complete(.failure(Boom(side: 1)))
    left.complete(.failure(Boom(side: 0)))
    left.complete(.success(1))
    #expect(results.count == 1)
    #expect(throws: Boom(side: 1)) { try results.all[0].get() }
  }

  @Test func a_join_that_succeeds_cancels_neither_side() {
    let parking = Parking<Int, Int>()
    let both = parking.function <> parking.function
    let results = Recorder<String>()
    both.run(1) { results.record("\($0)") }
    let parked = parking.takeAll()
    for run in parked { run.complete(.success(run.input)) }
    #expect(results.all == ["success(1, 1)"])
    #expect(parked.count == 2 && parked.allSatisfy { !$0.token.isCancelled })
  }

  @Test func array_fold_starts_no_branch_after_a_failure() async {
    let started = Recorder<Int>()
    let record = AsyncFunc<Int, Int>.sync { x in
      started.record(x)
      return x
    }
    let fails = AsyncFunc<Int, Int>.sync { _ in throw Boom() }
    await #expect(throws: Boom()) {
      try await runToCompletion(AsyncFunc.parallel([record, fails, record, record]), 1).get()
    }
    #expect(started.count == 1)
  }

  @Test func join_completes_exactly_once_under_racing_completions() async throws {
    let runs = 3000
    let queue = testQueue("race")
    let counts = (0..<runs).map { _ in Tally() }
    let wrong = Atomic<Int>(0)
    let finished = Countdown(runs)
    // Mode 0: both succeed; 1 and 2: one side fails; 3: both fail.
    func side(_ bit: Int) -> AsyncFunc<Int, Int> {
      AsyncFunc { run, complete in
        queue.async {
          complete((run % 4) & (bit + 1) != 0 ? .failure(Boom(side: bit)) : .success(run))
        }
      }
    }
    let both = side(0) <> side(1)
    for run in 0..<runs {
      both.run(run) { result in
        counts[run].add()
        let correct =
          switch (run % 4, result) {
          case (0, .success(let pair)): pair == (run, run)
          case (1, .failure(let error)): (error as? Boom) == Boom(side: 0)
          case (2, .failure(let error)): (error as? Boom) == Boom(side: 1)
          case (3, .failure(let error)): error is Boom
          default: false
          }
        if !correct { wrong.add(1, ordering: .relaxed) }
        finished.tick()
      }
    }
    await finished.wait()
    // Every branch body ran inside a `run` call above, so every block it queued is queued
    // by now: a barrier behind them sees the last of them finish.
    await withCheckedContinuation { done in queue.async(flags: .barrier) { done.resume() } }
    #expect(counts.allSatisfy { $0.value == 1 })
    #expect(wrong.load(ordering: .relaxed) == 0)
  }

  @Test func finished_parallel_run_releases_its_completion() {
    weak var released: Witness?
    do {
      let witness = Witness()
      released = witness
      let a = AsyncFunc<Int, Int>.sync { $0 }
      let b = AsyncFunc<Int, Int> { x, complete in complete(.success(x)) }
      (a <> b).run(1) { _ in _ = witness }
    }
    #expect(released == nil)
  }

  @Test func finished_serial_run_releases_its_completion() {
    weak var released: Witness?
    do {
      let witness = Witness()
      released = witness
      let a = AsyncFunc<Int, Int>.sync { $0 }
      let b = AsyncFunc<Int, Int> { x, complete in complete(.success(x)) }
      (a +> b).run(1) { _ in _ = witness }
    }
    #expect(released == nil)
  }
}
