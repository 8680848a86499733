import AsyncCombinators
import Testing
import TourScenarios

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

  @Test func the_whole_tour_plays_well_under_ten_seconds() async {
    let clock = ContinuousClock()
    let elapsed = await clock.measure {
      for (index, scenario) in Tour.scenarios.enumerated() {
        _ = await scenario.report(number: index + 1)
      }
    }
    #expect(elapsed < .seconds(5))
  }
}
