import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct CommitTests {
  @Test func commits_the_output_and_passes_it_on() async throws {
    let saved = Recorder<Int>()
    let refresh = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 * 10 }
      .commit(name: "save") { saved.record($0) }
    #expect(try await refresh(4) == 40)
    #expect(saved.all == [40])
  }

  @Test func a_throwing_side_effect_fails_the_run() async {
    let refresh = AsyncFunc<Int, Int>.sync { $0 }.commit { _ in throw TestError() }
    await #expect(throws: TestError.self) { try await refresh(1) }
  }

  @Test func never_commits_after_the_run_was_cancelled() async {
    let parking = ParkedCompletions<Int>()
    let saved = Recorder<Int>()
    let refresh = AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      .commit { saved.record($0) }
    let outcome = Recorder<String>()
    let token = refresh.run(1) { outcome.record("\($0)") }
    await parking.arrivals(1)
    token.cancel()
    parking.release(0, .success(7))  // the fetch ignored cancellation and came back anyway
    #expect(saved.all.isEmpty)
    #expect(outcome.all == ["failure(Swift.CancellationError())"])
  }

  @Test func cancel_returns_only_after_a_commit_in_progress_has_finished() async {
    let trace = Recorder<String>()
    let committing = Gate()
    let cancelling = Gate()
    let token = CancellationToken()
    token.onCancel { cancelling.open() }  // registered first, so it runs first
    let refresh = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }.commit { _ in
      committing.open()
      cancelling.blockingWait()  // on the lane: the cancel is under way
      trace.record("commit finished")
    }
    // The whole run on a thread of its own, so the commit blocks that thread and no other.
    blockingLane("commit").async { refresh.run(1, token: token) { _ in } }
    await committing.wait()
    let cancelled = Countdown(1)
    blockingLane("canceller").async {
      token.cancel()
      trace.record("cancel returned")
      cancelled.tick()
    }
    await cancelled.wait()
    #expect(trace.all == ["commit finished", "cancel returned"])
  }

  @Test(.timeLimit(.minutes(1)))
  func every_caller_of_cancel_returns_only_after_the_commit_in_progress_has_finished() async {
    // A timeout (another thread) cancels the commit's token first, while the side effect runs;
    // the user's `cancel()` of the same token comes second and must wait for it too.
    let trace = Recorder<String>()
    let committing = Gate()
    let release = Gate()
    let token = CancellationToken()
    let refresh = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }.commit { _ in
      committing.open()
      release.blockingWait()
      trace.record("commit finished")
    }
    blockingLane("commit").async { refresh.run(1, token: token) { _ in } }
    await committing.wait()
    let first = Countdown(1)
    let second = Countdown(1)
    blockingLane("timeout").async {
      token.cancel()  // Runs the commit's handler, which waits for the side effect.
      first.tick()
    }
    await token.waitUntilCancelStarted()
    blockingLane("user").async {
      token.cancel()
      trace.record("second cancel returned")
      second.tick()
    }
    await token.waitUntilCancellersWaiting(1)
    release.open()
    await first.wait()
    await second.wait()
    #expect(trace.all == ["commit finished", "second cancel returned"])
  }

  /// Runs `function` on a lane with a commit that blocks until `release`, lets `other`
  /// cancel the commit's own token (a child of the run's) on a second lane, then cancels the
  /// run's token on a third: that `cancel()` must return only after the side effect.
  private static func userCancelWaitsForTheCommit(
    of function: (AsyncFunc<Int, Int>) -> AsyncFunc<Int, Int>,
    other: @escaping @Sendable () -> Void
  ) async -> [String] {
    let trace = Recorder<String>()
    let committing = Gate()
    let release = Gate()
    let commitToken = Locked<CancellationToken?>(nil)
    // Completes on a lane of its own once the run's start has returned: every branch has
    // started, and a timeout has armed its timer, before the side effect runs.
    let started = Gate()
    let capture = AsyncFunc<Int, Int>(name: "fetch") { x, token, complete in
      guard x == 1 else { return complete(.success(x)) }
      commitToken.withLock { $0 = token }
      blockingLane("fetch").async {
        started.blockingWait()
        complete(.success(x))
      }
    }
    let committed = capture.commit { x in
      guard x == 1 else { return }  // Only the first run's side effect is held.
      committing.open()
      release.blockingWait()
      trace.record("commit finished")
    }
    let token = CancellationToken()
    let run = function(committed)
    blockingLane("commit").async {
      run.run(1, token: token) { _ in }
      started.open()
    }
    await committing.wait()
    let inner = commitToken.withLock { $0 }!
    let otherDone = Countdown(1)
    blockingLane("other").async {
      other()  // Cancels `inner` and waits in the commit's handler for the side effect.
      otherDone.tick()
    }
    await inner.waitUntilCancelStarted()
    let userDone = Countdown(1)
    blockingLane("user").async {
      token.cancel()
      trace.record("user's cancel returned")
      userDone.tick()
    }
    // Until the user's cancel waits for the commit's token, or has wrongly returned.
    while inner.waitingCancellerCount == 0 && trace.all.isEmpty { await Task.yield() }
    release.open()
    await otherDone.wait()
    await userDone.wait()
    return trace.all
  }

  @Test(.timeLimit(.minutes(1)))
  func the_runs_cancel_waits_for_a_commit_whose_timeout_fired_meanwhile() async {
    let clock = TestClock()
    let trace = await CommitTests.userCancelWaitsForTheCommit(
      of: { $0.timeout(.seconds(1), clock: clock) }, other: { clock.advance(by: .seconds(1)) })
    #expect(trace == ["commit finished", "user's cancel returned"])
  }

  @Test(.timeLimit(.minutes(1)))
  func the_runs_cancel_waits_for_a_commit_whose_run_a_newer_run_superseded() async {
    let newer = Locked<(@Sendable () -> Void)?>(nil)
    let trace = await CommitTests.userCancelWaitsForTheCommit(
      of: { committed in
        let latest = committed.latest()
        newer.withLock { $0 = { latest.run(2) { _ in } } }
        return latest
      },
      other: { newer.withLock { $0 }!() })
    #expect(trace == ["commit finished", "user's cancel returned"])
  }

  @Test(.timeLimit(.minutes(1)))
  func the_runs_cancel_waits_for_a_commit_whose_sibling_branch_failed_meanwhile() async {
    struct Failed: Error {}
    let sibling = ParkedCompletion<Int>()
    let trace = await CommitTests.userCancelWaitsForTheCommit(
      of: { committed in
        (committed <> AsyncFunc<Int, Int> { _, complete in sibling.park(complete) })
          +> .sync { $0.0 }
      },
      other: { sibling.complete(.failure(Failed())) })
    #expect(trace == ["commit finished", "user's cancel returned"])
  }

  @Test func a_finished_commit_leaves_no_cancellation_handler_on_the_runs_token() {
    let saved = Recorder<Int>()
    let refresh = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }.commit { saved.record($0) }
    let outcome = Recorder<String>()
    let token = refresh.run(1) { outcome.record("\($0)") }
    #expect(outcome.all == ["success(1)"])
    #expect(token.registrationCount == 0)  // a handler left there would keep the barrier
  }

  @Test func describes_itself_as_a_named_stage() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect(fetch.commit(name: "saveProfile") { _ in }.description == "fetch +> saveProfile")
  }
}
