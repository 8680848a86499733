import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct UserStop: Error, Equatable {}

/// The cause a token reads, as text: causes are compared by what they print.
private func describe(_ cause: (any Error)?) -> String {
  cause.map { "\($0)" } ?? "none"
}

@Suite struct CauseTests {
  @Test func a_token_has_no_cause_until_cancelled_and_the_first_cause_wins() {
    let token = CancellationToken()
    #expect(token.cause == nil)
    token.cancel(cause: UserStop())
    token.cancel(cause: TestError(1))
    token.cancel()
    #expect(token.cause as? UserStop == UserStop())
  }

  @Test func cancel_without_a_cause_gives_cancellation_error() {
    let token = CancellationToken()
    let (child, _) = token.makeChild()
    token.cancel()
    #expect(token.cause is CancellationError)
    #expect(child.cause is CancellationError)
  }

  @Test func a_child_cancelled_through_its_parent_has_the_parents_cause() {
    let parent = CancellationToken()
    let (linked, _) = parent.makeChild()
    let (unlinked, _) = parent.makeChild()
    let (grandchild, _) = linked.makeChild()
    let heard = Recorder<String>()
    linked.onCancel { heard.record(describe(linked.cause)) }
    #expect(grandchild.cause == nil)
    parent.cancel(cause: UserStop())
    #expect(heard.all == [describe(UserStop())])
    #expect(linked.cause is UserStop)
    #expect(unlinked.cause is UserStop)
    #expect(grandchild.cause is UserStop)
    // Cancelled again on its own, a child keeps the cause it has.
    unlinked.cancel(cause: TestError(2))
    #expect(unlinked.cause is UserStop)
  }

  @Test func a_child_cancelled_first_keeps_its_own_cause_when_the_parent_is_cancelled_later() {
    let parent = CancellationToken()
    let (child, _) = parent.makeChild()
    child.cancel(cause: TestError(1))
    parent.cancel(cause: UserStop())
    #expect(child.cause as? TestError == TestError(1))
    #expect(parent.cause is UserStop)
  }

  @Test func a_timeout_gives_its_timeout_error_to_the_bodies_and_the_run_fails_with_it() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    parking.function.timeout(.milliseconds(100), clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
    }
    let body = parking.takeAll()[0]
    #expect(body.token.cause == nil)
    clock.advance(by: .milliseconds(100))
    #expect(body.token.cause as? TimeoutError == TimeoutError(duration: .milliseconds(100)))
    #expect(
      outcome.withLock { $0 }?.failure as? TimeoutError
        == TimeoutError(duration: .milliseconds(100)))
  }

  @Test func a_user_cancel_under_a_timeout_gives_the_users_cause_and_cancellation_error() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let run = parking.function.timeout(.milliseconds(100), clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
    }
    let body = parking.takeAll()[0]
    run.cancel(cause: UserStop())
    #expect(body.token.cause is UserStop)
    #expect(outcome.withLock { $0 }?.failure is CancellationError)
    clock.advance(by: .milliseconds(100))
    #expect(body.token.cause is UserStop)
  }

  @Test func latest_gives_a_superseded_error_to_the_run_it_supersedes() {
    let parking = Parking<Int, Int>()
    let latest = parking.function.latest()
    let first = Locked<Result<Int, any Error>?>(nil)
    latest.run(1) { result in first.withLock { $0 = result } }
    latest.run(2) { _ in }
    let bodies = parking.takeAll()
    #expect(bodies[0].token.cause as? SupersededError == SupersededError())
    #expect(bodies[1].token.cause == nil)
    #expect(first.withLock { $0 }?.failure is CancellationError)
    bodies[1].complete(.success(2))
  }

  @Test func a_failing_branch_gives_its_failure_to_the_sibling_it_cancels() {
    let parking = Parking<Int, Int>()
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(7) }
    let joined = parking.function <> failing
    let outcome = Locked<Result<(Int, Int), any Error>?>(nil)
    joined.run(1) { result in outcome.withLock { $0 = result } }
    let body = parking.takeAll()[0]
    #expect(body.token.cause as? TestError == TestError(7))
    #expect(outcome.withLock { $0 }?.failure as? TestError == TestError(7))
  }

  @Test func a_fold_over_its_tolerance_gives_the_failure_to_the_elements_it_cancels() {
    let parking = Parking<Int, Int>()
    let element = AsyncFunc<Int, Int> { input, token, complete in
      if input == 0 { return complete(.failure(TestError(3))) }
      parking.function.run(input, token: token, completion: complete)
    }
    // The parked element starts first, then the failing one.
    let fold = element.concurrentMap()
    let outcome = Locked<Result<[Int], any Error>?>(nil)
    fold.run([1, 0]) { result in outcome.withLock { $0 = result } }
    let body = parking.takeAll()[0]
    #expect(body.token.cause as? TestError == TestError(3))
    #expect(outcome.withLock { $0 } != nil)
  }

  @Test(.timeLimit(.minutes(1)))
  func a_failing_stream_fold_gives_the_failure_to_the_elements_it_cancels() async {
    let parking = Parking<Int, Int>()
    let element = AsyncFunc<Int, Int> { input, token, complete in
      if input == 0 { return complete(.failure(TestError(5))) }
      parking.function.run(input, token: token, completion: complete)
    }
    // The parked element is pulled and started first, then the failing one.
    let stream = element.concurrentMap(over: ArraySource([1, 0]), limit: 2)
    // The stream ends with the tolerance's error, and gives its elements that error.
    await #expect(throws: FailureRateExceeded.self) { for try await _ in stream {} }
    let body = parking.takeAll()[0]
    #expect(body.token.cause is FailureRateExceeded)
    body.complete(.success(1))
  }

  @Test func the_losers_of_a_race_get_a_lost_race_error() throws {
    let parking = Parking<Int, Int>()
    let quick = AsyncFunc<Int, Int>.sync { $0 }
    let raced = AsyncFunc.race([parking.function, quick])
    let outcome = Locked<Result<Int, any Error>?>(nil)
    raced.run(4) { result in outcome.withLock { $0 = result } }
    let loser = parking.takeAll()[0]
    #expect(loser.token.cause as? LostRaceError == LostRaceError())
    #expect(try outcome.withLock { $0 }?.get() == 4)
  }

  @Test func a_cancelled_task_awaiting_a_run_gives_cancellation_error() async {
    let parking = Parking<Int, Int>()
    let task = Task { try await parking.function(1) }
    await parking.waitForStarts(1)
    let body = parking.takeAll()[0]
    task.cancel()
    _ = await task.result
    #expect(body.token.cause is CancellationError)
    body.complete(.success(1))
  }

  @Test(.timeLimit(.minutes(1)))
  func a_timeout_racing_a_users_cancel_settles_one_cause_that_every_body_reads() async {
    // The timer fires on one thread while the user cancels on another, and readers read the
    // bodies' causes meanwhile: every read, during and after, says the same cause.
    for _ in 0..<200 {
      let clock = TestClock()
      let parking = Parking<Int, Int>()
      let function = (parking.function <> parking.function <> parking.function)
        .timeout(.milliseconds(100), clock: clock)
      let run = CancellationToken()
      function.run(1, token: run) { _ in }
      await parking.waitForStarts(3)
      let bodies = parking.takeAll()
      let reads = Recorder<String>()
      let done = Countdown(2 + bodies.count)
      BlockingLane(name: "timer").async {
        clock.advance(by: .milliseconds(100))
        done.tick()
      }
      BlockingLane(name: "user").async {
        run.cancel(cause: UserStop())
        done.tick()
      }
      for body in bodies {
        BlockingLane(name: "reader").async {
          while !body.token.isCancelled {}
          reads.record(describe(body.token.cause))
          done.tick()
        }
      }
      await done.wait()
      for body in bodies { reads.record(describe(body.token.cause)) }
      let seen = Set(reads.all)
      #expect(seen.count == 1)
      #expect(
        seen == [describe(UserStop())]
          || seen == [describe(TimeoutError(duration: .milliseconds(100)))])
    }
  }
}
