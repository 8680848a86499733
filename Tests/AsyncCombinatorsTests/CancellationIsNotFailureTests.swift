import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinators

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
}
