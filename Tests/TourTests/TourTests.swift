import AsyncCombinators
import Synchronization
import Testing
import TourScenarios

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct TourTests {
  @Test(arguments: Tour.scenarios.map(\.title))
  func scenario_timelines_show_what_its_operators_promise(_ title: String) async {
    let scenario = Tour.scenarios.first { $0.title == title }!
    let runs = await scenario.play()
    #expect(!runs.isEmpty)
    for run in runs {
      #expect(!run.expectations.isEmpty, "\(run.label) checks nothing")
      #expect(run.unmetExpectations == [], "\(run.label)\n\(run.timeline.renderGantt())")
    }
  }

  @Test func process_image_data_describes_its_structure_and_result() async {
    let runs = await Tour.processImageData.play()
    #expect(
      runs[0].structure
        == "(load dataprofile.txt <> load imagedata.dat) +> decodeImage +> dewarpAndCleanupImage")
    #expect(runs[0].result == "success(Image(decoded dataprofile.txt + imagedata.dat, dewarped))")
  }

  @Test func batch_upload_describes_its_structure_and_tolerates_two_failures_of_six() async {
    let runs = await Tour.batchUpload.play()
    #expect(
      runs[0].structure
        == "(export.limit(1) +> upload.retry(1))"
        + ".concurrentMap(limit: 4, acceptableFailure: .ratio(0.5))")
    #expect(runs[0].result == "success([good-1, flaky-2, good-3, good-5])")
    // Six exports; an upload for each of the five exported, plus one retry each for
    // flaky-2 and bad-6.
    #expect(runs[0].timeline.spans.filter { $0.name == "export" }.count == 6)
    #expect(runs[0].timeline.spans.filter { $0.name == "upload" }.count == 7)
  }

  @Test func promise_demos_and_ordered_submission_print_their_results() async {
    let promises = await Tour.promiseDemos.play()
    #expect(promises.map(\.result) == ["success(())", "failure(SecondJobFailed)"])
    #expect(
      promises.map(\.structure)
        == Array(repeating: "(firstly +> then +> then).always { … }.error { … }", count: 2))
    #expect(promises.allSatisfy { $0.unmetExpectations.isEmpty })
    let ordered = await Tour.orderedSubmission.play()
    #expect(
      ordered.map(\.result) == [
        "A = 9, B failed: inputOutOfRange, C = 25", "A = 9, B: CancellationError(), C = 25",
      ])
  }

  @Test func large_batch_tolerates_the_rejected_files_and_summarises_every_outcome() async {
    let runs = await Tour.largeBatch.play()
    #expect(
      runs[0].structure
        == "upload.retry(1).concurrentMapResults(limit: 8, acceptableFailure: .ratio(0.1))")
    #expect(runs[0].result == "success(2400 outcomes)")
    #expect(runs[0].log.first == "2400 files: 2317 uploaded, 83 failed (3.4%, within .ratio(0.1))")
  }

  @Test func large_batch_draws_live_progress_when_the_tour_asks_for_it() async {
    let written = Written()
    let bar = Mutex<ProgressBar?>(nil)
    let makeBar: @Sendable (String) -> ProgressBar = { label in
      let made = ProgressBar(label: label, isTerminal: false) { written.append($0) }
      bar.withLock { $0 = made }
      return made
    }
    _ = await Tour.$liveProgress.withValue(makeBar) {
      await Tour.largeBatch.play()
    }
    #expect(bar.withLock { $0 != nil })
    #expect(written.text.hasSuffix("2400/2400  83 failed  0 in flight\n"))
  }

  @Test func progress_bar_redraws_one_line_on_a_terminal_and_writes_quarters_elsewhere() {
    func draw(isTerminal: Bool) -> String {
      let written = Written()
      let bar = ProgressBar(label: "files", isTerminal: isTerminal, width: 10) {
        written.append($0)
      }
      for completed in 1...200 {
        bar.update(
          BatchProgress(
            completed: completed, failed: completed / 50, inFlight: completed == 200 ? 0 : 3,
            total: 200))
      }
      return written.text
    }
    let terminal = draw(isTerminal: true)
    #expect(terminal.filter { $0 == "\n" }.count == 1)
    #expect(terminal.hasSuffix("\rfiles [##########] 200/200  4 failed  0 in flight\n"))
    #expect(terminal.filter { $0 == "\r" }.count == 101)  // the start, then each whole percent
    let plain = draw(isTerminal: false)
    #expect(!plain.contains("\r"))
    #expect(
      plain.split(separator: "\n") == [
        "files [..........] 1/200  0 failed  3 in flight",
        "files [##........] 50/200  1 failed  3 in flight",
        "files [#####.....] 100/200  2 failed  3 in flight",
        "files [#######...] 150/200  3 failed  3 in flight",
        "files [##########] 200/200  4 failed  0 in flight",
      ])
  }

  /// Text a progress bar wrote, in order.
  final class Written: Sendable {
    private let parts = Mutex<[String]>([])
    func append(_ text: String) { parts.withLock { $0.append(text) } }
    var text: String { parts.withLock { $0.joined() } }
  }

  // MARK: Expectations

  /// A run of `name` from `start` to `end`, in milliseconds.
  static func span(_ name: String, _ start: Int, _ end: Int) -> Timeline.Span {
    Timeline.Span(
      name: name, startedAt: .milliseconds(start), endedAt: .milliseconds(end),
      outcome: .succeeded, startedOn: "test", endedOn: "test")
  }

  static func unmet(
    _ expectation: TourScenarios.Expectation, _ spans: [Timeline.Span], log: [String] = []
  ) -> [String] {
    Traced(
      label: "test", structure: "", result: "", timeline: Timeline(spans: spans), log: log,
      expectations: [expectation]
    ).unmetExpectations
  }

  @Test func overlap_of_one_stage_with_itself_needs_two_runs_that_overlap() {
    let upload = Self.span("upload", 0, 20)
    #expect(Self.unmet(.overlap("upload", "upload"), [upload]).count == 1)
    #expect(
      Self.unmet(.overlap("upload", "upload"), [upload, Self.span("upload", 20, 40)]).count == 1)
    #expect(Self.unmet(.overlap("upload", "upload"), [upload, Self.span("upload", 5, 25)]) == [])
    #expect(Self.unmet(.overlap("upload", "export"), [upload]).count == 1)
  }

  @Test func one_at_a_time_fails_when_any_two_runs_overlap_or_only_one_ran() {
    let steps = [Self.span("export", 0, 5), Self.span("upload", 3, 9), Self.span("export", 5, 9)]
    #expect(Self.unmet(.oneAtATime("export"), steps) == [])
    let overlapping = steps + [Self.span("export", 8, 12)]
    #expect(Self.unmet(.oneAtATime("export"), overlapping).count == 1)
    #expect(Self.unmet(.oneAtATime("export"), [Self.span("export", 0, 5)]).count == 1)
  }

  @Test func logged_needs_exactly_the_printed_lines_in_order() {
    #expect(Self.unmet(.logged(["a", "b"]), [], log: ["a", "b"]) == [])
    #expect(Self.unmet(.logged(["a", "b"]), [], log: ["b", "a"]).count == 1)
    #expect(Self.unmet(.logged(["a"]), [], log: ["a", "b"]).count == 1)
  }
}
