import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// "No timeout", written `.seconds(Int64.max)`, never comes and arms nothing, for every timed
/// operator on every clock: no clock is asked for an instant it cannot represent (issue 40,
/// item 3; before, `SuspendingClock` and a clock of `Int64` nanoseconds trapped).
@Suite struct TimerHorizonTests {
  /// The clocks an operator may be given.
  enum ClockKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case continuous, suspending, test, nanoseconds
    var testDescription: String { rawValue }
  }

  static let forever = Duration.seconds(Int64.max)

  @Test(arguments: ClockKind.allCases)
  func a_timeout_that_never_comes_arms_nothing(_ kind: ClockKind) {
    on(kind) { clock, pending in
      let parking = Parking<Int, Int>()
      let outcome = Locked<Result<Int, any Error>?>(nil)
      parking.function.timeout(Self.forever, clock: clock).run(1) { result in
        outcome.withLock { $0 = result }
      }
      #expect((pending() ?? 0) == 0)
      #expect(outcome.withLock { $0 } == nil)
      parking.takeAll()[0].complete(.success(1))
      #expect((try? outcome.withLock { $0 }?.get()) == 1)
    }
  }

  @Test(arguments: ClockKind.allCases)
  func a_delay_that_never_comes_arms_nothing_and_ends_at_its_cancellation(_ kind: ClockKind) {
    on(kind) { clock, pending in
      let outcome = Locked<Result<Int, any Error>?>(nil)
      let run = AsyncFunc<Int, Int>.delay(Self.forever, clock: clock).run(1) { result in
        outcome.withLock { $0 = result }
      }
      #expect((pending() ?? 0) == 0)
      #expect(outcome.withLock { $0 } == nil)
      run.cancel()
      #expect(outcome.withLock { $0 }?.failure is CancellationError)
    }
  }

  @Test(arguments: ClockKind.allCases)
  func a_hedge_that_never_comes_arms_nothing(_ kind: ClockKind) {
    on(kind) { clock, pending in
      let parking = Parking<Int, Int>()
      let outcome = Locked<Result<Int, any Error>?>(nil)
      parking.function.hedged(after: Self.forever, clock: clock).run(1) { result in
        outcome.withLock { $0 = result }
      }
      #expect((pending() ?? 0) == 0)
      let attempts = parking.takeAll()
      #expect(attempts.count == 1)
      attempts.first?.complete(.success(1))
      #expect((try? outcome.withLock { $0 }?.get()) == 1)
    }
  }

  @Test(arguments: ClockKind.allCases)
  func a_limiters_wait_that_never_expires_arms_nothing(_ kind: ClockKind) {
    on(kind) { clock, pending in
      let parking = Parking<Int, Int>()
      let limiter = Limiter(concurrency: 1, queue: .wait(Self.forever), clock: clock)
      let limited = parking.function.limited(by: limiter)
      let second = Locked<Result<Int, any Error>?>(nil)
      limited.run(1) { _ in }
      limited.run(2) { result in second.withLock { $0 = result } }
      #expect((pending() ?? 0) == 0)
      parking.takeAll()[0].complete(.success(1))
      let admitted = parking.takeAll()
      #expect(admitted.map(\.input) == [2])
      admitted.first?.complete(.success(2))
      #expect((try? second.withLock { $0 }?.get()) == 2)
    }
  }

  @Test(arguments: ClockKind.allCases)
  func a_retry_wait_that_never_comes_arms_nothing(_ kind: ClockKind) {
    on(kind) { clock, pending in
      let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError() }
      let outcome = Locked<Result<Int, any Error>?>(nil)
      let run = failing.retry(1, delay: Self.forever, clock: clock).run(1) { result in
        outcome.withLock { $0 = result }
      }
      #expect((pending() ?? 0) == 0)
      #expect(outcome.withLock { $0 } == nil)
      run.cancel()
      #expect(outcome.withLock { $0 }?.failure is CancellationError)
    }
  }

  @Test func the_horizon_is_the_same_on_every_clock_and_a_shorter_wait_is_armed() {
    let clock = TestClock()
    let fired = Locked(0)
    let token = CancellationToken()
    let timers = TimerClock(clock)
    timers.after(TimerClock.horizon - .nanoseconds(1), token) { _ in fired.withLock { $0 += 1 } }
    timers.after(TimerClock.horizon, token) { _ in fired.withLock { $0 += 1 } }
    #expect(clock.pendingCount == 1)
    clock.advance(by: TimerClock.horizon)
    #expect(fired.withLock { $0 } == 1)
    token.cancel()
    #expect(fired.withLock { $0 } == 2)  // the one that never comes ends at the cancellation
  }

  /// Calls `body` with a clock of `kind` and a count of its pending timers, where the test can
  /// see them.
  private func on(_ kind: ClockKind, _ body: (any Clock<Duration>, _ pending: () -> Int?) -> Void) {
    switch kind {
    case .continuous:
      let far = { DispatchTime.now() + .seconds(50 * 365 * 86_400) }
      let before = SharedTimers.shared.pendingCount(dueAfter: far())
      body(ContinuousClock()) { SharedTimers.shared.pendingCount(dueAfter: far()) - before }
    case .suspending:
      body(SuspendingClock()) { nil }
    case .test:
      let clock = TestClock()
      body(clock) { clock.pendingCount }
    case .nanoseconds:
      body(NanosecondClock()) { nil }
    }
  }
}

/// A clock whose instants are `Int64` nanoseconds of uptime: advancing one past what that
/// holds traps, as the standard library's arithmetic does.
private struct NanosecondClock: Clock {
  struct Instant: InstantProtocol {
    let nanoseconds: Int64

    func advanced(by duration: Duration) -> Instant {
      let (seconds, attoseconds) = duration.components
      return Instant(
        nanoseconds: nanoseconds + seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    func duration(to other: Instant) -> Duration {
      .nanoseconds(other.nanoseconds - nanoseconds)
    }

    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
  }

  var now: Instant { Instant(nanoseconds: Int64(DispatchTime.now().uptimeNanoseconds)) }
  var minimumResolution: Duration { .nanoseconds(1) }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    try await Task.sleep(for: now.duration(to: deadline))
  }
}
