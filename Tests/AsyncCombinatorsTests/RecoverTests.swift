import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinators

@Suite struct RecoverTests {
  @Test func a_failure_becomes_the_recovered_value() async throws {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    #expect(try await failing.recover { ($0 as! TestError).id * 10 }(0) == 10)
  }

  @Test func a_success_is_untouched() async throws {
    let fine = AsyncFunc<Int, Int>.sync { $0 }
    #expect(try await fine.recover { _ in -1 }(5) == 5)
  }

  @Test func a_throwing_recovery_is_the_new_failure() async {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError(1) }
    let result = await runToCompletion(failing.recover { _ in throw TestError(2) }, 0)
    #expect(result.failure as? TestError == TestError(2))
  }

  @Test func cancellation_is_never_recovered() async {
    let cancelling = AsyncFunc<Int, Int> { _, complete in complete(.failure(CancellationError())) }
    let result = await runToCompletion(cancelling.recover { _ in 0 }, 0)
    #expect(result.failure is CancellationError)
  }

  @Test func description_reads_like_the_code() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect("\(fetch.recover { _ in 0 })" == "fetch.recover { … }")
  }
}
