import Foundation
import Synchronization

/// SplitMix64: a small, fast, seedable random number generator, so a property run can be
/// replayed exactly.
///
/// ```swift
/// var first = SplitMix64(seed: 7)
/// var second = SplitMix64(seed: 7)
/// print(Int.random(in: 0..<100, using: &first) == Int.random(in: 0..<100, using: &second))
/// // prints true
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
  private var state: UInt64

  /// A generator whose whole sequence is decided by `seed`.
  public init(seed: UInt64) { state = seed }

  /// The next 64 random bits.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// The environment variable that replays a property run: `AC_SEED=1234 swift test`.
///
/// Every property of a test process starts from one seed: this variable's value when it is
/// set, otherwise one drawn when the first property starts. The seed is printed once per
/// process, and again with any property that fails, so a failure can always be replayed.
public let propertySeedVariable = "AC_SEED"

/// The process's seed: ``propertySeedVariable`` when set, otherwise drawn once. A global's
/// initializer runs once, under the runtime's own lock.
private let processSeed: UInt64 =
  ProcessInfo.processInfo.environment[propertySeedVariable].flatMap { UInt64($0) }
  ?? UInt64.random(in: 1...UInt64.max)

/// Whether the seed line has been printed in this process.
private let seedAnnounced = Atomic<Bool>(false)

/// The seed of a property run: the same for every property of the process (see
/// ``propertySeedVariable``). The first call prints it; later ones print nothing, so a green
/// run names its seed once rather than once per property.
///
/// - Returns: The seed to start the generator with.
package func propertySeed() -> UInt64 {
  if !seedAnnounced.exchange(true, ordering: .relaxed) {
    print(
      "property checks: seed \(processSeed) (replay with \(propertySeedVariable)=\(processSeed))"
    )
  }
  return processSeed
}

/// Checks `property` on `count` cases drawn from one seeded generator.
///
/// Every property of a test process draws from one seed (see ``propertySeedVariable``),
/// printed once per process, not once per property. `check` draws its case from the
/// generator, prints the case when it fails (a counterexample is only useful if you see it),
/// and returns whether the property held. On the first failing case `forAll` prints the
/// property, the case number and the seed to replay, and throws them as a
/// ``PropertyFailure``.
///
/// ```swift
/// try await forAll("reversing twice is identity", count: 50) { random, _ in
///   let xs = (0..<Int.random(in: 0...9, using: &random)).map { _ in
///     Int.random(in: -9...9, using: &random)
///   }
///   return Array(xs.reversed().reversed()) == xs
/// }
/// // The first property of a process prints its seed once, such as
/// // "property checks: seed 42 (replay with AC_SEED=42)"; a failing one prints it again.
/// ```
///
/// - Parameters:
///   - property: What is being checked, in words.
///   - count: How many cases to draw.
///   - check: Draws one case from the generator and checks it; the `Int` is the case number.
/// - Throws: ``PropertyFailure`` on the first case that returns `false`, or what `check` threw.
public func forAll(
  _ property: String, count: Int = 100,
  _ check: (inout SplitMix64, Int) async throws -> Bool
) async throws {
  let seed = propertySeed()
  var generator = SplitMix64(seed: seed)
  for index in 0..<count {
    guard try await check(&generator, index) else {
      let failure = PropertyFailure(property: property, seed: seed, caseIndex: index)
      print(failure)
      throw failure
    }
  }
}

/// A property that did not hold: which one, on which case, and how to replay it.
///
/// ```swift
/// do {
///   try await forAll("every number is small", count: 10) { random, _ in
///     Int.random(in: 0..<100, using: &random) < 0
///   }
/// } catch let failure as PropertyFailure {
///   print(failure.property, failure.caseIndex)
/// }
/// // prints …
/// // prints every number is small 0
/// ```
public struct PropertyFailure: Error, CustomStringConvertible {
  /// The property's name.
  public let property: String
  /// The seed the run started from.
  public let seed: UInt64
  /// The number of the failing case, from 0.
  public let caseIndex: Int

  /// Says what failed and how to replay it.
  public var description: String {
    "property '\(property)' failed at case \(caseIndex); replay with \(propertySeedVariable)=\(seed)"
  }
}
