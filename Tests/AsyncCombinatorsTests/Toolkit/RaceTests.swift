import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct RaceTests {
  @Test func the_first_success_wins_and_the_others_are_cancelled() async throws {
    let slow = Parking<Int, String>()
    let fast = Parking<Int, String>()
    let task = Task { try await AsyncFunc.race([slow.function, fast.function])(1) }
    await slow.waitForStarts(1)
    await fast.waitForStarts(1)
    fast.takeAll()[0].complete(.success("fast"))
    #expect(try await task.value == "fast")
    let loser = slow.takeAll()[0]
    #expect(loser.token.isCancelled)
    loser.complete(.success("slow"))  // Late: dropped.
  }

  @Test func a_failure_does_not_end_the_race_while_another_may_succeed() async throws {
    let failing = AsyncFunc<Int, String>.sync { _ in throw TestError(1) }
    let later = Parking<Int, String>()
    let task = Task { try await AsyncFunc.race([failing, later.function])(1) }
    await later.waitForStarts(1)
    later.takeAll()[0].complete(.success("later"))
    #expect(try await task.value == "later")
  }

  @Test func all_failing_fails_with_the_last_failure() async {
    let first = Parking<Int, String>()
    let second = Parking<Int, String>()
    let done = Gate()
    let outcome = Locked<Result<String, any Error>?>(nil)
    AsyncFunc.race([first.function, second.function]).run(1) { result in
      outcome.withLock { $0 = result }
      done.open()
    }
    await first.waitForStarts(1)
    await second.waitForStarts(1)
    second.takeAll()[0].complete(.failure(TestError(2)))
    #expect(!done.isOpen)
    first.takeAll()[0].complete(.failure(TestError(1)))
    await done.wait()
    #expect(outcome.withLock { $0?.failure } as? TestError == TestError(1))
  }

  @Test func cancelling_the_race_cancels_every_contender() async {
    let a = Parking<Int, String>()
    let b = Parking<Int, String>()
    let done = Gate()
    let token = AsyncFunc.race([a.function, b.function]).run(1) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    await a.waitForStarts(1)
    await b.waitForStarts(1)
    token.cancel()
    await done.wait()
    #expect(a.takeAll()[0].token.isCancelled && b.takeAll()[0].token.isCancelled)
  }

  @Test func a_synchronous_winner_stops_the_rest_from_starting() async throws {
    let instant = AsyncFunc<Int, String>.sync { _ in "instant" }
    let never = Parking<Int, String>()
    #expect(try await AsyncFunc.race([instant, never.function])(1) == "instant")
    #expect(never.started == 0)
  }

  @Test func description_lists_the_contenders() {
    let a = AsyncFunc<Int, Int>.sync(name: "mirror1") { $0 }
    let b = AsyncFunc<Int, Int>.sync(name: "mirror2") { $0 }
    #expect("\(AsyncFunc.race([a, b]))" == "race(mirror1, mirror2)")
  }

  @Test func an_empty_race_is_a_precondition_failure_naming_the_callers_line() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.race([])
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("race([]): a race needs at least one function"))
    #expect(message.contains("RaceTests.swift"))
  }
}
