import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct HedgedTests {
  /// A hedged run of a parked function on a test clock, and what it ended with.
  final class Harness: Sendable {
    let clock = TestClock()
    let parking = Parking<String, String>()
    let outcome = Recorder<Result<String, any Error>>()
    let starts = Recorder<Duration>()
    let token: CancellationToken

    init(after delay: Duration, maxHedges: Int = 1, observer: (any RunObserver)? = nil) {
      let parking = parking
      let clock = clock
      let starts = starts
      let timed = AsyncFunc<String, String>(name: "lookup") { input, token, complete in
        starts.record(TestClock.Instant.start.duration(to: clock.now))
        parking.function.run(input, token: token, completion: complete)
      }
      let hedged = timed.hedged(after: delay, maxHedges: maxHedges, clock: clock)
      let outcome = outcome
      if let observer {
        token = hedged.run("k", observer: observer) { outcome.record($0) }
      } else {
        token = hedged.run("k") { outcome.record($0) }
      }
    }

    var result: Result<String, any Error>? {
      #expect(outcome.count <= 1)
      return outcome.all.first
    }
    var started: Int { parking.started }
    var startedAt: [Duration] { starts.all }
  }

  @Test func a_primary_that_answers_in_time_is_the_only_attempt() throws {
    let run = Harness(after: .milliseconds(50))
    #expect(run.started == 1)
    run.clock.advance(by: .milliseconds(49))
    for parked in run.parking.takeAll() { parked.complete(.success("primary")) }
    #expect(try run.result?.get() == "primary")
    #expect(run.clock.nextDeadline == nil)  // the hedge's timer was taken back
    run.clock.advance(by: .seconds(1))
    #expect(run.started == 1)
  }

  @Test func a_slow_primary_gets_a_hedge_after_the_delay_and_the_first_success_wins() throws {
    let run = Harness(after: .milliseconds(50))
    run.clock.advance(by: .milliseconds(49))
    #expect(run.started == 1)
    run.clock.advance(by: .milliseconds(1))
    #expect(run.started == 2)
    let parked = run.parking.takeAll()
    parked[1].complete(.success("hedge"))
    #expect(try run.result?.get() == "hedge")
    #expect(parked[0].token.isCancelled)
    parked[0].complete(.success("late"))  // a loser's late answer changes nothing
    #expect(try run.result?.get() == "hedge")
  }

  @Test func hedges_start_one_delay_after_another_up_to_max_hedges() {
    let run = Harness(after: .milliseconds(50), maxHedges: 3)
    while let next = run.clock.nextDeadline { run.clock.advance(to: next) }
    #expect(run.startedAt == [0, 50, 100, 150].map { .milliseconds($0) })
    #expect(run.result == nil)
  }

  @Test func a_failed_attempt_starts_the_next_hedge_at_once() {
    let run = Harness(after: .milliseconds(50), maxHedges: 2)
    run.clock.advance(by: .milliseconds(10))
    run.parking.takeAll()[0].complete(.failure(TestError(1)))
    #expect(run.started == 2)
    while let next = run.clock.nextDeadline { run.clock.advance(to: next) }
    #expect(run.startedAt == [0, 10, 60].map { .milliseconds($0) })
    #expect(run.result == nil)  // the hedges still run
  }

  @Test func when_all_fail_the_primarys_error_is_the_result_whichever_failed_first() {
    let run = Harness(after: .milliseconds(50))
    run.clock.advance(by: .milliseconds(50))
    let parked = run.parking.takeAll()
    parked[1].complete(.failure(TestError(2)))
    #expect(run.result == nil)
    parked[0].complete(.failure(TestError(1)))
    #expect(run.result?.failure as? TestError == TestError(1))
    #expect(run.started == 2)
  }

  @Test func after_zero_starts_every_attempt_at_once() throws {
    let run = Harness(after: .zero, maxHedges: 2)
    #expect(run.started == 3)
    #expect(run.clock.nextDeadline == nil)
    let parked = run.parking.takeAll()
    parked[2].complete(.success("third"))
    #expect(try run.result?.get() == "third")
    #expect(parked[0].token.isCancelled && parked[1].token.isCancelled)
  }

  @Test func max_hedges_zero_is_the_function_alone() {
    let run = Harness(after: .milliseconds(50), maxHedges: 0)
    #expect(run.clock.nextDeadline == nil)
    run.parking.takeAll()[0].complete(.failure(TestError(1)))
    #expect(run.result?.failure as? TestError == TestError(1))
    #expect(run.started == 1)
  }

  @Test func cancelling_the_run_cancels_every_attempt_and_the_pending_hedge() {
    let run = Harness(after: .milliseconds(50), maxHedges: 2)
    run.clock.advance(by: .milliseconds(50))
    run.token.cancel()
    let parked = run.parking.takeAll()
    #expect(parked.allSatisfy { $0.token.isCancelled })
    #expect(run.clock.nextDeadline == nil)
    parked[0].complete(.failure(TestError(1)))  // fails after the cancellation
    #expect(run.result?.failure is CancellationError)
    run.clock.advance(by: .seconds(1))
    #expect(run.started == 2)
  }

  @Test func an_attempt_that_ends_with_cancellation_ends_the_whole_with_it() {
    let run = Harness(after: .milliseconds(50))
    run.clock.advance(by: .milliseconds(50))
    let parked = run.parking.takeAll()
    parked[1].complete(.failure(CancellationError()))
    #expect(run.result?.failure is CancellationError)
    #expect(parked[0].token.isCancelled)
  }

  final class Watch: RunObserver {
    let hedges = Recorder<String>()
    func observe(_ event: RunEvent) {
      if let hedge = event.hedge { hedges.record("\(event.subject) \(hedge)") }
    }
  }

  @Test func an_observer_hears_each_hedge_start() {
    let watch = Watch()
    let run = Harness(after: .milliseconds(50), maxHedges: 2, observer: watch)
    while let next = run.clock.nextDeadline { run.clock.advance(to: next) }
    #expect(
      watch.hedges.all == [
        "lookup.hedged(after: 0.05 seconds, maxHedges: 2) 1",
        "lookup.hedged(after: 0.05 seconds, maxHedges: 2) 2",
      ])
  }

  @Test func the_description_reads_as_the_call() {
    let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
    #expect("\(fetch.hedged(after: .milliseconds(50)))" == "fetch.hedged(after: 0.05 seconds)")
    #expect(
      "\(fetch.hedged(after: .seconds(1), maxHedges: 3))"
        == "fetch.hedged(after: 1.0 seconds, maxHedges: 3)")
  }

  @Test func a_synchronous_success_needs_no_hedge() throws {
    let calls = Atomic(0)
    let fetch = AsyncFunc<Int, Int>.sync {
      calls.add(1, ordering: .relaxed)
      return $0
    }
    #expect(try Self.call(fetch.hedged(after: .milliseconds(50), clock: TestClock()), 4) == 4)
    #expect(calls.load(ordering: .relaxed) == 1)
  }

  @Test func synchronous_failures_use_every_hedge_at_once() {
    let calls = Atomic(0)
    let failing = AsyncFunc<Int, Int> { _, complete in
      let call = calls.add(1, ordering: .relaxed).newValue
      complete(.failure(TestError(call)))
    }
    let result = Result {
      try Self.call(failing.hedged(after: .seconds(1), maxHedges: 3, clock: TestClock()), 0)
    }
    #expect(result.failure as? TestError == TestError(1))
    #expect(calls.load(ordering: .relaxed) == 4)
  }

  static func call(_ function: AsyncFunc<Int, Int>, _ input: Int) throws -> Int {
    let outcome = Locked<Result<Int, any Error>?>(nil)
    function.run(input) { result in outcome.withLock { $0 = result } }
    return try outcome.withLock { $0 }!.get()
  }

  @Test func a_negative_delay_or_hedge_count_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.hedged(after: .seconds(-1))
    }
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.hedged(after: .seconds(1), maxHedges: -1)
    }
  }
}

@Suite struct ResilienceTimelineTests {
  @Test func a_timeline_marks_each_retry_and_hedge_and_draws_them_after_the_stages() {
    let clock = TestClock()
    let attempts = Atomic(0)
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { x, complete in
      let attempt = attempts.add(1, ordering: .relaxed).newValue
      complete(attempt < 3 ? .failure(TestError(attempt)) : .success(x))
    }
    let timeline = Timeline()
    fetch.retry(2, delay: .seconds(1), clock: clock).run(1, observer: timeline) { _ in }
    while let next = clock.nextDeadline { clock.advance(to: next) }
    let stage = "fetch.retry(2, delay: 1.0 seconds)"
    #expect(
      timeline.marks.map(\.kind) == [
        .retry(attempt: 1, wait: .seconds(1)), .retry(attempt: 2, wait: .seconds(1)),
      ])
    #expect(timeline.marks.allSatisfy { $0.stage == stage })
    let rows = timeline.renderGantt(width: 10).split(separator: "\n")
    #expect(rows.count == 1 + 3 + 2 + 1)
    #expect(rows[4].hasPrefix("↻ after attempt 1 |"))
    #expect(rows[4].hasSuffix("| wait 1000.0 ms  \(stage)"))
    #expect(rows[5].hasPrefix("↻ after attempt 2 |"))
    #expect(rows[6] == "legend: ↻ a retry about to wait")
    // The timeline keeps its own time, not the test clock's: each milestone starts and ends
    // at its moment, whatever that is.
    let mermaid = timeline.renderMermaid().split(separator: "\n")
    #expect(mermaid.suffix(3).first == "  section retries and hedges")
    for (line, attempt) in zip(mermaid.suffix(2), 1...) {
      let (name, times) = (line.split(separator: " : ")[0], line.split(separator: " : ")[1])
      #expect(name == "  ↻ after attempt \(attempt)")
      let moments = times.split(separator: ", ")
      #expect(moments.count == 3 && moments[0] == "milestone" && moments[1] == moments[2])
    }
    let svg = timeline.renderSVG()
    #expect(svg.contains(">↻ after attempt 2</text>"))
    #expect(svg.contains(">legend: ↻ a retry about to wait</text>"))

    let parking = Parking<Int, Int>()
    let hedgeLine = Timeline()
    parking.function.hedged(after: .seconds(1), clock: clock).run(1, observer: hedgeLine) { _ in }
    clock.advance(by: .seconds(1))
    #expect(hedgeLine.marks.map(\.kind) == [.hedge(1)])
    let hedgeRows = hedgeLine.renderGantt(width: 10).split(separator: "\n")
    let hedgeRow = hedgeRows[hedgeRows.count - 2]
    #expect(
      hedgeRow.hasPrefix("⑂ hedge 1 |") && hedgeRow.hasSuffix("| parked.hedged(after: 1.0 seconds)")
    )
    #expect(hedgeRows.last == "legend: ⑂ a hedge started")
    for parked in parking.takeAll() { parked.complete(.success(1)) }
  }
}

/// The default clock's timers are shared by every test in the process, so these count only
/// timers due between three and five hours from now, which no other test arms; serialized,
/// so that each count is one test's own.
@Suite(.serialized) struct HedgedDefaultClockTests {
  static let delay = Duration.seconds(4 * 3600)
  static func pendingWaits() -> Int {
    SharedTimers.shared.pendingCount(
      dueAfter: .now() + .seconds(3 * 3600), before: .now() + .seconds(5 * 3600))
  }

  @Test func a_primary_that_wins_takes_back_the_wait_and_its_registration() throws {
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = CancellationToken()
    parking.function.hedged(after: Self.delay).run(1, token: token) { result in
      outcome.withLock { $0 = result }
    }
    #expect(Self.pendingWaits() == 1)
    #expect(token.registrationCount == 2)  // the run's own, and the wait's
    parking.takeAll()[0].complete(.success(2))
    #expect(try outcome.withLock { $0 }?.get() == 2)
    #expect(Self.pendingWaits() == 0)
    #expect(token.registrationCount == 0)
  }

  @Test func cancelling_the_run_takes_back_the_wait_at_once() {
    let parking = Parking<Int, Int>()
    let outcome = Locked<Result<Int, any Error>?>(nil)
    let token = parking.function.hedged(after: Self.delay).run(1) { result in
      outcome.withLock { $0 = result }
    }
    #expect(Self.pendingWaits() == 1)
    token.cancel()
    #expect(Self.pendingWaits() == 0)  // before the primary has answered
    #expect(outcome.withLock { $0?.failure } is CancellationError)
    #expect(parking.takeAll()[0].token.isCancelled)
  }

  @Test func a_primary_that_fails_replaces_the_wait_with_the_hedges_own() {
    let parking = Parking<Int, Int>()
    let token = CancellationToken()
    parking.function.hedged(after: Self.delay, maxHedges: 2).run(1, token: token) { _ in }
    parking.takeAll()[0].complete(.failure(TestError(1)))
    #expect(parking.started == 2)
    #expect(Self.pendingWaits() == 1)  // the wait before the second hedge, not the first's
    #expect(token.registrationCount == 2)
    token.cancel()
    #expect(Self.pendingWaits() == 0)
  }
}
