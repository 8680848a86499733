import Testing
import TourScenarios

@testable import AsyncCombinators

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
    let ordered = await Tour.orderedSubmission.play()
    #expect(
      ordered.map(\.result) == [
        "A = 9, B failed: inputOutOfRange, C = 25", "A = 9, B: CancellationError(), C = 25",
      ])
  }

  // MARK: Expectations

  /// A run of `name` from `start` to `end`, in milliseconds.
  static func span(_ name: String, _ start: UInt64, _ end: UInt64) -> Timeline.Span {
    Timeline.Span(
      name: name, start: start * 1_000_000, end: end * 1_000_000, outcome: .succeeded,
      startedOn: "test", endedOn: "test")
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
