import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

private struct Boom: Error, Equatable {}
private struct Wrapped: Error, Equatable { let reason: String }

@Suite struct MapErrorTests {
  @Test func a_failure_is_reported_as_the_transformed_error() async {
    let failing = AsyncFunc<Int, Int>.sync(name: "failing") { _ in throw Boom() }
      .mapError { Wrapped(reason: "\($0)") }
    await #expect(throws: Wrapped(reason: "Boom()")) { try await runToCompletion(failing, 1).get() }
  }

  @Test func a_success_passes_through_and_never_calls_the_transform() async throws {
    let calls = Tally()
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }.mapError { error in
      calls.add()
      return error
    }
    #expect(try await runToCompletion(double, 21).get() == 42)
    #expect(calls.value == 0)
  }

  @Test func a_body_that_completes_with_cancellation_is_not_mapped() async {
    let calls = Tally()
    let cancelled = AsyncFunc<Int, Int>(name: "cancelled") { _, complete in
      complete(.failure(CancellationError()))
    }.mapError { error in
      calls.add()
      return Wrapped(reason: "\(error)")
    }
    #expect(isCancellation(await runToCompletion(cancelled, 1)))
    #expect(calls.value == 0)
  }

  @Test(.timeLimit(.minutes(1)))
  func cancelling_the_run_cancels_the_inner_function_and_is_not_mapped() async {
    let parking = Parking<Int, Int>()
    let calls = Tally()
    let result = Recorder<Result<Int, any Error>>()
    let token = parking.function.mapError { error in
      calls.add()
      return error
    }.run(1) { result.record($0) }
    await parking.waitForStarts(1)
    let parked = parking.takeAll()[0]
    token.cancel()
    #expect(parked.token.isCancelled)
    parked.complete(.failure(Boom()))  // late: ignored, never mapped
    #expect(result.all.count == 1)
    #expect(result.all.first.map(isCancellation) == true)
    #expect(calls.value == 0)
  }

  @Test func describes_itself_as_a_call() {
    let mapped = AsyncFunc<Int, Int>.sync(name: "upload") { $0 }.mapError { $0 }
    #expect("\(mapped)" == "upload.mapError { … }")
  }
}
