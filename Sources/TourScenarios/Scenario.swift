import AsyncCombinators
import Dispatch

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

  /// Plays the scenario and writes what happened as the Tour prints it.
  public func report(number: Int) async -> String {
    var lines = ["━━ \(number). \(title) ━━", story]
    for traced in await play() {
      lines += [
        "", "  \(traced.label)", "  structure: \(traced.structure)",
        "  result:    \(traced.result)",
      ]
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
  /// What the timeline shows if the operators did their job.
  public var expectations: [Expectation]

  /// Creates a record of a run made some other way: a scenario that drives its own runs
  /// passes the same ``Timeline`` to each of them as their observer.
  public init(
    label: String, structure: String, result: String, timeline: Timeline,
    expectations: [Expectation]
  ) {
    self.label = label
    self.structure = structure
    self.result = result
    self.timeline = timeline
    self.expectations = expectations
  }

  /// Runs `function` on `input`, starting it on the fake network's queue, and records it.
  public static func run<Input, Output>(
    _ label: String, _ function: AsyncFunc<Input, Output>, _ input: Input,
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
      timeline: timeline, expectations: expectations)
  }

  /// The expectations that the timeline contradicts, described; empty when all hold.
  public var unmetExpectations: [String] {
    expectations.compactMap { $0.check(timeline.spans) }
  }
}

/// Something a timeline must show.
public enum Expectation: Sendable {
  /// The named stages ran at the same time for a while: the mark of `<>`.
  case overlap(String, String)
  /// Each named stage started only once the one before it had ended: the mark of `+>`.
  case steps([String])
  /// The named stage ended with a failure.
  case failed(String)
  /// The named stage ended with `CancellationError`.
  case cancelled(String)
  /// The named stage never started.
  case neverStarted(String)

  /// `nil` when the expectation holds, else what is wrong.
  func check(_ spans: [Timeline.Span]) -> String? {
    func span(_ name: String) -> Timeline.Span? { spans.first { $0.name == name } }
    switch self {
    case .overlap(let first, let second):
      guard let a = span(first), let b = span(second) else { return "\(self): stage missing" }
      return a.overlaps(b) ? nil : "\(first) and \(second) did not overlap"
    case .steps(let names):
      let found = names.compactMap(span)
      guard found.count == names.count else { return "\(self): stage missing" }
      for (before, after) in zip(found, found.dropFirst()) {
        guard let end = before.end, end <= after.start else {
          return "\(after.name) started before \(before.name) ended"
        }
      }
      return nil
    case .failed(let name):
      guard let found = span(name) else { return "\(self): stage missing" }
      return found.failed ? nil : "\(name) did not fail"
    case .cancelled(let name):
      guard let found = span(name) else { return "\(self): stage missing" }
      return found.cancelled ? nil : "\(name) was not cancelled"
    case .neverStarted(let name):
      return span(name) == nil ? nil : "\(name) started"
    }
  }
}
