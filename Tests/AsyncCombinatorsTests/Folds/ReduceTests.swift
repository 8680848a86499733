import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ReduceTests {
  @Test func reduce_folds_in_order_one_combine_at_a_time() async throws {
    let inFlight = InFlight()
    let queue = testQueue()
    let append = AsyncFunc<(String, Int), String> { pair, complete in
      inFlight.enter()
      queue.async {
        inFlight.leave()
        complete(.success(pair.0 + String(pair.1)))
      }
    }
    #expect(try await AsyncFunc.reduce("", append)([1, 2, 3, 4]) == "1234")
    #expect(inFlight.peak == 1)
  }

  @Test func an_empty_array_gives_the_initial_value() async throws {
    let add = AsyncFunc<(Int, Int), Int>.sync { $0 + $1 }
    #expect(try await AsyncFunc.reduce(42, add)([]) == 42)
  }

  @Test func the_first_failure_fails_the_fold_and_later_combines_never_start() async {
    let seen = Recorder<Int>()
    let add = AsyncFunc<(Int, Int), Int>.sync { acc, x in
      seen.record(x)
      if x == 2 { throw TestError(x) }
      return acc + x
    }
    let result = await runToCompletion(AsyncFunc.reduce(0, add), [1, 2, 3])
    #expect(result.failure as? TestError == TestError(2))
    #expect(seen.all == [1, 2])
  }

  @Test func cancelling_the_fold_cancels_the_running_combine_and_starts_no_more() {
    let parking = Parking<(Int, Int), Int>()
    let outcome = Recorder<String>()
    let token = AsyncFunc.reduce(0, parking.function).run([1, 2, 3]) { outcome.record("\($0)") }
    let first = parking.takeAll()
    token.cancel()
    #expect(outcome.all == ["failure(Swift.CancellationError())"])
    #expect(first.count == 1 && first[0].token.isCancelled)
    first[0].complete(.success(1))  // the combine ignored its cancellation and calls back late
    #expect(parking.started == 1)
  }

  @Test func a_hundred_thousand_synchronous_combines_use_a_flat_stack() async throws {
    let add = AsyncFunc<(Int, Int), Int> { pair, complete in complete(.success(pair.0 + pair.1)) }
    #expect(try await AsyncFunc.reduce(0, add)(Array(repeating: 1, count: 100_000)) == 100_000)
  }

  @Test func description_reads_like_the_code() {
    let add = AsyncFunc<(Int, Int), Int>.sync(name: "add") { $0 + $1 }
    #expect("\(AsyncFunc.reduce(0, add))" == "reduce(0, add)")
  }
}
