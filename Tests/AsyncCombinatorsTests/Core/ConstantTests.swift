import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

private struct NotFound: Error, Equatable {}

@Suite struct ConstantTests {
  @Test func just_ignores_its_input_and_succeeds_with_the_value() async throws {
    let seven = AsyncFunc<String, Int>.just(7)
    #expect(try await runToCompletion(seven, "a").get() == 7)
    #expect(try await runToCompletion(seven, "b").get() == 7)
  }

  @Test func fail_ignores_its_input_and_fails_with_the_error() async {
    let missing = AsyncFunc<Int, String>.fail(NotFound())
    await #expect(throws: NotFound()) { try await runToCompletion(missing, 1).get() }
  }

  @Test func both_complete_on_the_thread_that_reaches_them() {
    let results = Recorder<Result<Int, any Error>>()
    AsyncFunc<Void, Int>.just(1).run { results.record($0) }
    AsyncFunc<Void, Int>.fail(NotFound()).run { results.record($0) }
    #expect(results.count == 2)  // both called back before `run` returned
    #expect((try? results.all[0].get()) == 1)
    #expect(results.all[1].failure is NotFound)
  }

  @Test func descriptions_read_as_the_calls_that_made_them() {
    #expect("\(AsyncFunc<Void, String>.just("hello"))" == #"just("hello")"#)
    #expect("\(AsyncFunc<Void, Int>.just(42))" == "just(42)")
    #expect("\(AsyncFunc<Void, Int>.fail(NotFound()))" == "fail(NotFound())")
    let chain = AsyncFunc<Int, Int>.sync(name: "parse") { $0 } +> .just("done")
    #expect("\(chain)" == #"parse +> just("done")"#)
  }

  @Test func a_long_value_is_cut_to_one_short_line() {
    let long = AsyncFunc<Void, [Int]>.just(Array(0..<100))
    #expect("\(long)" == "just([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, …)")
    let lines = AsyncFunc<Void, String>.just("one\ntwo")
    #expect("\(lines)" == #"just("one\ntwo")"#)  // reflecting escapes the newline
  }
}
