import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct TimelineTests {
  /// A stage on `lane` that signals `started`, then completes once `release` opens.
  private func gated(
    _ name: String, on lane: BlockingLane, started: Countdown, release: Gate
  ) -> AsyncFunc<Int, Int> {
    AsyncFunc(name: name) { x, complete in
      lane.async {
        started.tick()
        release.blockingWait()
        complete(.success(x))
      }
    }
  }

  @Test func parallel_stages_record_overlapping_spans() async throws {
    // Each stage blocks a thread of its own until both have started.
    let started = Countdown(2)
    let release = Gate()
    let both =
      gated("left", on: blockingLane("left"), started: started, release: release)
      <> gated("right", on: blockingLane("right"), started: started, release: release)
    let timeline = Timeline()
    async let result = withCheckedContinuation { continuation in
      both.run(1, observer: timeline) { continuation.resume(returning: $0) }
    }
    await started.wait()  // Both bodies are running: neither can have ended.
    release.open()
    _ = try await result.get()

    let spans = timeline.spans
    #expect(spans.map(\.name) == ["left", "right"])
    #expect(spans[0].overlaps(spans[1]))
    #expect(spans.allSatisfy { $0.endedAt != nil && !$0.isFailed })
    let drawn = bars(timeline.renderGantt(width: 40))
    #expect(drawn[0].overlaps(drawn[1]))
  }

  @Test func serial_stages_record_steps() async throws {
    let first = AsyncFunc<Int, Int>(name: "first") { x, complete in
      testQueue().async { complete(.success(x + 1)) }
    }
    let second = AsyncFunc<Int, Int>(name: "second") { x, complete in
      testQueue().async { complete(.success(x * 2)) }
    }
    let (result, timeline) = await (first +> second +> .sync(name: "third") { $0 }).traced(1)
    #expect(try result.get() == 4)
    let spans = timeline.spans
    #expect(spans.map(\.name) == ["first", "second", "third"])
    for (before, after) in zip(spans, spans.dropFirst()) {
      #expect(try #require(before.endedAt) <= after.startedAt)
      #expect(!before.overlaps(after))
    }
  }

  @Test func failed_stage_is_marked_failed() async {
    struct Boom: Error {}
    let boom = AsyncFunc<Int, Int>.sync(name: "boom") { _ in throw Boom() }
    let (result, timeline) = await boom.traced(1)
    #expect(throws: Boom.self) { try result.get() }
    #expect(timeline.spans.map(\.isFailed) == [true])
  }

  @Test func a_sibling_cancelled_by_a_failure_is_marked_cancelled_not_failed() async {
    struct Boom: Error {}
    // `waits` ends only when its token fires; `boom` fails at once and so cancels it.
    let waits = AsyncFunc<Int, Int>(name: "waits") { _, token, complete in
      token.onCancel { complete(.failure(CancellationError())) }
    }
    let boom = AsyncFunc<Int, Int>.sync(name: "boom") { _ in throw Boom() }
    let (result, timeline) = await (waits <> boom).traced(1)
    #expect(throws: Boom.self) { try result.get() }
    let outcomes = Dictionary(uniqueKeysWithValues: timeline.spans.map { ($0.name, $0.outcome) })
    #expect(outcomes == ["waits": .cancelled, "boom": .failed])
  }

  @Test func a_run_cancelling_its_stage_says_so_apart_from_the_stages_own_end() async {
    final class Recorder: RunObserver {
      let events = Locked<[String]>([])
      func observe(_ event: RunEvent) {
        let outcome = event.outcome.map { "\($0)" } ?? "none"
        let line =
          switch event.kind {
          case .stageStarted: "start"
          case .stageEnded: "end \(outcome)"
          case .stageCancelled: "cancelled"
          case .stageCalledBackAfterCancellation: "late \(outcome)"
          default: "other \(event.kind)"
          }
        events.withLock { $0.append(line) }
      }
    }
    let parked = ParkedCompletion<Int>()
    let waits = AsyncFunc<Int, Int>(name: "waits") { _, complete in parked.park(complete) }
    let byRun = Recorder()
    let token = waits.run(1, observer: byRun) { _ in }
    await parked.arrived.wait()
    token.cancel()
    parked.complete(.failure(CancellationError()))
    #expect(byRun.events.withLock { $0 } == ["start", "cancelled", "late cancelled"])

    // A body that completes with cancellation on its own is an end, not the run's cancelling.
    let byItself = Recorder()
    let quits = AsyncFunc<Int, Int>(name: "quits") { _, complete in
      complete(.failure(CancellationError()))
    }
    _ = quits.run(1, observer: byItself) { _ in }
    #expect(byItself.events.withLock { $0 } == ["start", "end cancelled"])
  }

  @Test func a_sibling_ignoring_its_token_ends_when_cancelled_and_its_late_call_is_ignored()
    async throws
  {
    struct Boom: Error {}
    let parked = ParkedCompletion<Int>()
    let ignores = AsyncFunc<Int, Int>(name: "ignores") { _, complete in parked.park(complete) }
    let boom = AsyncFunc<Int, Int>.sync(name: "boom") { _ in throw Boom() }
    let (result, timeline) = await (ignores <> boom).traced(1)
    #expect(throws: Boom.self) { try result.get() }
    let cancelled = try #require(timeline.spans.first { $0.name == "ignores" })
    #expect(cancelled.outcome == .cancelled)
    #expect(cancelled.endedAt != nil)
    #expect(cancelled.ignoredCallbackAt == nil)
    parked.complete(.success(1))  // The body calls back after all: the run ignores it.
    let late = try #require(timeline.spans.first { $0.name == "ignores" })
    #expect(late.outcome == .cancelled)
    #expect(late.endedAt == cancelled.endedAt)
    let ignoredAt = try #require(late.ignoredCallbackAt)
    #expect(ignoredAt >= cancelled.endedAt!)
    let row = try #require(
      timeline.renderGantt(width: 20).split(separator: "\n").first {
        $0.hasPrefix("ignores")
      })
    #expect(row.contains("▒") && row.contains("×") && !row.contains("░"))
  }

  @Test func records_the_queue_a_stage_started_and_ended_on() async {
    let start = DispatchQueue(label: "timeline.start")
    let finish = DispatchQueue(label: "timeline.finish")
    let hop = AsyncFunc<Int, Int>(name: "hop") { x, complete in
      finish.async { complete(.success(x)) }
    }
    let timeline = Timeline()
    await withCheckedContinuation { continuation in
      start.async { hop.run(1, observer: timeline) { _ in continuation.resume() } }
    }
    #expect(timeline.spans.first?.startedOn == "timeline.start")
    #expect(timeline.spans.first?.endedOn == "timeline.finish")
  }

  @Test func cancelling_a_traced_task_cancels_the_run() async {
    let parked = AsyncFunc<Int, Int>(name: "parked") { _, token, complete in
      token.onCancel { complete(.failure(CancellationError())) }
    }
    let task = Task { await parked.traced(1) }
    task.cancel()
    let (result, _) = await task.value
    #expect(throws: CancellationError.self) { try result.get() }
  }

  // MARK: Rendering, on spans with known times

  /// A timeline of spans whose times are given in nanoseconds from the run's start.
  private func timeline(_ spans: [(String, Int64, Int64?)]) -> Timeline {
    Timeline(
      spans: spans.map { name, start, end in
        Timeline.Span(
          name: name, startedAt: .nanoseconds(start), endedAt: end.map { .nanoseconds($0) },
          outcome: end.map { _ in .succeeded }, startedOn: "q", endedOn: end.map { _ in "q" })
      })
  }

  /// The columns each row's bar covers, from a rendered Gantt chart.
  private func bars(_ chart: String) -> [Range<Int>] {
    chart.split(separator: "\n").dropFirst().map { line in
      let bar = Array(line.split(separator: "|")[1])
      let filled = bar.indices.filter { bar[$0] != " " }
      return filled.first!..<(filled.last! + 1)
    }
  }

  @Test func gantt_draws_serial_stages_as_steps() {
    let chart = timeline([
      ("a", 0, 10_000_000), ("b", 10_000_000, 30_000_000), ("c", 30_000_000, 40_000_000),
    ])
    .renderGantt(width: 40)
    #expect(bars(chart) == [0..<10, 10..<30, 30..<40])
    #expect(chart.split(separator: "\n")[0].hasSuffix("0 ms                             40.0 ms"))
  }

  @Test func gantt_draws_parallel_stages_as_overlapping_bars() {
    let chart = timeline([
      ("left", 0, 30_000_000), ("right", 0, 20_000_000), ("join", 30_000_000, 40_000_000),
    ])
    .renderGantt(width: 40)
    #expect(bars(chart) == [0..<30, 0..<20, 30..<40])
    #expect(chart.contains("left  |"))
    #expect(chart.contains("  30.0 ms  q"))
  }

  @Test func gantt_marks_failed_and_running_stages() {
    let timeline = timeline([("ok", 0, 10), ("running", 0, nil)])
    let chart = timeline.renderGantt(width: 4)
    #expect(chart.contains("running |░░░░|   running  q"))
    #expect(timeline.spans[1].overlaps(timeline.spans[0]))
  }

  @Test func mermaid_and_svg_list_every_stage() {
    let timeline = timeline([("load: a", 1_000_000, 21_000_000), ("b<c", 21_000_000, 31_000_000)])
    #expect(
      timeline.renderMermaid(title: "run")
        == """
        gantt
          title run
          dateFormat x
          axisFormat %L ms
          load  a : 0, 20
          b<c : 20, 30
        """)
    let svg = timeline.renderSVG()
    #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>"))
    #expect(svg.contains("b&lt;c") && svg.contains("20.0 ms"))
  }

  @Test func an_empty_timeline_says_so() {
    #expect(Timeline().renderGantt() == "(no stages ran)")
  }
}

/// The names `Timeline.Span` had before its times became `Duration`s: they still answer, for a
/// release, through a protocol so that the test itself uses no deprecated name.
private protocol SpanBeforeDurations {
  var failed: Bool { get }
  var cancelled: Bool { get }
  var start: UInt64 { get }
  var end: UInt64? { get }
  var ignoredCallback: UInt64? { get }
  var duration: UInt64? { get }
}

extension Timeline.Span: SpanBeforeDurations {}

@Suite struct TimelineClockTests {
  /// A stage that completes `after` later on `clock`.
  private func wait(_ name: String, _ after: Duration, on clock: TestClock) -> AsyncFunc<Int, Int> {
    AsyncFunc(name: name) { x, complete in
      _ = clock.scheduleTimer(at: clock.now + after) { complete(.success(x)) }
    }
  }

  private func drawn(on clock: TestClock) -> Timeline {
    let timeline = Timeline(clock: clock)
    let pipeline =
      wait("load", .milliseconds(30), on: clock) <> wait("avatar", .milliseconds(20), on: clock)
      +> .sync(name: "render") { $0 + $1 }
    pipeline.run(1, observer: timeline) { _ in }
    clock.advance(by: .seconds(1))
    return timeline
  }

  @Test func under_a_test_clock_times_are_exact_durations_from_the_runs_start() {
    let clock = TestClock()
    clock.advance(by: .seconds(5))  // The run's start is time zero, whatever the clock says.
    let spans = drawn(on: clock).spans
    #expect(spans.map(\.name) == ["load", "avatar", "render"])
    #expect(spans.map(\.startedAt) == [.zero, .zero, .milliseconds(30)])
    #expect(spans.map(\.endedAt) == [.milliseconds(30), .milliseconds(20), .milliseconds(30)])
    #expect(spans.map(\.elapsed) == [.milliseconds(30), .milliseconds(20), .zero])
    #expect(spans.allSatisfy { $0.outcome == .succeeded && !$0.isFailed && !$0.isCancelled })
  }

  @Test func under_a_test_clock_the_chart_is_the_same_on_every_run() {
    let first = drawn(on: TestClock())
    let second = drawn(on: TestClock())
    #expect(first.renderGantt(width: 30) == second.renderGantt(width: 30))
    #expect(first.renderMermaid() == second.renderMermaid())
    let bars = first.renderGantt(width: 30).split(separator: "\n").map {
      $0.split(separator: "|").dropFirst().first.map(String.init) ?? ""
    }
    #expect(
      bars == [
        "",
        "██████████████████████████████",
        "████████████████████          ",
        "                             █",
      ])
    #expect(first.renderGantt(width: 30).split(separator: "\n")[0].hasSuffix("30.0 ms"))
  }

  @Test func a_cancelled_stage_and_its_ignored_call_are_timed_on_the_clock() {
    let clock = TestClock()
    let timeline = Timeline(clock: clock)
    let ignores = AsyncFunc<Int, Int>(name: "ignores") { x, complete in
      _ = clock.scheduleTimer(at: clock.now + .milliseconds(50)) { complete(.success(x)) }
    }
    let token = ignores.run(1, observer: timeline) { _ in }
    clock.advance(by: .milliseconds(10))
    token.cancel()
    clock.advance(by: .seconds(1))
    let span = timeline.spans[0]
    #expect(span.isCancelled && !span.isFailed)
    #expect(span.endedAt == .milliseconds(10))
    #expect(span.ignoredCallbackAt == .milliseconds(50))
  }

  @Test func the_names_before_durations_still_answer_in_nanoseconds() {
    let clock = TestClock()
    let timeline = Timeline(clock: clock)
    let fails = AsyncFunc<Int, Int>(name: "fails") { _, complete in
      _ = clock.scheduleTimer(at: clock.now + .milliseconds(7)) {
        complete(.failure(CancellationError()))
      }
    }
    fails.run(1, observer: timeline) { _ in }
    clock.advance(by: .seconds(1))
    let old: any SpanBeforeDurations = timeline.spans[0]
    #expect(old.start == 0)
    #expect(old.end == 7_000_000)
    #expect(old.duration == 7_000_000)
    #expect(old.cancelled && !old.failed)
    #expect(old.ignoredCallback == nil)
  }

  @Test func a_timeline_fed_records_by_hand_draws_them() {
    let clock = TestClock()
    let timeline = Timeline(clock: clock)
    let (fetch, decode) = (StageRecord(id: 1, name: "fetch"), StageRecord(id: 2, name: "decode"))
    timeline.observe(.stageStarted(fetch))
    clock.advance(by: .milliseconds(20))
    timeline.observe(.stageEnded(fetch, outcome: .succeeded))
    timeline.observe(.stageStarted(decode))
    clock.advance(by: .milliseconds(20))
    timeline.observe(.stageEnded(decode, outcome: .failed))
    #expect(
      timeline.renderGantt(width: 8)
        == """
                0 ms 40.0 ms
        fetch  |████    |   20.0 ms  \(timeline.spans[0].startedOn)
        decode |    ▓▓▓▓|   20.0 ms  \(timeline.spans[1].startedOn)
        """)
  }
}

@Suite struct StageRecordTests {
  /// An observer a user might write: it keeps the names of the stages that failed, and of
  /// those their run cancelled.
  private final class Problems: RunObserver {
    let failed = Recorder<String>()
    let cancelled = Recorder<String>()
    func observe(_ event: RunEvent) {
      if event.kind == .stageEnded, event.outcome == .failed { failed.record(event.subject) }
      if event.kind == .stageCancelled { cancelled.record(event.subject) }
    }
  }

  @Test func an_observer_of_your_own_can_be_unit_tested_with_records() {
    let problems = Problems()
    let (load, save, sync) = (
      StageRecord(id: 1, name: "load"), StageRecord(id: 2, name: "save"),
      StageRecord(id: 3, name: "sync")
    )
    #expect(load.id == 1 && load.name == "load")
    for stage in [load, save, sync] { problems.observe(.stageStarted(stage)) }
    problems.observe(.stageEnded(load, outcome: .succeeded))
    problems.observe(.stageEnded(save, outcome: .failed))
    problems.observe(.stageCancelled(sync))
    problems.observe(.stageCalledBackAfterCancellation(sync, outcome: .succeeded))  // ignored
    #expect(problems.failed.all == ["save"])
    #expect(problems.cancelled.all == ["sync"])
  }
}
