import Testing
import TourScenarios

@Suite struct CustomersSharingAServiceTests {
  @Test func each_customer_runs_one_at_a_time_beside_the_other() async {
    let runs = await Tour.customersSharingAService.play()
    #expect(runs.count == 1)
    #expect(runs[0].unmetExpectations.isEmpty)
    #expect(
      runs[0].result
        == #"success((["ann: shoes", "ann: hats", "ann: socks"], ["bob: shoes", "bob: hats", "bob: socks"]))"#
    )
    #expect(runs[0].timeline.spans.filter { $0.name == "ann" }.count == 3)
    #expect(runs[0].timeline.spans.filter { $0.name == "bob" }.count == 3)
  }
}
