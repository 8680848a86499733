import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

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

  @Test func a_cancelled_run_does_not_start_a_cleanup_that_is_not_synchronous() {
    let parking = Parking<String, Int>()
    let cleaned = Tally()
    let cleanup = AsyncFunc<String, Void>(name: "cleanup") { _, complete in
      cleaned.add()
      complete(.success(()))
    }
    let outcome = Recorder<String>()
    let token = parking.function.finally(cleanup).run("x") { outcome.record("\($0)") }
    token.cancel()
    parking.takeAll()[0].complete(.success(1))  // the body ignored the cancellation
    #expect(outcome.all == ["failure(Swift.CancellationError())"])
    #expect(cleaned.value == 0)
  }

  @Test func description_reads_like_the_code() {
    let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }
    let progress = AsyncFunc<String, Void>.sync(name: "progress") { _ in }
    #expect("\(upload.finally(progress))" == "upload.finally(progress)")
  }
}

@Suite struct FinallyClosureAndTapTests {
  @Test func the_closure_form_runs_with_the_input_after_success_and_failure() async {
    let seen = Locked<[Int]>([])
    let fine = AsyncFunc<Int, Int>.sync { $0 }.finally { input in seen.withLock { $0.append(input) }
    }
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
      .finally { input in seen.withLock { $0.append(input) } }
    #expect((try? await runToCompletion(fine, 1).get()) == 1)
    #expect(await runToCompletion(failing, 2).failure as? TestError == TestError(1))
    #expect(seen.withLock { $0 } == [1, 2])
  }

  @Test func tap_sees_input_and_result_and_passes_the_result_on() async {
    let seen = Locked<[String]>([])
    let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
      guard let number = Int(text) else { throw TestError(9) }
      return number
    }.tap { input, result in
      seen.withLock { $0.append("\(input):\((try? result.get()).map(String.init) ?? "failed")") }
    }
    #expect((try? await runToCompletion(parse, "12").get()) == 12)
    #expect(await runToCompletion(parse, "x").failure as? TestError == TestError(9))
    #expect(seen.withLock { $0 } == ["12:12", "x:failed"])
    #expect("\(parse)" == "parse.tap { … }")
  }

  @Test func a_wrapper_made_with_the_public_initializer_shows_what_it_wraps() async throws {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 + 1 }
    let logged = AsyncFunc<Int, Int>(wrapping: fetch, call: "logged()") { input, token, complete in
      fetch.run(input, token: token, completion: complete)
    }
    #expect("\(logged)" == "fetch.logged()")
    #expect("\(logged +> fetch)" == "fetch.logged() +> fetch")
    #expect(try await logged(1) == 2)
  }
}

/// `finally` with a synchronous cleanup, and `tap`, of a single callback stage: the shape most
/// code has, pinned down on its own.
@Suite struct FinallyAndTapOfOneCallbackStageTests {
  /// A callback stage that completes on another thread with `outcome(input)`.
  private func callback(
    _ name: String, _ outcome: @escaping @Sendable (String) -> Result<Int, any Error>
  ) -> AsyncFunc<String, Int> {
    AsyncFunc(name: name) { input, complete in testQueue().async { complete(outcome(input)) } }
  }

  @Test func a_synchronous_cleanup_becomes_a_step_of_the_stages_completion() async throws {
    let seen = Recorder<String>()
    let upload = callback("upload") { .success($0.count) }.finally { seen.record("cleanup \($0)") }
    #expect("\(upload)" == "upload.finally({ … })")
    #expect(try await upload("a.mov") == 5)
    #expect(seen.all == ["cleanup a.mov"])
  }

  @Test func the_stages_failure_wins_over_the_cleanups() async {
    let failing = callback("failing") { _ in .failure(TestError(1)) }
      .finally(.sync { _ in throw TestError(2) })
    #expect(await runToCompletion(failing, "x").failure as? TestError == TestError(1))
  }

  @Test func a_failing_cleanup_fails_a_success() async {
    let fine = callback("fine") { .success($0.count) }.finally(.sync { _ in throw TestError(2) })
    #expect(await runToCompletion(fine, "x").failure as? TestError == TestError(2))
  }

  @Test func a_completion_released_uncalled_still_runs_the_cleanup() async {
    let cleaned = Recorder<String>()
    let forgetful = AsyncFunc<String, Int>(name: "fused.finally.forgetful") { _, _ in }
      .finally { cleaned.record($0) }
    let result = await runToCompletion(forgetful, "in")
    #expect((result.failure as? ContractViolation)?.kind == .completionNeverCalled)
    #expect(cleaned.all == ["in"])
  }

  @Test func the_timeline_shows_the_stage_then_the_cleanup() async throws {
    let upload = callback("upload") { .success($0.count) }
      .finally(.sync(name: "progress") { _ in })
    let (result, timeline) = await upload.traced("abc")
    #expect(try result.get() == 3)
    let spans = timeline.spans
    #expect(spans.map(\.name) == ["upload", "progress"])
    #expect(try #require(spans[0].endedAt) <= spans[1].startedAt)
  }

  @Test func under_a_limit_the_cleanup_ends_before_the_next_run_starts() async throws {
    let events = Recorder<String>()
    let parking = Parking<Int, Int>()
    let limited = parking.function.finally { events.record("cleanup \($0)") }.limit(1)
    let done = Gate()
    let remaining = Tally()
    for x in 0..<2 {
      limited.run(x) { _ in
        remaining.add()
        if remaining.value == 2 { done.open() }
      }
    }
    await parking.waitForStarts(1)
    let first = parking.takeAll()
    #expect(first.count == 1)
    events.record("complete \(first[0].input)")
    first[0].complete(.success(0))
    await parking.waitForStarts(2)
    let second = parking.takeAll()
    events.record("complete \(second[0].input)")
    second[0].complete(.success(0))
    await done.wait()
    #expect(events.all == ["complete 0", "cleanup 0", "complete 1", "cleanup 1"])
  }

  @Test func tap_of_a_callback_stage_sees_the_input_and_the_stages_own_outcome() async {
    let seen = Recorder<String>()
    let parse = callback("parse") { text in Result { try Int(text).orThrow(TestError(9)) } }
      .tap { input, result in
        seen.record("\(input):\((try? result.get()).map(String.init) ?? "failed")")
      }
    #expect((try? await runToCompletion(parse, "12").get()) == 12)
    #expect(await runToCompletion(parse, "x").failure as? TestError == TestError(9))
    #expect(seen.all == ["12:12", "x:failed"])
  }
}
