import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct SettledTests {
  @Test func settled_delivers_success_and_failure_as_values() async throws {
    let parse = AsyncFunc<String, Int>.sync { text in
      guard let number = Int(text) else { throw TestError(0) }
      return number
    }
    let outcomes = try await parse.settled().concurrentMap(limit: 2)(["1", "x", "3"])
    #expect(outcomes.map { try? $0.get() } == [1, nil, 3])
    #expect(outcomes[1].failure as? TestError == TestError(0))
  }

  @Test func cancellation_is_not_an_outcome() async {
    let cancelling = AsyncFunc<Int, Int> { _, complete in complete(.failure(CancellationError())) }
    let result = await runToCompletion(cancelling.settled(), 0)
    #expect(result.failure is CancellationError)
  }

  @Test func description_reads_like_the_code() {
    let parse = AsyncFunc<String, Int>.sync(name: "parse") { $0.count }
    #expect("\(parse.settled().concurrentMap())" == "parse.settled().concurrentMap()")
  }
}

/// `settled` of a single callback stage, the shape most code has.
@Suite struct SettledOfOneCallbackStageTests {
  @Test func a_single_callback_stage_settles_in_its_own_completion() async throws {
    let parse = AsyncFunc<String, Int>(name: "parse") { text, complete in
      testQueue().async { complete(Result { try Int(text).orThrow(TestError(0)) }) }
    }
    let settled = parse.settled()
    #expect("\(settled)" == "parse.settled()")
    let outcomes = try await settled.concurrentMap()(["1", "x"])
    #expect(outcomes.map { try? $0.get() } == [1, nil])
    #expect(outcomes[1].failure as? TestError == TestError(0))
  }

  @Test func a_completion_called_twice_is_reported_once_and_settles_once() async throws {
    let faults = FaultRecorder.shared
    let twice = AsyncFunc<Int, Int>(name: "fused.twice") { x, complete in
      complete(.success(x))
      complete(.failure(TestError(1)))
    }
    let outcome = try await twice.settled()(3)
    #expect(try outcome.get() == 3)
    #expect(faults.violations(named: "fused.twice").map(\.kind) == [.completionCalledTwice])
  }
}
