import AsyncCombinators
import Dispatch
import Synchronization

/// One stop of the Tour: a short story, and the traced runs that tell it.
public struct Scenario: Sendable {
  /// The heading the Tour prints.
  public var title: String
  /// What to look for, in a sentence or two.
  public var story: String
  /// Runs the scenario's compositions and returns what each did.
  public var play: @Sendable () async -> [Traced]

  /// Creates a scenario.
  public init(title: String, story: String, play: @escaping @Sendable () async -> [Traced]) {
    self.title = title
    self.story = story
    self.play = play
  }

  /// The scenario's heading and story, as the Tour prints them before its runs.
  public func heading(number: Int) -> String {
    "━━ \(number). \(title) ━━\n\(story)"
  }

  /// Plays the scenario and writes what happened as the Tour prints it.
  ///
  /// - Parameter includingHeading: `false` when the ``heading(number:)`` was printed before
  ///   playing, so that live output appears under it.
  public func report(number: Int, includingHeading: Bool = true) async -> String {
    var lines = includingHeading ? [heading(number: number)] : []
    for traced in await play() {
      lines += [
        "", "  \(traced.label)", "  structure: \(traced.structure)",
        "  result:    \(traced.result)",
      ]
      for (index, line) in traced.log.enumerated() {
        lines.append((index == 0 ? "  printed:   " : "             ") + line)
      }
      // A run too large to draw records no timeline, rather than draw thousands of rows.
      guard !traced.timeline.spans.isEmpty else { continue }
      lines += traced.timeline.renderGantt(width: 40).split(separator: "\n").map { "    \($0)" }
    }
    return lines.joined(separator: "\n")
  }
}

/// One composition, run once with a ``Timeline`` watching, and what its timeline must show.
public struct Traced: Sendable {
  /// Names the run within its scenario.
  public var label: String
  /// `String(describing:)` of the composition.
  public var structure: String
  /// The result, as printed.
  public var result: String
  /// Each stage's start and end.
  public var timeline: Timeline
  /// What the run's blocks printed, in order; empty when they print nothing.
  public var log: [String]
  /// What the timeline and the log show if the operators did their job.
  public var expectations: [Expectation]

  /// Creates a record of a run made some other way: a scenario that drives its own runs
  /// passes the same ``Timeline`` to each of them as their observer.
  public init(
    label: String, structure: String, result: String, timeline: Timeline, log: [String] = [],
    expectations: [Expectation]
  ) {
    self.label = label
    self.structure = structure
    self.result = result
    self.timeline = timeline
    self.log = log
    self.expectations = expectations
  }

  /// Runs `function` on `input`, starting it on the fake network's queue, and records it,
  /// with what its blocks printed to `log`.
  public static func run<Input, Output>(
    _ label: String, _ function: AsyncFunc<Input, Output>, _ input: Input, log: Log? = nil,
    expecting expectations: [Expectation]
  ) async -> Traced {
    let timeline = Timeline()
    let result = await withCheckedContinuation { continuation in
      // Starting on the queue that delivers every fake response means no response can be
      // handled before all the branches of a `<>` have started.
      FakeNetwork.queue.async {
        function.run(input, observer: timeline) { continuation.resume(returning: $0) }
      }
    }
    let printed: String
    switch result {
    case .success(let value): printed = "success(\(value))"
    case .failure(let error): printed = "failure(\(error))"
    }
    return Traced(
      label: label, structure: String(describing: function), result: printed,
      timeline: timeline, log: log?.lines ?? [], expectations: expectations)
  }

  /// The expectations that the timeline or the log contradicts, described; empty when all
  /// hold.
  public var unmetExpectations: [String] {
    let spans = timeline.spans
    return expectations.compactMap { $0.check(spans, log: log) }
  }
}

/// The lines a scenario's blocks print, kept in order for the Tour to show with their run.
public final class Log: Sendable {
  private let printed = Mutex<[String]>([])

  /// Creates an empty log.
  public init() {}

  /// Appends `line`; safe from any thread.
  public func callAsFunction(_ line: String) {
    printed.withLock { $0.append(line) }
  }

  /// Every line so far, in the order they were printed.
  public var lines: [String] { printed.withLock { $0 } }
}

/// Something a run's timeline, or its log, must show.
public enum Expectation: Sendable {
  /// Two runs of the named stages ran at the same time for a while: the mark of `<>`. Name
  /// one stage twice to say that two of its runs overlapped.
  case overlap(String, String)
  /// Each named stage started only once the one before it had ended: the mark of `+>`.
  case steps([String])
  /// The named stage ran at least twice, and each run started only once the one before it
  /// had ended: the mark of `limit(1)` or a queue.
  case oneAtATime(String)
  /// The run's blocks printed exactly these lines, in this order.
  case logged([String])
  /// The named stage ended with a failure.
  case failed(String)
  /// The named stage ended with `CancellationError`.
  case cancelled(String)
  /// The named stage never started.
  case neverStarted(String)

  /// `nil` when the expectation holds, else what is wrong.
  func check(_ spans: [Timeline.Span], log: [String]) -> String? {
    func span(_ name: String) -> Timeline.Span? { spans.first { $0.name == name } }
    /// Checks that each span ended before the next one started.
    func inSteps(_ found: [Timeline.Span]) -> String? {
      for (before, after) in zip(found, found.dropFirst()) {
        guard let end = before.endedAt, end <= after.startedAt else {
          return "\(after.name) started before \(before.name) ended"
        }
      }
      return nil
    }
    switch self {
    case .overlap(let first, let second):
      let firsts = spans.indices.filter { spans[$0].name == first }
      let seconds = spans.indices.filter { spans[$0].name == second }
      guard !firsts.isEmpty, !seconds.isEmpty else { return "\(self): stage missing" }
      let overlapped = firsts.contains { a in
        seconds.contains { b in a != b && spans[a].overlaps(spans[b]) }
      }
      return overlapped ? nil : "\(first) and \(second) did not overlap"
    case .steps(let names):
      let found = names.compactMap(span)
      guard found.count == names.count else { return "\(self): stage missing" }
      return inSteps(found)
    case .oneAtATime(let name):
      // Spans are in order of their starts, so checking neighbours checks every pair.
      let runs = spans.filter { $0.name == name }
      guard runs.count >= 2 else { return "\(self): \(runs.count) run(s), not two or more" }
      return inSteps(runs)
    case .logged(let lines):
      return log == lines ? nil : "printed \(log), not \(lines)"
    case .failed(let name):
      guard let found = span(name) else { return "\(self): stage missing" }
      return found.isFailed ? nil : "\(name) did not fail"
    case .cancelled(let name):
      guard let found = span(name) else { return "\(self): stage missing" }
      return found.isCancelled ? nil : "\(name) was not cancelled"
    case .neverStarted(let name):
      return span(name) == nil ? nil : "\(name) started"
    }
  }
}
