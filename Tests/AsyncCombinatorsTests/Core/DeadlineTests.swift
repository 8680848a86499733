import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct DeadlineTests {
  private static func at(_ milliseconds: Int) -> TestClock.Instant {
    TestClock.Instant(sinceStart: .milliseconds(milliseconds))
  }

  @Test func a_token_has_no_deadline_outside_a_timeout() {
    #expect(CancellationToken().deadline(on: TestClock()) == nil)
    #expect(CancellationToken().deadline(on: ContinuousClock()) == nil)
  }

  @Test func a_run_without_a_deadline_or_cancellation_makes_nothing_for_them() {
    // No box for a token without observer or deadline, and a child shares its parent's box:
    // child tokens cost what they did. A plain cancel() of a token without handlers makes no
    // table for its cause.
    let root = CancellationToken()
    #expect(root.contextIdentity == nil)
    #expect(root.makeChild().child.contextIdentity == nil)
    let clock = TestClock()
    let (timed, _) = root.makeChild(deadline: .start + .seconds(1), on: clock)
    let (child, _) = timed.makeChild()
    #expect(child.contextIdentity == timed.contextIdentity)
    #expect(child.contextIdentity != nil)
    // A later deadline on the same clock adds nothing.
    let (later, _) = timed.makeChild(deadline: .start + .seconds(2), on: clock)
    #expect(later.contextIdentity == timed.contextIdentity)
    let plain = CancellationToken()
    plain.cancel()
    #expect(!plain.hasHandlerTable)
    #expect(plain.cause is CancellationError)
  }

  @Test func timeout_sets_the_calls_instant_plus_the_duration_on_the_inner_token() {
    let clock = TestClock()
    clock.advance(by: .milliseconds(5))
    let parking = Parking<Int, Int>()
    parking.function.timeout(.milliseconds(100), clock: clock).run(1) { _ in }
    let body = parking.takeAll()[0]
    #expect(body.token.deadline(on: clock) == Self.at(105))
    body.complete(.success(1))
  }

  @Test func nested_timeouts_on_one_clock_keep_the_earliest_in_either_order() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let inner = parking.function
    inner.timeout(.milliseconds(200), clock: clock).timeout(.milliseconds(100), clock: clock)
      .run(1) { _ in }
    inner.timeout(.milliseconds(100), clock: clock).timeout(.milliseconds(200), clock: clock)
      .run(2) { _ in }
    let bodies = parking.takeAll()
    #expect(bodies.map { $0.token.deadline(on: clock) } == [Self.at(100), Self.at(100)])
    for body in bodies { body.complete(.success(0)) }
  }

  @Test func a_deadline_on_one_clock_is_not_seen_on_another() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    parking.function.timeout(.milliseconds(100), clock: clock).run(1) { _ in }
    parking.function.timeout(.seconds(30)).run(2) { _ in }
    let bodies = parking.takeAll()
    #expect(bodies[0].token.deadline(on: TestClock()) == nil)
    #expect(bodies[0].token.deadline(on: ContinuousClock()) == nil)
    #expect(bodies[1].token.deadline(on: clock) == nil)
    // A struct clock is the same clock as any other value of its type.
    let continuous = bodies[1].token.deadline(on: ContinuousClock())
    #expect(continuous.map { ContinuousClock.now.duration(to: $0) <= .seconds(30) } == true)
    for body in bodies { body.complete(.success(0)) }
  }

  @Test func deadlines_on_two_clocks_are_each_read_on_their_own() {
    let first = TestClock()
    let second = TestClock()
    second.advance(by: .milliseconds(50))
    let parking = Parking<Int, Int>()
    parking.function.timeout(.milliseconds(300), clock: first)
      .timeout(.milliseconds(100), clock: second).timeout(.milliseconds(200), clock: first)
      .run(1) { _ in }
    let body = parking.takeAll()[0]
    #expect(body.token.deadline(on: first) == Self.at(200))
    #expect(body.token.deadline(on: second) == Self.at(150))
    body.complete(.success(1))
  }

  @Test func parallel_branches_under_a_timeout_read_its_deadline() {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    (parking.function <> parking.function).timeout(.milliseconds(40), clock: clock).run(1) {
      _ in
    }
    let bodies = parking.takeAll()
    #expect(bodies.map { $0.token.deadline(on: clock) } == [Self.at(40), Self.at(40)])
    for body in bodies { body.complete(.success(0)) }
  }

  @Test(.timeLimit(.minutes(1)))
  func a_deadline_and_its_cause_travel_through_two_levels_of_async_bodies() async {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let inner = parking.function
    let middle = AsyncFunc<Int, Int>.async { try await inner($0) }
    let outer = AsyncFunc<Int, Int>.async { try await middle($0) }
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let finished = Countdown(1)
    outer.timeout(.milliseconds(100), clock: clock).run(1) { result in
      outcome.withLock { $0 = result }
      finished.tick()
    }
    await parking.waitForStarts(1)
    let body = parking.takeAll()[0]
    #expect(body.token.deadline(on: clock) == Self.at(100))
    clock.advance(by: .milliseconds(100))
    #expect(body.token.cause as? TimeoutError == TimeoutError(duration: .milliseconds(100)))
    await finished.wait()
    #expect(
      outcome.withLock { $0 }?.failure as? TimeoutError
        == TimeoutError(duration: .milliseconds(100)))
    body.complete(.success(1))
  }

  @Test func with_timeout_returns_the_operations_value_and_takes_its_timer_back() async throws {
    let clock = TestClock()
    let value = try await withTimeout(.milliseconds(100), clock: clock) { 5 }
    #expect(value == 5)
    #expect(clock.pendingCount == 0)
  }

  @Test(.timeLimit(.minutes(1)))
  func with_timeout_sets_its_deadline_and_throws_only_after_its_operation_returned() async {
    let clock = TestClock()
    clock.advance(by: .milliseconds(10))
    let parking = Parking<Int, Int>()
    let leave = Gate()
    let events = Recorder<String>()
    let task = Task {
      do {
        _ = try await withTimeout(.milliseconds(100), clock: clock) {
          do {
            _ = try await parking.function(1)
          } catch {
            events.record("awaited run: \(error is CancellationError)")
          }
          await leave.wait()
          events.record("operation returned")
          return 0
        }
        events.record("returned")
      } catch {
        events.record("\(error)")
      }
    }
    await parking.waitForStarts(1)
    let body = parking.takeAll()[0]
    #expect(body.token.deadline(on: clock) == Self.at(110))
    clock.advance(by: .milliseconds(100))
    #expect(body.token.cause as? TimeoutError == TimeoutError(duration: .milliseconds(100)))
    leave.open()
    _ = await task.result
    #expect(
      events.all == [
        "awaited run: true", "operation returned",
        "\(TimeoutError(duration: .milliseconds(100)))",
      ])
    body.complete(.success(1))
  }

  @Test(.timeLimit(.minutes(1)))
  func with_timeout_reaches_a_function_awaited_in_an_async_body_it_awaits() async throws {
    let clock = TestClock()
    clock.advance(by: .milliseconds(7))
    let parking = Parking<Int, Int>()
    let inner = parking.function
    let middle = AsyncFunc<Int, Int>.async { try await inner($0) }
    let task = Task {
      try await withTimeout(.milliseconds(200), clock: clock) { try await middle(1) }
    }
    await parking.waitForStarts(1)
    let body = parking.takeAll()[0]
    #expect(body.token.deadline(on: clock) == Self.at(207))
    body.complete(.success(5))
    #expect(try await task.value == 5)
    #expect(clock.pendingCount == 0)
  }

  @Test func with_timeout_nested_in_a_timeout_keeps_the_earlier_deadline() async {
    let clock = TestClock()
    let parking = Parking<Int, Int>()
    let inner = parking.function
    let body = AsyncFunc<Int, Int>.async { input in
      try await withTimeout(.milliseconds(300), clock: clock) { try await inner(input) }
    }
    body.timeout(.milliseconds(100), clock: clock).run(1) { _ in }
    await parking.waitForStarts(1)
    let parked = parking.takeAll()[0]
    #expect(parked.token.deadline(on: clock) == Self.at(100))
    parked.complete(.success(1))
  }
}
