// `swift run Tour`: plays each scenario, printing every composition's structure, its result
// and its timeline. The scenarios live in the TourScenarios target, where tests run them too.
import Dispatch
import TourScenarios

let start = DispatchTime.now().uptimeNanoseconds
for (index, scenario) in Tour.scenarios.enumerated() {
  print(await scenario.report(number: index + 1), terminator: "\n\n")
}
let elapsed = (DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
print("Tour finished in \(elapsed) ms. Next: swift test, then open Playgrounds/.")
