import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@Suite struct FaultInjectionTests {
  final class Calls: Sendable {
    let count = Atomic(0)
    var function: AsyncFunc<Int, Int> {
      AsyncFunc(name: "fetch") { x, complete in
        self.count.add(1, ordering: .relaxed)
        complete(.success(x))
      }
    }
    var value: Int { count.load(ordering: .relaxed) }
  }

  /// Which of `runs` synchronous runs of `function` failed, in order.
  static func failures(_ function: AsyncFunc<Int, Int>, runs: Int = 200) -> [Bool] {
    (0..<runs).map { id in
      let failed = Locked(false)
      function.run(id) { result in failed.withLock { $0 = result.failure != nil } }
      return failed.withLock { $0 }
    }
  }

  @Test func a_rate_of_zero_never_fails_and_one_always_fails_without_calling_the_function() {
    let calls = Calls()
    #expect(
      !Self.failures(calls.function.injectingFaults(rate: 0, error: TestError(1))).contains(true))
    #expect(calls.value == 200)
    #expect(
      Self.failures(calls.function.injectingFaults(rate: 1, error: TestError(1))).allSatisfy { $0 })
    #expect(calls.value == 200)
  }

  @Test func faults_fail_with_the_given_error_at_about_the_rate() throws {
    let calls = Calls()
    let flaky = calls.function.injectingFaults(rate: 0.2, error: TestError(9), seed: 11)
    let failed = Self.failures(flaky, runs: 1000).filter { $0 }.count
    #expect(failed > 150 && failed < 250)
    #expect(calls.value == 1000 - failed)
    let result = Locked<Result<Int, any Error>?>(nil)
    let always = calls.function.injectingFaults(rate: 1, error: TestError(9))
    always.run(0) { outcome in result.withLock { $0 = outcome } }
    #expect(result.withLock { $0 }?.failure as? TestError == TestError(9))
  }

  @Test func the_same_seed_replays_the_same_faults_and_another_seed_others() {
    let fetch = Calls().function
    let first = Self.failures(fetch.injectingFaults(rate: 0.5, error: TestError(1), seed: 42))
    let again = Self.failures(fetch.injectingFaults(rate: 0.5, error: TestError(1), seed: 42))
    let other = Self.failures(fetch.injectingFaults(rate: 0.5, error: TestError(1), seed: 43))
    #expect(first == again)
    #expect(first != other)
  }

  @Test func latency_delays_the_start_on_the_clock() throws {
    let clock = TestClock()
    let calls = Calls()
    let slow = calls.function.injectingLatency(rate: 1, delay: .seconds(2), clock: clock)
    let result = Locked<Result<Int, any Error>?>(nil)
    slow.run(7) { outcome in result.withLock { $0 = outcome } }
    clock.advance(by: .milliseconds(1999))
    #expect(calls.value == 0)
    clock.advance(by: .milliseconds(1))
    #expect(calls.value == 1)
    #expect(try result.withLock { $0 }?.get() == 7)
  }

  @Test func latency_at_a_rate_delays_a_replayable_share_of_the_runs() {
    func delayed(seed: UInt64) -> [Bool] {
      let clock = TestClock()
      let calls = Calls()
      let slow = calls.function.injectingLatency(
        rate: 0.3, delay: .seconds(1), clock: clock, seed: seed)
      return (0..<200).map { id in
        let before = calls.value
        slow.run(id) { _ in }
        return calls.value == before
      }
    }
    let first = delayed(seed: 5)
    #expect(first == delayed(seed: 5))
    #expect(first != delayed(seed: 6))
    let count = first.filter { $0 }.count
    #expect(count > 30 && count < 90)
  }

  @Test func a_run_cancelled_while_delayed_never_calls_the_function() {
    let clock = TestClock()
    let calls = Calls()
    let slow = calls.function.injectingLatency(rate: 1, delay: .seconds(2), clock: clock)
    let result = Locked<Result<Int, any Error>?>(nil)
    let token = slow.run(7) { outcome in result.withLock { $0 = outcome } }
    token.cancel()
    #expect(result.withLock { $0 }?.failure is CancellationError)
    clock.advance(by: .seconds(2))
    #expect(calls.value == 0)
  }

  @Test func descriptions_read_as_the_call() {
    let fetch = Calls().function
    #expect(
      "\(fetch.injectingFaults(rate: 0.1, error: TestError(1), seed: 3))"
        == "fetch.injectingFaults(rate: 0.1, error: TestError(id: 1), seed: 3)")
    #expect(
      "\(fetch.injectingLatency(rate: 0.5, delay: .seconds(1), seed: 2))"
        == "fetch.injectingLatency(rate: 0.5, delay: 1.0 seconds, seed: 2)")
  }
}
