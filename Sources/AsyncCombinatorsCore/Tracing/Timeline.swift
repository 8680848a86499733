import AsyncCombinatorsKernel

/// A record of what ran when: each stage's start, end and the queue or thread it ran on.
///
/// Pass a timeline as the observer of a run, or use ``AsyncFunc/traced(_:)``, then render it:
/// ``renderGantt(width:)`` draws a chart for the terminal, where `+>` shows as steps and `<>`
/// as bars that overlap; ``renderMermaid(title:)`` and ``renderSVG(width:)`` draw the same
/// chart for documentation. A timeline sees primitive stages (each function made with an
/// initializer or a lift), not the operators that join them. Runs without a timeline pay one
/// `nil` check per stage.
///
/// ```swift
/// let network = DispatchQueue(label: "network")
/// let load = AsyncFunc<Int, Int>(name: "load") { x, complete in
///   network.asyncAfter(deadline: .now() + .milliseconds(20)) { complete(.success(x)) }
/// }
/// let (result, timeline) = await (load <> load +> .sync(name: "sum") { $0 + $1 }).traced(1)
/// print(result)
/// print(timeline.renderGantt(width: 20))
/// // prints success(2)
/// // prints       0 ms         20.4 ms
/// // prints load |███████████████████ |   20.4 ms  Swift global concurrent queue → network
/// // prints load |███████████████████ |   20.2 ms  Swift global concurrent queue → network
/// // prints sum  |                   █|    0.0 ms  network
/// ```
public final class Timeline: RunObserver, CustomStringConvertible {
  /// One start of one stage and, once it has finished, its end.
  ///
  /// Times are `Duration`s from the run's start (the first stage's start), read from the
  /// timeline's clock: under a `TestClock` they are exact.
  public struct Span: Sendable, Hashable {
    /// The stage's `name:`, or `File.swift:line` where it was made.
    public let name: String
    /// When the stage started, from the run's start.
    public let startedAt: Duration
    /// When the stage completed, from the run's start; `nil` while it is running.
    public var endedAt: Duration?
    /// How the stage ended; `nil` while it is running.
    public var outcome: StageOutcome?
    /// When a stage that its run had cancelled called back anyway, from the run's start: the
    /// call the library ignored. `nil` if it never did (or was not cancelled).
    public var ignoredCallbackAt: Duration?
    /// Why its run cancelled the stage, in a few words (`timeout after 0.1 seconds`); `nil`
    /// unless it was cancelled for a reason other than a plain `cancel()`.
    public var cancellationCause: String?
    /// The dispatch queue label, or `thread 0x…`, where the stage started.
    public let startedOn: String
    /// Where the stage completed; `nil` while it is running.
    public var endedOn: String?

    /// Whether the stage completed with an error other than cancellation.
    public var isFailed: Bool { outcome == .failed }
    /// Whether the stage completed with `CancellationError`, or its run cancelled it.
    public var isCancelled: Bool { outcome == .cancelled }
    /// How long the stage ran; `nil` while it is running.
    public var elapsed: Duration? { endedAt.map { $0 - startedAt } }

    /// Whether the two spans ran at the same time for a while: each started before the
    /// other ended. A span that is still running has no end yet.
    public func overlaps(_ other: Span) -> Bool {
      (other.endedAt.map { startedAt < $0 } ?? true)
        && (endedAt.map { other.startedAt < $0 } ?? true)
    }

    // Deprecated names, kept for one release. The times they give, in nanoseconds, count
    // from the run's start.

    /// Whether the stage completed with an error other than cancellation.
    @available(*, deprecated, renamed: "isFailed")
    public var failed: Bool { isFailed }
    /// Whether the stage completed with `CancellationError`.
    @available(*, deprecated, renamed: "isCancelled")
    public var cancelled: Bool { isCancelled }
    /// When the stage started, in nanoseconds from the run's start.
    @available(*, deprecated, renamed: "startedAt", message: "a Duration from the run's start")
    public var start: UInt64 { Scale.nanoseconds(startedAt) }
    /// When the stage completed, in nanoseconds from the run's start; `nil` while it runs.
    @available(*, deprecated, renamed: "endedAt", message: "a Duration from the run's start")
    public var end: UInt64? { endedAt.map(Scale.nanoseconds) }
    /// When a cancelled stage called back anyway, in nanoseconds from the run's start.
    @available(
      *, deprecated, renamed: "ignoredCallbackAt", message: "a Duration from the run's start"
    )
    public var ignoredCallback: UInt64? { ignoredCallbackAt.map(Scale.nanoseconds) }
    /// The stage's duration in nanoseconds; `nil` while it is running.
    @available(*, deprecated, renamed: "elapsed", message: "a Duration")
    public var duration: UInt64? { elapsed.map(Scale.nanoseconds) }

    init(name: String, startedAt: Duration, startedOn: String) {
      self.name = name
      self.startedAt = startedAt
      self.startedOn = startedOn
    }

    init(
      name: String, startedAt: Duration, endedAt: Duration?, outcome: StageOutcome?,
      startedOn: String, endedOn: String?
    ) {
      self.init(name: name, startedAt: startedAt, startedOn: startedOn)
      self.endedAt = endedAt
      self.outcome = outcome
      self.endedOn = endedOn
    }
  }

  /// A moment of note between stages: a retry about to wait, a hedge starting, a breaker
  /// changing state, or any other event that is not a stage's start or end.
  public struct Mark: Sendable, Hashable {
    /// What happened: the event's kind, and the values the timeline draws.
    ///
    /// The timeline draws the kinds it knows with a glyph of their own (`↻` a retry about to
    /// wait, `⏹` one given up, `⑂` a hedge) and any other by its name, with its
    /// ``detail``: a kind added after the timeline was written is drawn all the same.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
      /// The event's kind.
      public let event: RunEvent.Kind
      /// The number of the attempt that failed, for a retry; otherwise `nil`.
      public let attempt: Int?
      /// The wait before the next attempt, for a retry; otherwise `nil`.
      public let wait: Duration?
      /// The hedge's number (from 1), for a hedge; otherwise `nil`.
      public let hedge: Int?
      /// The event's values in a few words (`closed → open`), for a kind drawn by its name;
      /// otherwise `nil`.
      public let detail: String?

      /// A mark of `event`'s kind, drawn by its name with `detail` beside it.
      ///
      /// - Parameters:
      ///   - event: The event's kind.
      ///   - detail: The event's values, in a few words.
      public init(_ event: RunEvent.Kind, detail: String? = nil) {
        self.init(event: event, attempt: nil, wait: nil, hedge: nil, detail: detail)
      }

      private init(
        event: RunEvent.Kind, attempt: Int?, wait: Duration?, hedge: Int?, detail: String?
      ) {
        self.event = event
        self.attempt = attempt
        self.wait = wait
        self.hedge = hedge
        self.detail = detail
      }

      /// A retry is about to wait `wait` after attempt number `attempt` failed.
      public static func retry(attempt: Int, wait: Duration) -> Kind {
        Kind(event: .retryWillWait, attempt: attempt, wait: wait, hedge: nil, detail: nil)
      }

      /// A hedged function started hedge number `hedge` (from 1).
      public static func hedge(_ hedge: Int) -> Kind {
        Kind(event: .hedgeStarted, attempt: nil, wait: nil, hedge: hedge, detail: nil)
      }

      /// A retry gave up after attempt number `attempt` failed: its wait of `wait` would have
      /// ended at or after the run's deadline.
      public static func retryGaveUp(attempt: Int, wait: Duration) -> Kind {
        Kind(event: .retryGaveUpAtDeadline, attempt: attempt, wait: wait, hedge: nil, detail: nil)
      }

      /// The kind's name: `hedge started`.
      public var name: String { event.name }

      public var description: String { detail.map { name + ": " + $0 } ?? name }

      /// The glyph the renderers draw at the mark's moment: `•` for a kind they do not know.
      var glyph: Character {
        switch event {
        case .retryWillWait: "↻"
        case .hedgeStarted: "⑂"
        case .retryGaveUpAtDeadline: "⏹"
        default: "•"
        }
      }

      /// What the glyph means, for the legend.
      var legend: String {
        switch event {
        case .retryWillWait: "↻ a retry about to wait"
        case .hedgeStarted: "⑂ a hedge started"
        case .retryGaveUpAtDeadline: "⏹ a retry given up at the deadline"
        default: "• another event, named on its row"
        }
      }
    }

    /// Who it happened to: the retry or hedged function as written (`fetch.retry(3)`), the
    /// breaker's name, the event's ``RunEvent/subject``.
    public let stage: String
    /// What happened.
    public let kind: Kind
    /// When, from the run's start, as a span's times are.
    public let time: Duration

    /// The row's name: `↻ after attempt 2`, `⑂ hedge 1`, `• circuit breaker changed`.
    var label: String {
      switch kind.event {
      case .retryWillWait, .retryGaveUpAtDeadline:
        "\(kind.glyph) after attempt \(kind.attempt ?? 0)"
      case .hedgeStarted: "⑂ hedge \(kind.hedge ?? 0)"
      default: "• " + kind.name
      }
    }

    /// What follows the row's bar: the values, then who.
    var note: String {
      switch kind.event {
      case .retryWillWait:
        let wait = kind.wait ?? .zero
        let waited =
          wait.components.seconds >= Int64.max / 1_000_000_000
          ? "\(wait)" : Scale.milliseconds(wait) + " ms"
        return "wait " + waited + "  " + stage
      case .retryGaveUpAtDeadline:
        return "gave up: a wait of " + Scale.milliseconds(kind.wait ?? .zero)
          + " ms would pass the deadline  " + stage
      case .hedgeStarted: return stage
      default: return kind.detail.map { $0 + "  " + stage } ?? stage
      }
    }
  }

  private struct State {
    var marks: [Mark] = []
    var spans: [Span] = []
    /// The clock's reading at the first stage's start: the run's start, time zero.
    var origin: Duration?
    /// Where each running stage's span sits in `spans`, by ``StageRecord/id``.
    var running: [UInt64: Int] = [:]
    /// Where each stage cancelled by its run sits, until it calls back (if it ever does).
    var cancelled: [UInt64: Int] = [:]
  }

  private let state = Locked(State())
  /// The time since the timeline was made, on its clock.
  private let sinceCreation: @Sendable () -> Duration

  /// Creates an empty timeline that reads `clock`.
  ///
  /// The default, `ContinuousClock`, measures real time. Pass the `TestClock` a test drives
  /// and the chart is exact and the same on every run:
  ///
  /// ```swift
  /// let clock = TestClock()
  /// let timeline = Timeline(clock: clock)
  /// let wait = AsyncFunc<Int, Int>(name: "wait") { x, complete in
  ///   _ = clock.scheduleTimer(at: clock.now + .milliseconds(30)) { complete(.success(x)) }
  /// }
  /// (wait +> wait).run(1, observer: timeline) { print($0) }
  /// clock.advance(by: .seconds(1))
  /// print(timeline.spans.map(\.startedAt), timeline.spans.map(\.elapsed))
  /// // prints success(1)
  /// // prints [0.0 seconds, 0.03 seconds] [Optional(0.03 seconds), Optional(0.03 seconds)]
  /// ```
  ///
  /// - Parameter clock: The clock every start and end is read from.
  public init<C: Clock>(clock: C = ContinuousClock()) where C.Duration == Duration {
    let created = clock.now
    sinceCreation = { created.duration(to: clock.now) }
  }

  /// A timeline of spans recorded elsewhere, to render them.
  init(spans: [Span]) {
    sinceCreation = { .zero }
    state.withLock { $0.spans = spans }
  }

  /// Every span recorded so far, in the order the stages started.
  public var spans: [Span] { state.withLock { $0.spans } }

  /// Every event recorded so far other than a stage's start or end (retries, hedges, a
  /// breaker's changes, kinds added since), in the order they happened.
  public var marks: [Mark] { state.withLock { $0.marks } }

  /// Records an event: a stage's start or end in its span, anything else as a mark.
  ///
  /// Called by the run, on the thread where the event happens. An event of a kind the
  /// timeline does not know becomes a mark drawn by the kind's name, with the event's values.
  public func observe(_ event: RunEvent) {
    switch event.values {
    case .started(let stage): recordStart(stage)
    case .ended(let stage, let outcome): recordEnd(stage, outcome: outcome)
    case .cancelled(let stage, let cause): recordCancellation(stage, cause: cause)
    case .calledBackLate(let stage, _): recordLateCall(stage)
    case .retryWillWait(let attempt, let wait, _):
      mark(event.subject, .retry(attempt: attempt, wait: wait))
    case .retryGaveUp(let attempt, let wait, _):
      mark(event.subject, .retryGaveUp(attempt: attempt, wait: wait))
    case .hedge(let hedge): mark(event.subject, .hedge(hedge))
    default:
      let details = event.details
      mark(event.subject, Mark.Kind(event.kind, detail: details.isEmpty ? nil : details))
    }
  }

  /// Records a retry about to wait.
  @available(*, deprecated, message: "send the event: observe(.retryWillWait(...))")
  public func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error) {
    observe(.retryWillWait(stage, attempt: attempt, wait: wait, error: error))
  }

  /// Records a retry given up because its wait would have passed the run's deadline.
  @available(*, deprecated, message: "send the event: observe(.retryGaveUpAtDeadline(...))")
  public func retryGaveUpAtDeadline(
    _ stage: String, attempt: Int, wait: Duration, error: any Error
  ) {
    observe(.retryGaveUpAtDeadline(stage, attempt: attempt, wait: wait, error: error))
  }

  /// Records a stage its run cancelled, and why.
  @available(*, deprecated, message: "send the event: observe(.stageCancelled(_:cause:))")
  public func stageCancelled(_ stage: StageRecord, cause: any Error) {
    observe(.stageCancelled(stage, cause: cause))
  }

  /// Records a hedge's start.
  @available(*, deprecated, message: "send the event: observe(.hedgeStarted(_:hedge:))")
  public func hedgeStarted(_ stage: String, hedge: Int) {
    observe(.hedgeStarted(stage, hedge: hedge))
  }

  /// Records a stage's start.
  @available(*, deprecated, message: "send the event: observe(.stageStarted(_:))")
  public func stageStarted(_ stage: StageRecord) {
    observe(.stageStarted(stage))
  }

  /// Records a stage's end.
  @available(*, deprecated, message: "send the event: observe(.stageEnded(_:outcome:))")
  public func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {
    observe(.stageEnded(stage, outcome: outcome))
  }

  /// Records that a stage its run had cancelled called back anyway, and was ignored.
  @available(
    *, deprecated,
    message: "send the event: observe(.stageCalledBackAfterCancellation(_:outcome:))"
  )
  public func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome) {
    observe(.stageCalledBackAfterCancellation(stage, outcome: outcome))
  }

  /// A cancellation's cause in a few words; `nil` for a plain `cancel()`.
  static func describe(cause: any Error) -> String? {
    switch cause {
    case is CancellationError: nil
    case let timeout as TimeoutError: "timeout after \(timeout.duration)"
    case is SupersededError: "superseded by a newer run"
    case is LostRaceError: "another attempt answered first"
    default: "\(cause)"
    }
  }

  private func mark(_ stage: String, _ kind: Mark.Kind) {
    state.withLock { state in
      // Read under the lock, as a span's start is, so the marks stay in order.
      let now = sinceCreation()
      state.marks.append(Mark(stage: stage, kind: kind, time: now - (state.origin ?? now)))
    }
  }

  private func recordStart(_ stage: StageRecord) {
    let executor = CurrentExecutor.name
    state.withLock { state in
      // The clock is read under the lock, so the spans stay in order of their starts.
      let now = sinceCreation()
      let origin = state.origin ?? now
      state.origin = origin
      state.running[stage.id] = state.spans.count
      state.spans.append(Span(name: stage.name, startedAt: now - origin, startedOn: executor))
    }
  }

  private func recordEnd(_ stage: StageRecord, outcome: StageOutcome) {
    let now = sinceCreation()
    let executor = CurrentExecutor.name
    state.withLock { state in
      guard let index = state.running.removeValue(forKey: stage.id) else { return }
      state.spans[index].endedAt = now - (state.origin ?? now)
      state.spans[index].outcome = outcome
      state.spans[index].endedOn = executor
      if outcome == .cancelled { state.cancelled[stage.id] = index }
    }
  }

  private func recordCancellation(_ stage: StageRecord, cause: any Error) {
    recordEnd(stage, outcome: .cancelled)
    guard let text = Self.describe(cause: cause) else { return }
    state.withLock { state in
      guard let index = state.cancelled[stage.id] else { return }
      state.spans[index].cancellationCause = text
    }
  }

  private func recordLateCall(_ stage: StageRecord) {
    let now = sinceCreation()
    state.withLock { state in
      guard let index = state.cancelled.removeValue(forKey: stage.id) else { return }
      state.spans[index].ignoredCallbackAt = now - (state.origin ?? now)
    }
  }

  /// The Gantt chart of ``renderGantt(width:)`` at its default width.
  public var description: String { renderGantt() }

  // MARK: Rendering

  /// Draws the timeline as a text Gantt chart: one row per stage, time running left to right.
  ///
  /// Stages composed with `+>` show as steps (each bar starts where the one before ended);
  /// stages composed with `<>` show as bars that overlap. Each row ends with the duration
  /// and where the stage started and, when different, completed. A stage that succeeded is
  /// drawn with `█`, a failed one with `▓`, a cancelled one with `▒` (ending when its run
  /// cancelled it), one still running with `░`; `×` marks the moment a cancelled stage called
  /// back anyway, a call the run ignored. After the stages, one row per other event marks
  /// its moment: `↻` a retry about to wait (the row names the failed attempt, then the wait
  /// and the retry), `⑂` a hedge starting (then the hedged function), `•` any other kind,
  /// the row named by the kind's name (then the event's values and whom it concerns); a last
  /// line, the legend, then says what each of those marks means.
  ///
  /// ```swift
  /// print(timeline.renderGantt(width: 24))
  /// // prints         0 ms             40.6 ms
  /// // prints fetch  |████████████            |   20.2 ms  network
  /// // prints decode |            ████████████|   20.3 ms  network
  /// ```
  ///
  /// - Parameter width: The number of columns the time axis spans.
  /// - Returns: The chart, one line per stage after a header line, then the rows of the
  ///   other events and their legend, if any; without a trailing newline.
  /// - Complexity: O(*n* × `width`) for *n* spans.
  public func renderGantt(width: Int = 48) -> String {
    let (spans, marks) = state.withLock { ($0.spans, $0.marks) }
    guard !spans.isEmpty else { return "(no stages ran)" }
    let width = max(width, 1)
    let scale = Scale(spans)
    let nameWidth = (spans.map(\.name.count) + marks.map(\.label.count)).max()!
    let end = Scale.milliseconds(scale.total) + " ms"
    let axis = "0 ms".padding(to: max(width - end.count, 5)) + end
    var lines = [String(repeating: " ", count: nameWidth + 2) + axis]
    for span in spans {
      let from = min(scale.column(span.startedAt, width), width - 1)
      let to = min(max(scale.column(span.endedAt ?? scale.last, width), from + 1), width)
      let fill: Character =
        switch span.outcome {
        case nil: "░"
        case .failed: "▓"
        case .cancelled: "▒"
        case .succeeded: "█"
        }
      var bar = Array(
        String(repeating: " ", count: from) + String(repeating: fill, count: to - from)
          + String(repeating: " ", count: width - to))
      if let ignored = span.ignoredCallbackAt {
        bar[min(max(scale.column(ignored, width), to), width - 1)] = "×"
      }
      let duration = span.elapsed.map { Scale.milliseconds($0) + " ms" } ?? "running"
      var place = span.startedOn
      if let endedOn = span.endedOn, endedOn != span.startedOn { place += " → " + endedOn }
      if let cause = span.cancellationCause { place += "  cancelled: " + cause }
      lines.append(
        span.name.padding(to: nameWidth) + " |" + String(bar) + "| "
          + duration.leftPadding(to: 9) + "  " + place)
    }
    for mark in marks {
      var bar = Array(String(repeating: " ", count: width))
      let column = mark.time < scale.first ? 0 : min(scale.column(mark.time, width), width - 1)
      bar[column] = mark.kind.glyph
      lines.append(mark.label.padding(to: nameWidth) + " |" + String(bar) + "| " + mark.note)
    }
    if !marks.isEmpty { lines.append(Self.legend(of: marks)) }
    return lines.joined(separator: "\n")
  }

  /// What the marks drawn mean, each glyph drawn named once: retries, hedges, retries given
  /// up, then any other kind.
  private static func legend(of marks: [Mark]) -> String {
    let drawn = Set(marks.map(\.kind.glyph))
    let entries = [
      Mark.Kind.retry(attempt: 0, wait: .zero), .hedge(0), .retryGaveUp(attempt: 0, wait: .zero),
      Mark.Kind(RunEvent.Kind("other")),
    ]
    .filter { drawn.contains($0.glyph) }.map(\.legend)
    return "legend: " + entries.joined(separator: ", ")
  }

  /// Writes the timeline as a Mermaid `gantt` diagram, for Markdown that renders Mermaid.
  ///
  /// Times are milliseconds from the first start; failed stages are marked `crit`, cancelled
  /// ones `done`, stages still running `active`. Retries, hedges and other events follow as
  /// milestones named by their kind, in a section of their own.
  ///
  /// ```swift
  /// print(timeline.renderMermaid(title: "processImageData"))
  /// // prints gantt
  /// // prints   title processImageData
  /// // prints   dateFormat x
  /// // prints   axisFormat %L ms
  /// // prints   fetch : 0, 20
  /// // prints   …
  /// ```
  ///
  /// - Parameter title: The diagram's title, or `nil` for none.
  /// - Returns: The diagram's source.
  public func renderMermaid(title: String? = nil) -> String {
    let (spans, marks) = state.withLock { ($0.spans, $0.marks) }
    let scale = Scale(spans)
    var lines = ["gantt"]
    if let title { lines.append("  title " + Timeline.mermaidSafe(title)) }
    lines += ["  dateFormat x", "  axisFormat %L ms"]
    for span in spans {
      let start = Scale.wholeMilliseconds(span.startedAt - scale.first)
      let end = Scale.wholeMilliseconds(
        max((span.endedAt ?? scale.last) - scale.first, .milliseconds(1)))
      let tag =
        span.endedAt == nil
        ? "active, " : span.isFailed ? "crit, " : span.isCancelled ? "done, " : ""
      lines.append("  \(Timeline.mermaidSafe(span.name)) : \(tag)\(start), \(max(end, start + 1))")
    }
    if !marks.isEmpty {
      let others = marks.contains { $0.kind.glyph == "•" }
      lines.append("  section retries and hedges" + (others ? " and other events" : ""))
    }
    for mark in marks {
      let time = Scale.wholeMilliseconds(max(mark.time - scale.first, .zero))
      lines.append("  \(Timeline.mermaidSafe(mark.label)) : milestone, \(time), \(time)")
    }
    return lines.joined(separator: "\n")
  }

  /// Draws the timeline as a standalone SVG image: one labelled bar per stage.
  ///
  /// Failed stages are red, stages still running grey. Retries, hedges and other events
  /// follow, one row each, named by its kind, with its mark at its moment, and the legend
  /// under them.
  ///
  /// ```swift
  /// try timeline.renderSVG().write(toFile: "timeline.svg", atomically: true, encoding: .utf8)
  /// ```
  ///
  /// - Parameter width: The width of the time axis, in pixels.
  /// - Returns: The SVG document.
  public func renderSVG(width: Int = 480) -> String {
    let (spans, marks) = state.withLock { ($0.spans, $0.marks) }
    let scale = Scale(spans)
    let labelWidth = 8 * ((spans.map(\.name.count) + marks.map(\.label.count)).max() ?? 0) + 16
    let rowHeight = 22
    let height = rowHeight * (spans.count + marks.count + (marks.isEmpty ? 1 : 2))
    var svg = [
      #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(labelWidth + width + 80)" "#
        + #"height="\#(height)" font-family="monospace" font-size="12">"#
    ]
    for (row, span) in spans.enumerated() {
      let y = row * rowHeight + 4
      let x = labelWidth + scale.column(span.startedAt, width)
      let right = labelWidth + scale.column(span.endedAt ?? scale.last, width)
      let color =
        span.endedAt == nil
        ? "#9e9e9e" : span.isFailed ? "#d32f2f" : span.isCancelled ? "#f9a825" : "#1976d2"
      let duration = span.elapsed.map { Scale.milliseconds($0) + " ms" } ?? "running"
      svg.append(
        #"  <text x="4" y="\#(y + 13)">\#(Timeline.xmlEscaped(span.name))</text>"#)
      svg.append(
        #"  <rect x="\#(x)" y="\#(y)" width="\#(max(right - x, 2))" height="16" "#
          + #"fill="\#(color)"><title>\#(Timeline.xmlEscaped(span.startedOn))</title></rect>"#)
      svg.append(#"  <text x="\#(max(right, x + 2) + 4)" y="\#(y + 13)">\#(duration)</text>"#)
    }
    for (row, mark) in marks.enumerated() {
      let y = (spans.count + row) * rowHeight + 4
      let x = labelWidth + (mark.time < scale.first ? 0 : scale.column(mark.time, width))
      let glyph = mark.kind.glyph
      svg.append(#"  <text x="4" y="\#(y + 13)">\#(Timeline.xmlEscaped(mark.label))</text>"#)
      svg.append(
        #"  <text x="\#(x)" y="\#(y + 13)"><title>\#(Timeline.xmlEscaped(mark.stage))</title>"#
          + #"\#(glyph)</text>"#)
    }
    if !marks.isEmpty {
      let y = (spans.count + marks.count) * rowHeight + 4
      svg.append(#"  <text x="4" y="\#(y + 13)">\#(Self.legend(of: marks))</text>"#)
    }
    let axis = "0 – \(Scale.milliseconds(scale.total)) ms"
    svg.append(#"  <text x="\#(labelWidth)" y="\#(height - 6)">\#(axis)</text>"#)
    svg.append("</svg>")
    return svg.joined(separator: "\n")
  }

  private static func mermaidSafe(_ text: String) -> String {
    String(text.map { ":;#".contains($0) ? " " : $0 })
  }

  private static func xmlEscaped(_ text: String) -> String {
    text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
  }
}

/// Maps times from the run's start onto columns, from the first start to the last event.
private struct Scale {
  let first: Duration
  let last: Duration
  var total: Duration { last - first }

  init(_ spans: [Timeline.Span]) {
    first = spans.map(\.startedAt).min() ?? .zero
    last =
      spans.map { max($0.endedAt ?? $0.startedAt, $0.ignoredCallbackAt ?? .zero) }.max()
      ?? first
  }

  /// Rounds down, so a stage that starts when another ends never starts left of its end.
  func column(_ time: Duration, _ width: Int) -> Int {
    let total = Scale.nanoseconds(self.total)
    guard total > 0 else { return 0 }
    return Int(Scale.nanoseconds(time - first) * UInt64(width) / total)
  }

  /// Whole nanoseconds of a duration that is not negative.
  static func nanoseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    return UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
  }

  static func wholeMilliseconds(_ duration: Duration) -> UInt64 {
    nanoseconds(duration) / 1_000_000
  }

  static func milliseconds(_ duration: Duration) -> String {
    let tenths = (nanoseconds(duration) + 50_000) / 100_000
    return "\(tenths / 10).\(tenths % 10)"
  }
}

extension String {
  fileprivate func padding(to length: Int) -> String {
    count >= length ? self : self + String(repeating: " ", count: length - count)
  }

  fileprivate func leftPadding(to length: Int) -> String {
    count >= length ? self : String(repeating: " ", count: length - count) + self
  }
}

extension AsyncFunc {
  /// Runs the function with a fresh ``Timeline`` watching, and returns both the result and
  /// the timeline.
  ///
  /// Cancelling the awaiting task cancels the run, as with `try await f(input)`; the result
  /// is then `CancellationError`.
  ///
  /// ```swift
  /// let (result, timeline) = await pipeline.traced(7)
  /// print(result)
  /// print(timeline.renderGantt())
  /// ```
  ///
  /// - Parameter input: The input of the first stage.
  /// - Returns: The run's result and the timeline of its stages.
  public func traced(_ input: Input) async -> (
    result: Result<Output, any Error>, timeline: Timeline
  ) {
    let timeline = Timeline()
    let token = CancellationToken(observedBy: timeline)
    let result = await withTaskCancellationHandler {
      await withUnsafeContinuation { continuation in
        // A run completes exactly once, which is all an unsafe continuation asks.
        run(input, token: token) { continuation.resume(returning: $0) }
      }
    } onCancel: {
      token.cancel()
    }
    return (result, timeline)
  }
}
