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
    parking.release(0, .failure(ProbeFailure()))  // a late failure does not replace it
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
    parking.release(0, .failure(ProbeFailure()))
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
}
