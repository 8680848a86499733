import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Cancellation is control flow, not an error to show: everything in this library that
/// tells the two apart hands back `CancellationError` itself, never wrapped or translated.
@Suite struct CancellationIsNotFailureTests {
  private func isPlainCancellation(_ result: Result<some Any, any Error>) -> Bool {
    guard case .failure(let error) = result else { return false }
    return type(of: error) == CancellationError.self
  }

  @Test func a_superseded_latest_run_reports_plain_cancellation() {
    let parking = ParkedCompletions<Int>()
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      .latest()
    let first = Recorder<Result<Int, any Error>>()
    fetch.run(1) { first.record($0) }
    fetch.run(2) { _ in }
    parking.release(0, .failure(TestError()))  // a late failure does not replace it
    #expect(first.count == 1)
    #expect(first.all.allSatisfy(isPlainCancellation))
  }

  @Test func a_cancelled_serialized_run_reports_plain_cancellation() {
    let parking = ParkedCompletions<Int>()
    let write = AsyncFunc<Int, Int>(name: "write") { _, complete in parking.park(complete) }
      .serialized()
    let outcomes = Recorder<Result<Int, any Error>>()
    write.run(1) { outcomes.record($0) }.cancel()
    write.run(2) { outcomes.record($0) }.cancel()
    parking.release(0, .failure(TestError()))
    #expect(outcomes.count == 2)
    #expect(outcomes.all.allSatisfy(isPlainCancellation))
  }

  @Test func a_cancelled_ordered_job_reports_plain_cancellation() async {
    let queue = OrderedQueue()
    let plug = Gate()
    queue.submit { await plug.wait() }
    let job = queue.submit { 1 }
    job.cancel()
    plug.open()
    #expect(isPlainCancellation(await job.result))
  }

  @Test func a_cancelled_commit_reports_plain_cancellation() async {
    let parking = ParkedCompletions<Int>()
    let refresh = AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      .commit { _ in }
    let outcome = Recorder<Result<Int, any Error>>()
    let token = refresh.run(1) { outcome.record($0) }
    token.cancel()
    parking.release(0, .success(1))
    #expect(outcome.all.allSatisfy(isPlainCancellation))
    #expect(outcome.count == 1)
  }

  @Test func retry_hands_back_a_superseded_runs_cancellation_without_retrying() {
    let parking = ParkedCompletions<Int>()
    let attempts = Recorder<Int>()
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { input, complete in
      attempts.record(input)
      parking.park(complete)
    }.latest().retry(3)
    let first = Recorder<Result<Int, any Error>>()
    fetch.run(1) { first.record($0) }
    fetch.run(2) { _ in }
    #expect(first.count == 1)
    #expect(first.all.allSatisfy(isPlainCancellation))
    #expect(attempts.all == [1, 2])  // the superseded run was not tried again
  }

  @Test func retry_hands_back_cancellation_during_its_wait_unwrapped() {
    let failing = AsyncFunc<Int, Int>.sync(name: "flaky") { _ in throw TestError() }
      .retry(2, delay: .seconds(30))
    let outcome = Recorder<Result<Int, any Error>>()
    failing.run(1) { outcome.record($0) }.cancel()
    #expect(outcome.count == 1)
    #expect(outcome.all.allSatisfy(isPlainCancellation))
  }

  @Test func the_promise_facade_never_reports_cancellation_to_error() async {
    let parking = ParkedCompletions<Int>()
    let reported = Recorder<String>()
    let always = Gate()
    let queue = DispatchQueue(label: "promise.handlers")
    let load = AsyncFunc<Void, Int>(name: "load") { _, complete in parking.park(complete) }
    let token = Promise(load)
      .always(on: queue) { always.open() }
      .error(on: queue) { reported.record("\($0)") }
    token.cancel()
    await always.wait()
    parking.release(0, .failure(TestError()))  // a late failure is dropped too
    // `error` would be queued from inside the `always` block: the first flush runs after that
    // block, the second after anything it queued.
    for _ in 0..<2 { await withCheckedContinuation { done in queue.async { done.resume() } } }
    #expect(reported.all.isEmpty)
  }

  // The one rule, on each operation: a part's own CancellationError ends the whole, bare.

  @Test func a_timeouts_inner_cancellation_passes_through_and_removes_the_timer() async {
    let clock = TestClock()
    let cancels = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let result = await runToCompletion(cancels.timeout(.seconds(5), clock: clock), 0)
    #expect(isPlainCancellation(result))
    #expect(clock.pendingCount == 0)
  }

  @Test func a_branchs_own_cancellation_ends_parallel_bare_and_cancels_the_others() async {
    let parking = Parking<Int, Int>()
    let cancels = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let result = await runToCompletion(parallel(parking.function, cancels, parking.function), 0)
    #expect(isPlainCancellation(result))
    #expect(parking.takeAll().allSatisfy { $0.token.isCancelled })
  }

  @Test func a_contenders_own_cancellation_ends_the_race_bare() async {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    let cancels = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let result = await runToCompletion(AsyncFunc.race([failing, cancels, failing]), 0)
    #expect(isPlainCancellation(result))
  }

  @Test func settled_and_recover_with_pass_an_inner_cancellation_through() async {
    let cancels = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    #expect(isPlainCancellation(await runToCompletion(cancels.settled(), 0)))
    let fallback = AsyncFunc<any Error, Int>.sync { _ in 0 }
    #expect(isPlainCancellation(await runToCompletion(cancels.recover(with: fallback), 0)))
  }

  @Test func an_elements_own_cancellation_is_not_tolerated_even_when_everything_is() async {
    let cancelsOne = AsyncFunc<Int, Int>.sync { x in
      if x == 2 { throw CancellationError() }
      return x
    }
    let map = cancelsOne.concurrentMap(limit: 1, acceptableFailure: .unlimited)
    #expect(isPlainCancellation(await runToCompletion(map, [1, 2, 3])))
  }
}
