import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

private struct Boom: Error, Equatable {}

@Suite struct FlatMapTests {
  private let small = AsyncFunc<Int, String>.sync(name: "small") { "small \($0)" }
  private let large = AsyncFunc<Int, String>.sync(name: "large") { "large \($0)" }

  @Test func chooses_the_next_function_from_the_output_and_runs_it_on_the_output() async throws {
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    let (small, large) = (self.small, self.large)
    let sized = double.flatMap { $0 < 10 ? small : large }
    #expect(try await runToCompletion(sized, 3).get() == "small 6")
    #expect(try await runToCompletion(sized, 30).get() == "large 60")
  }

  @Test func a_failure_skips_the_choice_and_is_the_result() async {
    let chosen = Tally()
    let small = self.small
    let failing = AsyncFunc<Int, Int>.sync(name: "failing") { _ in throw Boom() }
      .flatMap { _ in
        chosen.add()
        return small
      }
    await #expect(throws: Boom()) { try await runToCompletion(failing, 1).get() }
    #expect(chosen.value == 0)
  }

  @Test func the_chosen_functions_failure_is_the_result() async {
    let failing = AsyncFunc<Int, String>.fail(Boom())
    let chained = AsyncFunc<Int, Int>.sync(name: "id") { $0 }.flatMap { _ in failing }
    await #expect(throws: Boom()) { try await runToCompletion(chained, 1).get() }
  }

  @Test(.timeLimit(.minutes(1)))
  func cancelling_the_run_cancels_the_chosen_function() async {
    let parking = Parking<Int, String>()
    let chosen = parking.function
    let result = Recorder<Result<String, any Error>>()
    let token = AsyncFunc<Int, Int>.sync(name: "id") { $0 }.flatMap { _ in chosen }
      .run(5) { result.record($0) }
    await parking.waitForStarts(1)
    let parked = parking.takeAll()[0]
    #expect(parked.input == 5)
    #expect(!parked.token.isCancelled)
    token.cancel()
    #expect(parked.token.isCancelled)
    #expect(result.all.count == 1)
    #expect(result.all.first.map(isCancellation) == true)
    parked.complete(.success("late"))  // dropped: the run already ended
    #expect(result.all.count == 1)
  }

  @Test(.timeLimit(.minutes(1)))
  func a_run_cancelled_before_the_output_never_chooses() async {
    let parked = ParkedCompletion<Int>()
    let chosen = Tally()
    let small = self.small
    let first = AsyncFunc<Int, Int>(name: "first") { _, complete in parked.park(complete) }
    let result = Recorder<Result<String, any Error>>()
    let token = first.flatMap { _ in
      chosen.add()
      return small
    }.run(1) { result.record($0) }
    await parked.arrived.wait()
    token.cancel()
    parked.complete(.success(1))
    #expect(chosen.value == 0)
    #expect(result.all.count == 1)
    #expect(result.all.first.map(isCancellation) == true)
  }

  @Test func the_chosen_functions_stages_show_in_the_timeline() async {
    let small = self.small
    let (result, timeline) = await AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
      .flatMap { _ in small }.traced(2)
    #expect((try? result.get()) == "small 4")
    #expect(timeline.spans.map(\.name) == ["double", "small"])
  }

  @Test func describes_itself_as_a_call() {
    let small = self.small
    let chained = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }.flatMap { _ in small }
    #expect("\(chained)" == "double.flatMap { … }")
  }
}
