import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

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

/// A pause cancelled while it waits ends its run with `CancellationError`, reported through
/// the pipeline as a cancellation, never as a broken contract, and gives back what it holds.
@Suite struct CancelledPauseTests {
  @Test func a_cancelled_delay_reaches_the_next_step_as_a_cancellation() {
    let clock = TestClock()
    let recovered = Locked<[String]>([])
    let tapped = Locked<[String]>([])
    let pipeline = AsyncFunc<Int, Int>.delay(.seconds(10), clock: clock)
      .tap { _, result in tapped.withLock { $0.append("\(result)") } }
      .recover { error in
        recovered.withLock { $0.append("\(error)") }
        return 0
      }
    let outcome = Locked<Result<Int, any Error>?>(nil)
    pipeline.run(1) { result in outcome.withLock { $0 = result } }.cancel()
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(recovered.withLock { $0 }.isEmpty)
    #expect(tapped.withLock { $0 } == ["failure(Swift.CancellationError())"])
    #expect(clock.pendingCount == 0)
  }

  @Test func a_retry_cancelled_in_its_pause_gives_its_slot_back() {
    let clock = TestClock()
    let attempts = Tally()
    let failing = AsyncFunc<Int, Int>(name: "failing") { _, complete in
      attempts.add()
      complete(.failure(TestError(1)))
    }
    let limited = failing.retry(1, delay: .seconds(10), clock: clock).limit(1)
    let first = Locked<Result<Int, any Error>?>(nil)
    let token = limited.run(1) { result in first.withLock { $0 = result } }
    #expect(attempts.value == 1 && clock.pendingCount == 1)  // Waiting to retry.
    token.cancel()
    #expect(first.withLock { $0?.failure } is CancellationError)
    #expect(clock.pendingCount == 0)
    limited.run(2) { _ in }
    #expect(attempts.value == 2, "the second run was never admitted")
  }

  @Test func a_retry_cancelled_in_its_pause_frees_a_serialized_line() {
    let clock = TestClock()
    let attempts = Tally()
    let failing = AsyncFunc<Int, Int>(name: "failing") { _, complete in
      attempts.add()
      complete(.failure(TestError(1)))
    }
    let line = failing.retry(1, delay: .seconds(10), clock: clock).serialized()
    line.run(1) { _ in }.cancel()
    line.run(2) { _ in }
    #expect(attempts.value == 2, "the line stayed busy")
  }
}
