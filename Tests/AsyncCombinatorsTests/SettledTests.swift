import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinators

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
