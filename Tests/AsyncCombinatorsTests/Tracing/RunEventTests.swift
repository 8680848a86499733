import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A capability the library does not have, as a test makes it: an adaptive limiter that
/// announces each change of its limit.
private struct QueueResize: Sendable, CustomStringConvertible {
  let from: Int
  let to: Int
  let reason: String
  var description: String { "from \(from) to \(to) (\(reason))" }
}

extension RunEvent.Kind {
  fileprivate static let queueResized = RunEvent.Kind("queue resized")
}

/// An observer written before ``RunObserver/observe(_:)``: one method per kind of event.
private final class OldStyleObserver: RunObserver {
  let heard = Recorder<String>()
  func stageStarted(_ stage: StageRecord) { heard.record("started \(stage.name)") }
  func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {
    heard.record("ended \(stage.name) \(outcome)")
  }
  func stageCancelled(_ stage: StageRecord, cause: any Error) {
    heard.record("cancelled \(stage.name) \(cause)")
  }
  func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome) {
    heard.record("late \(stage.name) \(outcome)")
  }
  func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error) {
    heard.record("retry \(stage) \(attempt) \(wait) \(error)")
  }
  func retryGaveUpAtDeadline(_ stage: String, attempt: Int, wait: Duration, error: any Error) {
    heard.record("gave up \(stage) \(attempt) \(wait) \(error)")
  }
  func hedgeStarted(_ stage: String, hedge: Int) { heard.record("hedge \(stage) \(hedge)") }
  func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State
  ) {
    heard.record("breaker \(breaker.label) \(old) -> \(new)")
  }
  func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError) {
    heard.record("rejected by \(breaker.label)")
  }
}

/// An observer of the new kind: every event, as it came.
private final class EventLog: RunObserver {
  let events = Recorder<RunEvent>()
  func observe(_ event: RunEvent) { events.record(event) }
}

private struct Boom: Error, CustomStringConvertible {
  var description: String { "boom" }
}

@Suite struct RunEventTests {
  @Test func a_kind_the_renderers_do_not_know_is_drawn_by_its_name() {
    let clock = TestClock()
    let timeline = Timeline(clock: clock)
    let work = StageRecord(id: 1, name: "work")
    timeline.observe(.stageStarted(work))
    clock.advance(by: .milliseconds(10))
    let change = QueueResize(from: 20, to: 18, reason: "drop")
    timeline.observe(RunEvent(.queueResized, subject: "pool", payload: change))
    clock.advance(by: .milliseconds(10))
    timeline.observe(.stageEnded(work, outcome: .succeeded))

    #expect(timeline.marks.map(\.kind.name) == ["queue resized"])
    #expect(timeline.marks.map(\.kind.event) == [.queueResized])
    #expect(timeline.marks.map(\.kind.detail) == ["from 20 to 18 (drop)"])
    #expect(timeline.marks.map(\.time) == [.milliseconds(10)])
    #expect(
      timeline.renderGantt(width: 8)
        == """
                         0 ms 20.0 ms
        work            |████████|   20.0 ms  \(timeline.spans[0].startedOn)
        • queue resized |    •   | from 20 to 18 (drop)  pool
        legend: • another event, named on its row
        """)
    let mermaid = timeline.renderMermaid().split(separator: "\n")
    #expect(
      mermaid.suffix(2) == [
        "  section retries and hedges and other events",
        "  • queue resized : milestone, 10, 10",
      ])
    let svg = timeline.renderSVG()
    #expect(svg.contains(">• queue resized</text>"))
    #expect(svg.contains("<title>pool</title>•</text>"))
  }

  @Test func the_renderers_draw_a_breaker_change_by_its_name_beside_the_stages() {
    let timeline = Timeline(clock: TestClock())
    let breaker = CircuitBreaker(name: "payments")
    timeline.observe(.stageStarted(StageRecord(id: 1, name: "charge")))
    timeline.observe(.circuitBreakerChanged(breaker, from: .closed, to: .open))
    #expect(
      timeline.marks.map(\.kind) == [
        Timeline.Mark.Kind(.circuitBreakerChanged, detail: "closed → open")
      ])
    #expect(
      timeline.renderGantt(width: 4).contains(
        "• circuit breaker changed |•   | closed → open  payments"))
  }

  @Test func an_observer_written_for_the_old_methods_still_receives_each_event() {
    let old = OldStyleObserver()
    let observer: any RunObserver = old
    let stage = StageRecord(id: 7, name: "fetch")
    let breaker = CircuitBreaker(name: "payments")
    let rejection = BrokenCircuitError(breaker: "payments", retryAfter: nil, probing: false)
    for event: RunEvent in [
      .stageStarted(stage),
      .stageEnded(stage, outcome: .failed),
      .stageCancelled(stage, cause: Boom()),
      .stageCalledBackAfterCancellation(stage, outcome: .succeeded),
      .retryWillWait("fetch.retry(3)", attempt: 1, wait: .milliseconds(5), error: Boom()),
      .retryGaveUpAtDeadline("fetch.retry(3)", attempt: 2, wait: .seconds(1), error: Boom()),
      .hedgeStarted("fetch.hedged", hedge: 1),
      .circuitBreakerChanged(breaker, from: .closed, to: .open),
      .runRejected(by: breaker, error: rejection),
      // A kind that came after the old methods: they have none, so it reaches nothing.
      RunEvent(
        .queueResized, subject: "pool", payload: QueueResize(from: 2, to: 1, reason: "drop")),
    ] {
      observer.observe(event)
    }
    #expect(
      old.heard.all == [
        "started fetch",
        "ended fetch failed",
        "cancelled fetch boom",
        "late fetch succeeded",
        "retry fetch.retry(3) 1 0.005 seconds boom",
        "gave up fetch.retry(3) 2 1.0 seconds boom",
        "hedge fetch.hedged 1",
        "breaker payments closed -> open",
        "rejected by payments",
      ])
  }

  @Test func an_old_style_observer_hears_a_run_through_the_new_method() {
    let old = OldStyleObserver()
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    let breaker = CircuitBreaker(name: "gate")
    breaker.isolate()
    _ = (double +> double).run(1, observer: old) { _ in }
    _ = double.guarded(by: breaker).run(1, observer: old) { _ in }
    #expect(
      old.heard.all == [
        "started double", "ended double succeeded", "started double", "ended double succeeded",
        "rejected by gate",
      ])
  }

  @Test func an_observer_of_events_hears_the_library_kinds_with_their_values() {
    let log = EventLog()
    let breaker = CircuitBreaker(name: "gate")
    breaker.isolate()
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    _ = double.run(1, observer: log) { _ in }
    _ = double.guarded(by: breaker).run(1, observer: log) { _ in }
    let events = log.events.all
    #expect(events.map(\.kind) == [.stageStarted, .stageEnded, .runRejected])
    #expect(events[0].stage?.name == "double" && events[0].subject == "double")
    #expect(events[1].outcome == .succeeded && events[1].stage == events[0].stage)
    #expect(events[2].breaker === breaker && events[2].error is BrokenCircuitError)
    #expect(events[2].stage == nil && events[2].attempt == nil && events[2].payload == nil)
  }

  @Test func an_event_carries_the_values_of_its_kind_and_nil_for_the_others() {
    let retry = RunEvent.retryWillWait(
      "fetch.retry(3)", attempt: 2, wait: .milliseconds(40), error: Boom())
    #expect(retry.kind == .retryWillWait && retry.kind.name == "retry will wait")
    #expect(retry.subject == "fetch.retry(3)")
    #expect(retry.attempt == 2 && retry.wait == .milliseconds(40) && retry.error is Boom)
    #expect(retry.stage == nil && retry.hedge == nil && retry.breaker == nil)
    #expect(retry.description == "retry will wait fetch.retry(3): attempt 2, wait 0.04 seconds")

    let change = RunEvent.circuitBreakerChanged(
      CircuitBreaker(name: "payments"), from: .closed, to: .open)
    #expect(change.breakerChange?.from == .closed && change.breakerChange?.to == .open)
    #expect(change.subject == "payments")

    let cancelled = RunEvent.stageCancelled(StageRecord(id: 1, name: "load"))
    #expect(cancelled.outcome == .cancelled && cancelled.cause is CancellationError)

    let limit = RunEvent(
      .queueResized, subject: "pool", payload: QueueResize(from: 20, to: 18, reason: "drop"))
    #expect(limit.payload(as: QueueResize.self)?.to == 18)
    #expect(limit.payload(as: Int.self) == nil)
    #expect(limit.kind == RunEvent.Kind("queue resized") && limit.kind != .stageStarted)
    #expect(limit.description == "queue resized pool: from 20 to 18 (drop)")
  }
}
