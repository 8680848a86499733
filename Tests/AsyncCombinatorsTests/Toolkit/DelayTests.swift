import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinators

@Suite struct DelayTests {
  @Test func delay_passes_the_input_through_after_the_duration() throws {
    let clock = TestClock()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    AsyncFunc<Int, Int>.delay(.milliseconds(20), clock: clock).run(7) { result in
      outcome.withLock { $0 = result }
    }
    clock.advance(by: .milliseconds(19))
    #expect(outcome.withLock { $0 } == nil)
    clock.advance(by: .milliseconds(1))
    #expect(try outcome.withLock { $0 }?.get() == 7)
    #expect(clock.now - .start >= .milliseconds(20))
  }

  @Test func delay_waits_on_the_default_clock_too() async throws {
    let start = ContinuousClock.now
    #expect(try await AsyncFunc<Int, Int>.delay(.milliseconds(1))(7) == 7)
    #expect(ContinuousClock.now - start >= .milliseconds(1))
  }

  @Test func cancelling_during_a_delay_ends_the_run_promptly() async {
    let after = Atomic(false)
    let pipeline =
      AsyncFunc<Int, Int>.delay(.seconds(30))
      +> .sync {
        after.store(true, ordering: .relaxed)
        return $0
      }
    let done = Gate()
    let start = ContinuousClock.now
    let token = pipeline.run(1) { result in
      #expect(result.failure is CancellationError)
      done.open()
    }
    token.cancel()
    await done.wait()
    #expect(ContinuousClock.now - start < .seconds(5))
    #expect(after.load(ordering: .relaxed) == false)
  }

  @Test func description_reads_like_the_code() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect(
      "\(fetch +> .delay(.milliseconds(200)) +> fetch)" == "fetch +> delay(0.2 seconds) +> fetch")
  }
}
