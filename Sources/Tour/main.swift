// `swift run Tour`: plays each scenario, printing every composition's structure, its result
// and its timeline. The scenarios live in the TourScenarios target, where tests run them too.
import Dispatch
import TourScenarios

let start = DispatchTime.now().uptimeNanoseconds
// Scenarios that show live progress draw it on standard output while they play.
let progressBars: @Sendable (String) -> ProgressBar = { ProgressBar.standardOutput(label: $0) }
await Tour.$liveProgress.withValue(progressBars) {
  for (index, scenario) in Tour.scenarios.enumerated() {
    print(scenario.heading(number: index + 1))
    print(await scenario.report(number: index + 1, includingHeading: false), terminator: "\n\n")
  }
}
let elapsed = (DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
print("Tour finished in \(elapsed) ms. Next: swift test, then open Playgrounds/.")
