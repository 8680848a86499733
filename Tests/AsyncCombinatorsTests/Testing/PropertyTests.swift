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
      guard propertySeed() == 12345 else { exit(1) }
    }
  }

  @Test func a_green_run_prints_its_seed_once_and_a_failure_prints_it_again() async throws {
    let result = try #require(
      await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
        setenv(propertySeedVariable, "777", 1)
        for name in ["first", "second", "third"] {
          try? await forAll(name, count: 3) { _, _ in true }
        }
        _ = await ContractChecker(runs: 4, threads: 1).check(.sync(name: "id") { (x: Int) in x }) {
          $0
        }
        try? await forAll("fails", count: 3) { _, index in index < 1 }
      })
    let lines = String(decoding: result.standardOutputContent, as: UTF8.self)
      .split(separator: "\n").filter { $0.contains("AC_SEED=777") }
    #expect(
      lines == [
        "property checks: seed 777 (replay with AC_SEED=777)",
        "property 'fails' failed at case 1; replay with AC_SEED=777",
      ])
  }
}
