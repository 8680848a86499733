import Testing
import TourScenarios

@Suite struct PollingAnExportTests {
  @Test func polling_ends_at_the_done_status_or_with_the_last_status_when_the_schedule_ends()
    async
  {
    let runs = await Tour.pollingAnExport.play()
    #expect(
      runs[0].structure
        == "status.repeating(Schedule.spaced(0.02 seconds).upTo(5.0 seconds))")
    #expect(runs[0].result == "success(done)")
    #expect(runs[0].timeline.spans.filter { $0.name == "status" }.count == 4)
    #expect(
      runs[1].structure
        == "status.repeating(Schedule.fibonacci(0.01 seconds).intersection(Schedule.recurs(4)))")
    #expect(runs[1].result == "success(25%)")
    #expect(runs[1].timeline.spans.filter { $0.name == "status" }.count == 5)
  }
}
