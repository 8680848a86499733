import AsyncCombinatorsTesting
import Foundation
import Testing

@Suite struct PropertyTests {
  @Test func a_failing_case_throws_naming_the_property_the_case_and_the_seed() async {
    let checked = Recorder<Int>()
    let failure = await #expect(throws: PropertyFailure.self) {
      try await forAll("fails at case 2", count: 5) { _, index in
        checked.record(index)
        return index != 2
      }
    }
    #expect(checked.all == [0, 1, 2])  // the cases after the failing one are not checked
    #expect(failure?.property == "fails at case 2")
    #expect(failure?.caseIndex == 2)
    #expect(failure.map { "\($0)".hasSuffix("replay with AC_SEED=\($0.seed)") } == true)
  }

  @Test func the_seed_variable_replays_a_seed() async {
    await #expect(processExitsWith: .success) {
      setenv(propertySeedVariable, "12345", 1)
      guard propertySeed("replayed") == 12345 else { exit(1) }
    }
  }
}
