import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinators

@Suite struct FinallyTests {
  @Test func cleanup_runs_with_the_input_after_a_success_before_the_result() async throws {
    let events = Recorder<String>()
    let work = AsyncFunc<String, Int>.async {
      events.record("work \($0)")
      return $0.count
    }
    let cleanup = AsyncFunc<String, Void>.sync { events.record("cleanup \($0)") }
    #expect(try await work.finally(cleanup)("abc") == 3)
    #expect(events.all == ["work abc", "cleanup abc"])
  }

  @Test func cleanup_runs_after_a_failure_and_the_failure_is_kept() async {
    let events = Recorder<String>()
    let work = AsyncFunc<String, Int>.sync { _ in throw TestError(1) }
    let failingCleanup = AsyncFunc<String, Void>.sync { _ in
      events.record("cleanup")
      throw TestError(2)
    }
    let result = await runToCompletion(work.finally(failingCleanup), "x")
    #expect(result.failure as? TestError == TestError(1))
    #expect(events.all == ["cleanup"])
  }

  @Test func a_failing_cleanup_fails_a_success() async {
    let work = AsyncFunc<String, Int>.sync { $0.count }
    let failingCleanup = AsyncFunc<String, Void>.sync { _ in throw TestError(2) }
    let result = await runToCompletion(work.finally(failingCleanup), "x")
    #expect(result.failure as? TestError == TestError(2))
  }

  @Test func a_cancelled_run_does_not_start_the_cleanup() async {
    let parking = Parking<String, Int>()
    let cleaned = Atomic(false)
    let cleanup = AsyncFunc<String, Void>.sync { _ in cleaned.store(true, ordering: .relaxed) }
    let done = Gate()
    let token = parking.function.finally(cleanup).run("x") { _ in done.open() }
    await parking.waitForStarts(1)
    token.cancel()
    await done.wait()
    parking.takeAll()[0].complete(.success(1))
    #expect(cleaned.load(ordering: .relaxed) == false)
  }

  @Test func description_reads_like_the_code() {
    let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }
    let progress = AsyncFunc<String, Void>.sync(name: "progress") { _ in }
    #expect("\(upload.finally(progress))" == "upload.finally(progress)")
  }
}
