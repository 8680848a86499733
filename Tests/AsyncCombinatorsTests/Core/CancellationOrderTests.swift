import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Cancellation happens before, not after: from the moment `cancel()` begins, no stage that
/// had not yet decided to start starts, and a run's own outcome is cancellation.
@Suite struct CancellationOrderTests {
  @Test func a_stage_behind_a_parked_branch_never_starts_once_the_run_has_delivered() async {
    let first = ParkedCompletion<Int>()
    let secondStarted = Tally()
    let firstStage = AsyncFunc<Int, Int>(name: "first") { _, complete in first.park(complete) }
    let second = AsyncFunc<Int, Int>.sync(name: "second") { x in
      secondStarted.add()
      return x
    }
    let pipeline = ((firstStage +> second) <> .sync { $0 }) +> .sync { $0.0 }
    let delivered = Gate()
    let startedWhenDelivered = Locked<Int?>(nil)
    let token = pipeline.run(1) { result in
      #expect(isCancellation(result))
      // The branch's stage completes inside the delivery, the earliest moment it could.
      first.complete(.success(1))
      startedWhenDelivered.withLock { $0 = secondStarted.value }
      delivered.open()
    }
    await first.arrived.wait()
    token.cancel()
    await delivered.wait()
    #expect(startedWhenDelivered.withLock { $0 } == 0)
    #expect(secondStarted.value == 0)
  }

  @Test func a_race_cancelled_while_starting_its_contenders_completes_with_cancellation() {
    let token = CancellationToken()
    let cancelsTheRace = AsyncFunc<Int, Int>(name: "cancelsTheRace") { _, complete in
      token.cancel()
      DispatchQueue.global().async { complete(.success(1)) }
    }
    let never = AsyncFunc<Int, Int>(name: "neverStarted") { _, _ in
      Issue.record("a contender started after the race was cancelled")
    }
    let race = AsyncFunc.race([cancelsTheRace, never])
    let outcome = Locked<Result<Int, any Error>?>(nil)
    // Nested, so the race's own completion is observed, not the enclosing run's cancellation.
    race.runNested(0, token: token) { result in outcome.withLock { $0 = result } }
    let result = outcome.withLock { $0 }
    #expect(result.map(isCancellation) == true)
  }

  @Test func a_contenders_own_cancellation_ends_the_race_and_cancels_the_others() async {
    let parking = Parking<Int, Int>()
    let cancels = AsyncFunc<Int, Int>.sync(name: "cancels") { _ in throw CancellationError() }
    let result = await runToCompletion(AsyncFunc.race([parking.function, cancels]), 0)
    #expect(isCancellation(result))
    let parked = parking.takeAll()
    #expect(parked.count == 1)
    #expect(parked.allSatisfy { $0.token.isCancelled })
  }

  @Test func a_result_delivered_while_other_handlers_still_run_is_the_cancellation() async {
    // A handler registered before the run's own runs first and, from inside it, the parked
    // stage fails with an ordinary error: the run still ends as cancelled.
    let parked = ParkedCompletion<Int>()
    let stage = AsyncFunc<Int, Int>(name: "stage") { _, complete in parked.park(complete) }
    let token = CancellationToken()
    token.onCancel { parked.complete(.failure(TestError(1))) }
    let result = Locked<Result<Int, any Error>?>(nil)
    let done = Gate()
    stage.run(0, token: token) {
      result.withLock { [r = $0] in $0 = r }
      done.open()
    }
    await parked.arrived.wait()
    token.cancel()
    await done.wait()
    #expect(result.withLock { $0 }.map(isCancellation) == true)
  }

  @Test func no_stage_starts_after_cancel_returns_when_cancelled_from_another_thread() async {
    // Many runs of a chain of callback stages hopping between queues, each cancelled from
    // another thread at a random moment: a stage may only start if it decided to before the
    // cancel began, which the stage itself checks against the cancel's completion.
    let seed = UInt64.random(in: 1...UInt64.max)
    print("seed \(seed)")
    var generator = SplitMix64(seed: seed)
    let lateStarts = Tally()
    let finished = Countdown(2000)
    for _ in 0..<2000 {
      let cancelReturned = Atomic<Bool>(false)
      let probe = AsyncFunc<Int, Int>(name: "probe") { x, token, complete in
        // A start decided before cancel() began may run after it; none may after it returned
        // *and* see its own token uncancelled.
        if cancelReturned.load(ordering: .acquiring) && !token.isCancelled { lateStarts.add() }
        DispatchQueue.global().async { complete(.success(x + 1)) }
      }
      let chain = AsyncFunc.serial(Array(repeating: probe, count: 8))
      let token = chain.run(0) { _ in finished.tick() }
      let delay = Int.random(in: 0..<200, using: &generator)
      DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(delay)) {
        token.cancel()
        cancelReturned.store(true, ordering: .releasing)
      }
    }
    await finished.wait()
    #expect(lateStarts.value == 0)
  }

  @Test func a_cancellable_stage_dropped_uncalled_leaves_nothing_on_a_shared_token() async {
    final class Request: Cancellable {
      func cancel() {}
    }
    let shared = CancellationToken()
    let finished = Countdown(1000)
    let dropsItsCallback = AsyncFunc<Int, Int>.cancellable(name: "dropsItsCallback") { _, _ in
      Request()  // The callback is released here, never called.
    }
    for input in 0..<1000 { dropsItsCallback.run(input, token: shared) { _ in finished.tick() } }
    await finished.wait()
    #expect(shared.registrationCount == 0)
  }
}
