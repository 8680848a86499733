import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Records the retries given up at the deadline and the cancellations with their causes.
private final class DeadlineWatcher: RunObserver {
  let events = Recorder<String>()
  func observe(_ event: RunEvent) {
    if event.kind == .stageCancelled, let cause = event.cause {
      events.record("cancelled \(event.subject): \(cause)")
    }
    if event.kind == .retryGaveUpAtDeadline, let attempt = event.attempt,
      let wait = event.wait, let error = event.error
    {
      events.record("gave up after attempt \(attempt), wait \(wait): \(error)")
    }
  }
}

@Suite struct RetryDeadlineTests {
  /// An attempt that fails 20 ms after it starts, recording when it started.
  private static func failingAfter20ms(_ clock: TestClock, _ starts: Recorder<Duration>)
    -> AsyncFunc<Int, Int>
  {
    AsyncFunc(name: "attempt") { _, complete in
      starts.record(clock.now.sinceStart)
      _ = clock.scheduleTimer(at: clock.now + .milliseconds(20)) {
        complete(.failure(TestError(1)))
      }
    }
  }

  @Test func retry_begins_no_wait_that_would_end_at_the_deadline_and_fails_with_the_error() {
    let clock = TestClock()
    let starts = Recorder<Duration>()
    let function = Self.failingAfter20ms(clock, starts)
      .retry(5, delay: .milliseconds(30), clock: clock)
      .timeout(.milliseconds(100), clock: clock)
    let ended = Locked<(Result<Int, any Error>, Duration)?>(nil)
    function.run(1) { result in ended.withLock { $0 = (result, clock.now.sinceStart) } }
    clock.advance(by: .milliseconds(100))
    #expect(starts.all == [.zero, .milliseconds(50)])
    let (result, at) = ended.withLock { $0 }!
    #expect(result.failure as? TestError == TestError(1))
    #expect(at == .milliseconds(70))
    #expect(clock.pendingCount == 0)
  }

  @Test func retry_without_a_deadline_waits_as_before() {
    let clock = TestClock()
    let starts = Recorder<Duration>()
    let function = Self.failingAfter20ms(clock, starts)
      .retry(2, delay: .milliseconds(30), clock: clock)
    function.run(1) { _ in }
    clock.advance(by: .milliseconds(200))
    #expect(starts.all == [.zero, .milliseconds(50), .milliseconds(100)])
  }

  @Test func a_deadline_on_another_clock_does_not_stop_the_retry() {
    let clock = TestClock()
    let starts = Recorder<Duration>()
    let function = Self.failingAfter20ms(clock, starts)
      .retry(2, delay: .milliseconds(30), clock: clock)
      .timeout(.milliseconds(60), clock: TestClock())
    function.run(1) { _ in }
    clock.advance(by: .milliseconds(200))
    #expect(starts.all == [.zero, .milliseconds(50), .milliseconds(100)])
  }

  @Test func a_scheduled_retry_gives_up_at_the_deadline_too() {
    let clock = TestClock()
    let starts = Recorder<Duration>()
    let function = Self.failingAfter20ms(clock, starts)
      .retry(.spaced(.milliseconds(30)), clock: clock)
      .timeout(.milliseconds(100), clock: clock)
    let ended = Locked<(Result<Int, any Error>, Duration)?>(nil)
    function.run(1) { result in ended.withLock { $0 = (result, clock.now.sinceStart) } }
    clock.advance(by: .milliseconds(100))
    #expect(starts.all == [.zero, .milliseconds(50)])
    #expect(ended.withLock { $0 }?.0.failure as? TestError == TestError(1))
    #expect(ended.withLock { $0 }?.1 == .milliseconds(70))
  }

  @Test func the_observer_sees_the_retry_given_up_and_a_stage_cancelled_with_its_cause() {
    let clock = TestClock()
    let starts = Recorder<Duration>()
    let watcher = DeadlineWatcher()
    Self.failingAfter20ms(clock, starts).retry(5, delay: .milliseconds(30), clock: clock)
      .timeout(.milliseconds(100), clock: clock)
      .run(1, observer: watcher) { _ in }
    clock.advance(by: .milliseconds(100))
    #expect(
      watcher.events.all == [
        "gave up after attempt 2, wait 0.03 seconds: \(TestError(1))"
      ])
    let parking = Parking<Int, Int>()
    parking.function.timeout(.milliseconds(10), clock: clock).run(1, observer: watcher) { _ in }
    clock.advance(by: .milliseconds(10))
    #expect(
      watcher.events.all.last == "cancelled parked: TimeoutError: no result within 0.01 seconds")
  }

  @Test func the_timeline_prints_the_cause_of_a_cancelled_span_and_the_retry_given_up() {
    let clock = TestClock()
    let timeline = Timeline(clock: clock)
    let slow = AsyncFunc<Int, Int>(name: "slow") { _, token, complete in
      token.onCancel { complete(.failure(CancellationError())) }
    }
    slow.timeout(.milliseconds(100), clock: clock).run(1, observer: timeline) { _ in }
    clock.advance(by: .milliseconds(100))
    #expect(timeline.spans.map(\.cancellationCause) == ["timeout after 0.1 seconds"])
    #expect(timeline.renderGantt(width: 10).contains("cancelled: timeout after 0.1 seconds"))

    let retried = Timeline(clock: clock)
    let starts = Recorder<Duration>()
    Self.failingAfter20ms(clock, starts).retry(5, delay: .milliseconds(30), clock: clock)
      .timeout(.milliseconds(100), clock: clock)
      .run(1, observer: retried) { _ in }
    clock.advance(by: .milliseconds(100))
    #expect(
      retried.marks.map(\.kind) == [
        .retry(attempt: 1, wait: .milliseconds(30)),
        .retryGaveUp(attempt: 2, wait: .milliseconds(30)),
      ])
    #expect(retried.renderGantt(width: 10).contains("⏹ a retry given up at the deadline"))
  }
}

@Suite struct HedgedDeadlineTests {
  @Test func hedged_starts_no_hedge_at_or_after_the_deadline() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    // Hedges would start at 40 and 80 ms; the deadline at 80 ms leaves room for the first.
    parking.function.hedged(after: .milliseconds(40), maxHedges: 3, clock: clock)
      .timeout(.milliseconds(80), clock: clock)
      .run(1) { result in outcome.withLock { $0 = result } }
    clock.advance(by: .milliseconds(40))
    #expect(parking.started == 2)
    #expect(clock.pendingCount == 1)  // The timeout's timer only: no wait for hedge 2.
    clock.advance(by: .milliseconds(40))
    #expect(parking.started == 2)
    #expect(outcome.withLock { $0 }?.failure is TimeoutError)
  }

  @Test func a_failure_at_the_deadline_starts_no_hedge_and_fails_with_the_primarys_error() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let parent = CancellationToken()
    let (token, _) = parent.makeChild(deadline: .start + .milliseconds(30), on: clock)
    parking.function.hedged(after: .milliseconds(100), clock: clock)
      .run(1, token: token) { result in outcome.withLock { $0 = result } }
    clock.advance(by: .milliseconds(30))
    parking.takeAll()[0].complete(.failure(TestError(4)))
    #expect(parking.started == 1)
    #expect(outcome.withLock { $0 }?.failure as? TestError == TestError(4))
  }

  @Test func the_losers_of_a_hedged_run_get_a_lost_race_error() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    parking.function.hedged(after: .milliseconds(10), clock: clock).run(1) { _ in }
    clock.advance(by: .milliseconds(10))
    let attempts = parking.takeAll()
    attempts[1].complete(.success(2))
    #expect(attempts[0].token.cause as? LostRaceError == LostRaceError())
  }
}
