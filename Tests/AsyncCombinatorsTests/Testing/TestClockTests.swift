import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The timed operators under a `TestClock`: every test here is synchronous, so no thread but
/// the test's own takes part, and every order asserted is the clock's.
@Suite struct TestClockTests {
  /// A stage that fails synchronously, counting its attempts.
  final class AlwaysFailing: Sendable {
    let attempts = Atomic(0)
    var function: AsyncFunc<Int, Int> {
      AsyncFunc(name: "alwaysFailing") { _, complete in
        let attempt = self.attempts.add(1, ordering: .relaxed).newValue
        complete(.failure(TestError(attempt)))
      }
    }
    var count: Int { attempts.load(ordering: .relaxed) }
  }

  /// The outcome of one run, written by its completion.
  final class Outcome<Value: Sendable>: Sendable {
    private let slot = Locked<Result<Value, any Error>?>(nil)
    private let calls = Atomic(0)
    func record(_ result: Result<Value, any Error>) {
      calls.add(1, ordering: .relaxed)
      slot.withLock { $0 = result }
    }
    var result: Result<Value, any Error>? { slot.withLock { $0 } }
    var callCount: Int { calls.load(ordering: .relaxed) }
  }

  @Test func retry_makes_one_attempt_per_advance_to_each_backoff_deadline() {
    let clock = TestClock()
    let failing = AlwaysFailing()
    let outcome = Outcome<Int>()
    failing.function.retry(3, delay: .seconds(1), backoff: 2, clock: clock).run(1) {
      outcome.record($0)
    }
    #expect(failing.count == 1)
    for (deadline, attempts) in [(1, 2), (3, 3), (7, 4)] {
      clock.advance(to: .start + .seconds(deadline) - .milliseconds(1))
      #expect(failing.count == attempts - 1, "before \(deadline) s")
      #expect(outcome.result == nil)
      clock.advance(to: .start + .seconds(deadline))
      #expect(failing.count == attempts, "at \(deadline) s")
    }
    #expect(outcome.result?.failure as? TestError == TestError(4))
    #expect(outcome.callCount == 1)
    #expect(clock.pendingCount == 0)
    clock.advance(by: .seconds(100))
    #expect(failing.count == 4)
  }

  @Test func timeout_fires_at_its_deadline_not_before() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Outcome<Int>()
    parking.function.timeout(.seconds(5), clock: clock).run(1) { outcome.record($0) }
    clock.advance(to: .start + .milliseconds(4_999))
    #expect(outcome.result == nil)
    #expect(clock.pendingCount == 1)
    clock.advance(to: .start + .seconds(5))
    #expect(outcome.result?.failure as? TimeoutError == TimeoutError(duration: .seconds(5)))
    #expect(parking.takeAll()[0].token.isCancelled)
    #expect(clock.pendingCount == 0)
  }

  @Test func a_timeouts_timer_is_removed_when_the_result_wins() throws {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Outcome<Int>()
    parking.function.timeout(.seconds(5), clock: clock).run(1) { outcome.record($0) }
    #expect(clock.pendingCount == 1)
    parking.takeAll()[0].complete(.success(2))
    #expect(clock.pendingCount == 0)
    #expect(try outcome.result?.get() == 2)
    clock.advance(by: .seconds(10))
    #expect(outcome.callCount == 1)
  }

  @Test func delay_completes_at_its_deadline_not_before() throws {
    let clock = TestClock()
    let outcome = Outcome<Int>()
    AsyncFunc<Int, Int>.delay(.seconds(2), clock: clock).run(7) { outcome.record($0) }
    clock.advance(by: .milliseconds(1_999))
    #expect(outcome.result == nil)
    clock.advance(by: .milliseconds(1))
    #expect(try outcome.result?.get() == 7)
    #expect(clock.now == .start + .seconds(2))
  }

  @Test func cancelling_a_timed_run_removes_its_timers_at_once() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let runs = [
      AlwaysFailing().function.retry(3, delay: .seconds(1), clock: clock),
      parking.function.timeout(.seconds(5), clock: clock),
      AsyncFunc<Int, Int>.delay(.seconds(2), clock: clock),
    ]
    for function in runs {
      let outcome = Outcome<Int>()
      let token = function.run(1) { outcome.record($0) }
      #expect(clock.pendingCount == 1, "\(function)")
      token.cancel()
      #expect(clock.pendingCount == 0, "\(function)")
      #expect(outcome.result?.failure is CancellationError)
    }
    clock.advance(by: .seconds(60))
    #expect(parking.takeAll().allSatisfy { $0.token.isCancelled })
  }

  @Test func ten_thousand_timeouts_fire_once_each_in_deadline_order_in_one_advance() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    var random = SplitMix64(seed: 11)
    let count = 10_000
    let deadlines = (0..<count).map { _ in Int.random(in: 1...500, using: &random) }
    let fired = Recorder<(index: Int, at: TestClock.Instant)>()
    for index in 0..<count {
      let bounded = parking.function.timeout(.milliseconds(deadlines[index]), clock: clock)
      bounded.run(index) { result in
        if result.failure is TimeoutError { fired.record((index, clock.now)) }
      }
    }
    #expect(clock.pendingCount == count)
    clock.advance(by: .seconds(1))
    let events = fired.all
    let expected = (0..<count).sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
    #expect(events.map(\.index) == expected)
    #expect(events.allSatisfy { $0.at == .start + .milliseconds(deadlines[$0.index]) })
    #expect(clock.pendingCount == 0)
    #expect(clock.now == .start + .seconds(1))
  }

  @Test func timers_scheduled_by_a_firing_fire_in_the_same_advance_when_due_inside_it() throws {
    let clock = TestClock()
    let chain =
      AsyncFunc<Int, Int>.delay(.seconds(1), clock: clock)
      +> .delay(.seconds(1), clock: clock) +> .delay(.seconds(5), clock: clock)
    let outcome = Outcome<Int>()
    let stamps = Recorder<TestClock.Instant>()
    let stamped =
      chain
      +> AsyncFunc<Int, Int>.sync {
        stamps.record(clock.now)
        return $0
      }
    stamped.run(3) { outcome.record($0) }
    clock.advance(by: .seconds(2))
    #expect(clock.pendingCount == 1)
    #expect(clock.nextDeadline == .start + .seconds(7))
    clock.advance(by: .seconds(5))
    #expect(stamps.all == [.start + .seconds(7)])
    #expect(try outcome.result?.get() == 3)
  }

  @Test func a_timer_due_at_once_scheduled_by_a_firing_fires_in_its_turn_not_inside_it() {
    let clock = TestClock()
    let fired = Recorder<String>()
    _ = clock.scheduleTimer(at: .start + .seconds(1)) {
      fired.record("first")
      _ = clock.scheduleTimer(at: clock.now) { fired.record("scheduled by first") }
      fired.record("first returns")
    }
    _ = clock.scheduleTimer(at: .start + .seconds(1)) { fired.record("second") }
    clock.advance(by: .seconds(1))
    #expect(fired.all == ["first", "first returns", "second", "scheduled by first"])
  }

  @Test func next_deadline_skips_cancelled_timers() {
    let clock = TestClock()
    #expect(clock.nextDeadline == nil)
    let soon = AsyncFunc<Int, Int>.delay(.seconds(1), clock: clock).run(1) { _ in }
    AsyncFunc<Int, Int>.delay(.seconds(4), clock: clock).run(1) { _ in }
    #expect(clock.nextDeadline == .start + .seconds(1))
    soon.cancel()
    #expect(clock.nextDeadline == .start + .seconds(4))
    #expect(clock.pendingCount == 1)
  }

  @Test func advancing_to_an_instant_not_after_now_does_nothing() {
    let clock = TestClock()
    clock.advance(to: .start + .seconds(3))
    clock.advance(to: .start + .seconds(1))
    #expect(clock.now == .start + .seconds(3))
  }

  @Test func a_sleeping_task_is_resumed_by_the_advance_past_its_deadline() async throws {
    let clock = TestClock()
    let woke = Gate()
    let sleeper = Task {
      try await clock.sleep(for: .seconds(3))
      woke.open()
    }
    while clock.pendingCount == 0 { await Task.yield() }  // Waits for the task to sleep.
    clock.advance(by: .seconds(2))
    #expect(!woke.isOpen)
    clock.advance(by: .seconds(1))
    await woke.wait()
    try await sleeper.value
  }

  @Test func cancelling_a_sleeping_task_removes_it_and_throws_cancellation() async {
    let clock = TestClock()
    let sleeper = Task { try await clock.sleep(for: .seconds(3)) }
    while clock.pendingCount == 0 { await Task.yield() }
    sleeper.cancel()
    await #expect(throws: CancellationError.self) { try await sleeper.value }
    #expect(clock.pendingCount == 0)
  }

  /// A clock the library does not know: it can only be slept on (here, on a `TestClock`).
  struct SleepOnlyClock: Clock {
    let base: TestClock
    var now: TestClock.Instant { base.now }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: TestClock.Instant, tolerance: Duration?) async throws {
      try await base.sleep(until: deadline, tolerance: tolerance)
    }
  }

  @Test func a_clock_the_library_does_not_know_is_slept_on_by_one_task_per_timer() async throws {
    let base = TestClock()
    let done = Gate()
    let outcome = Outcome<Int>()
    AsyncFunc<Int, Int>.delay(.seconds(2), clock: SleepOnlyClock(base: base)).run(5) { result in
      outcome.record(result)
      done.open()
    }
    while base.pendingCount == 0 { await Task.yield() }  // Waits for the task to sleep.
    base.advance(by: .milliseconds(1_999))
    #expect(outcome.result == nil)
    base.advance(by: .milliseconds(1))
    await done.wait()
    #expect(try outcome.result?.get() == 5)
  }

  @Test func cancelling_a_run_cancels_the_task_sleeping_for_its_timer() async {
    let base = TestClock()
    let outcome = Outcome<Int>()
    let pause = AsyncFunc<Int, Int>.delay(.seconds(2), clock: SleepOnlyClock(base: base))
    let token = pause.run(5) { outcome.record($0) }
    while base.pendingCount == 0 { await Task.yield() }
    token.cancel()
    #expect(base.pendingCount == 0)  // The task's cancellation removed its sleep at once.
    #expect(outcome.result?.failure is CancellationError)
  }
}
