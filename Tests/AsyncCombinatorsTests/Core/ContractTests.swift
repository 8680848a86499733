import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {}

@Suite(.timeLimit(.minutes(1))) struct ContractTests {
  @Test func second_call_is_dropped_and_reported_with_name_and_location() {
    let faults = FaultRecorder.shared
    let line = #line + 1
    let twice = AsyncFunc<Int, Int>(name: "contract.twice.inline") { x, complete in
      complete(.success(x))
      complete(.success(x + 1))
    }
    let results = Recorder<Int?>()
    twice.run(1) { results.record(try? $0.get()) }
    #expect(results.all == [1])
    let expected = ContractViolation(
      kind: .completionCalledTwice, name: "contract.twice.inline",
      fileID: "AsyncCombinatorsTests/ContractTests.swift", line: line)
    #expect(faults.violations(named: "contract.twice.inline") == [expected])
    #expect(
      expected.description
        == "contract.twice.inline (ContractTests.swift:\(line)) called its completion more than once"
    )
  }

  @Test func second_call_from_another_thread_never_reaches_the_next_stage() async {
    let faults = FaultRecorder.shared
    let queue = testQueue()
    let secondCallMade = Gate()
    let twice = AsyncFunc<Int, Int>(name: "contract.twice.queued") { x, complete in
      queue.async {
        complete(.success(x))
        complete(.failure(Boom()))
        secondCallMade.open()
      }
    }
    let nextRuns = Recorder<Int>()
    let next = AsyncFunc<Int, Int>.sync { x in
      nextRuns.record(x)
      return x
    }
    let results = Recorder<Result<Int, any Error>>()
    (twice +> next).run(5) { results.record($0) }
    await secondCallMade.wait()
    #expect(nextRuns.all == [5])
    #expect(results.count == 1)
    #expect(
      faults.violations(named: "contract.twice.queued").map(\.kind) == [.completionCalledTwice])
  }

  @Test func completion_never_called_fails_the_run_naming_the_function() async {
    let line = #line + 1
    let forgetful = AsyncFunc<Int, Int>(name: "contract.forgetful") { _, _ in }
    let nextRuns = Recorder<Int>()
    let next = AsyncFunc<Int, Int>.sync { x in
      nextRuns.record(x)
      return x
    }
    let expected = ContractViolation(
      kind: .completionNeverCalled, name: "contract.forgetful",
      fileID: "AsyncCombinatorsTests/ContractTests.swift", line: line)
    await #expect(throws: expected) { try await runToCompletion(forgetful +> next, 1).get() }
    #expect(nextRuns.count == 0)
    #expect(expected.description.contains("contract.forgetful (ContractTests.swift:\(line))"))
  }

  @Test func completion_released_later_on_another_thread_fails_the_run() async {
    let queue = testQueue()
    let forgetful = AsyncFunc<Int, Int>(name: "contract.forgetful.later") { _, complete in
      queue.async { _ = complete }  // Holds the completion a while, then drops it.
    }
    let result = await runToCompletion(forgetful, 1)
    #expect(throws: ContractViolation.self) { try result.get() }
    #expect((try? result.get()) == nil)
    if case .failure(let error as ContractViolation) = result {
      #expect(error.kind == .completionNeverCalled && error.name == "contract.forgetful.later")
    }
  }

  @Test func unnamed_function_is_named_by_its_location() async {
    let line = #line + 1
    let forgetful = AsyncFunc<Int, Int> { _, _ in }
    let result = await runToCompletion(forgetful, 1)
    guard case .failure(let error as ContractViolation) = result else {
      Issue.record("expected a contract violation, got \(result)")
      return
    }
    #expect(error.function == "ContractTests.swift:\(line)")
  }

  @Test func throwing_sync_body_is_the_failure() async {
    let throwing = AsyncFunc<Int, Int>.sync(name: "contract.throws") { _ in throw Boom() }
    await #expect(throws: Boom()) { try await runToCompletion(throwing, 1).get() }
    #expect(FaultRecorder.shared.violations(named: "contract.throws").isEmpty)
  }
}

/// The built-in fault responses, each in a process of its own: `faultResponse` is global, and
/// `.crash` ends the process it runs in.
@Suite struct FaultResponseTests {
  @Test func warn_writes_one_line_naming_the_function_and_where_it_was_made() async throws {
    let result = try #require(
      await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
        ContractViolation.faultResponse = .warn
        let twice = AsyncFunc<Int, Int>(name: "twice") { x, complete in
          complete(.success(x))
          complete(.success(x))
        }
        twice.run(1) { _ in }
      })
    let lines = String(decoding: result.standardErrorContent, as: UTF8.self)
      .split(separator: "\n").filter { $0.contains("AsyncCombinators warning") }
    #expect(lines.count == 1)
    #expect(lines.first?.contains("twice (ContractTests.swift:") == true)
    #expect(lines.first?.contains("called its completion more than once") == true)
  }

  @Test func crash_stops_the_process() async {
    await #expect(processExitsWith: .failure) {
      ContractViolation.faultResponse = .crash
      let twice = AsyncFunc<Int, Int>(name: "twice") { x, complete in
        complete(.success(x))
        complete(.success(x))
      }
      twice.run(1) { _ in }
    }
  }

  @Test func ignore_says_nothing_and_still_drops_the_extra_call() async throws {
    let result = try #require(
      await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
        ContractViolation.faultResponse = .ignore
        let calls = Locked(0)
        let twice = AsyncFunc<Int, Int>(name: "twice") { x, complete in
          complete(.success(x))
          complete(.success(x))
        }
        twice.run(1) { _ in calls.withLock { $0 += 1 } }
        precondition(calls.withLock { $0 } == 1, "the extra call was forwarded")
      })
    #expect(!String(decoding: result.standardErrorContent, as: UTF8.self).contains("warning"))
  }
}
