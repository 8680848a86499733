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
