import Foundation

/// SplitMix64: a small, fast, seedable generator, so every property run can be replayed.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The seed of a property run: `AC_SEED` in the environment replays one, otherwise a fresh
/// seed is drawn. It is printed either way, so a failure names the seed to replay.
func propertySeed(_ property: String) -> UInt64 {
  let seed =
    ProcessInfo.processInfo.environment["AC_SEED"].flatMap { UInt64($0) }
    ?? UInt64.random(in: 1...UInt64.max)
  print("property \(property): seed \(seed) (replay with AC_SEED=\(seed))")
  return seed
}

/// Checks `property` on `count` cases drawn from one seeded generator. On the first failing
/// case it throws an error that names the property, the seed and the case number.
func forAll(
  _ property: String, count: Int = 100,
  _ check: (inout SplitMix64, Int) async throws -> Bool
) async throws {
  let seed = propertySeed(property)
  var generator = SplitMix64(seed: seed)
  for index in 0..<count {
    guard try await check(&generator, index) else {
      throw PropertyFailure(property: property, seed: seed, caseIndex: index)
    }
  }
}

struct PropertyFailure: Error, CustomStringConvertible {
  let property: String
  let seed: UInt64
  let caseIndex: Int
  var description: String {
    "property '\(property)' failed at case \(caseIndex); replay with AC_SEED=\(seed)"
  }
}
