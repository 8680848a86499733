import AsyncCombinatorsKernel

/// How `retry` spreads its waits at random, so that runs that failed together do not all try
/// again at the same instant.
///
/// A jittered wait is drawn afresh for every wait of every run, from the system's random
/// generator. ``seeded(_:)`` fixes the draws instead, for tests: the waits of a retry with a
/// seeded jitter take the numbers of one generator started from the seed, in the order they
/// are drawn, so the same runs on a `TestClock` wait the same in every test run.
///
/// ```swift
/// let fetch = AsyncFunc<String, String>.sync(name: "fetch") { $0 }
/// print(fetch.retry(3, delay: .milliseconds(100), jitter: .full))
/// print(Jitter.equal.seeded(7))
/// // prints fetch.retry(3, delay: 0.1 seconds, jitter: .full)
/// // prints .equal.seeded(7)
/// ```
public struct Jitter: Sendable, Hashable, CustomStringConvertible {
  enum Kind: Sendable, Hashable {
    case none, full, equal, decorrelated
  }

  let kind: Kind
  /// Where the draws come from: the system generator when `nil`.
  let seed: UInt64?

  /// The computed wait as is.
  public static let none = Jitter(kind: .none, seed: nil)
  /// A wait drawn uniformly in `[0, wait]`: spreads runs the most.
  public static let full = Jitter(kind: .full, seed: nil)
  /// Half the wait, plus a draw uniform in `[0, wait / 2]`: never less than half the wait.
  public static let equal = Jitter(kind: .equal, seed: nil)
  /// A wait drawn uniformly in `[delay, 3 × previous wait]` (the first in
  /// `[delay, 3 × delay]`), capped by `maxDelay`; `backoff` plays no part.
  public static let decorrelated = Jitter(kind: .decorrelated, seed: nil)

  /// The same jitter, drawing from a generator started from `seed`, one for each `retry` it
  /// is given to and shared by that retry's runs: the waits are replayable, for tests. Leave
  /// a jitter unseeded in production, where the system generator is the better source.
  ///
  /// - Parameter seed: The generator's starting state.
  /// - Returns: This jitter with fixed draws.
  public func seeded(_ seed: UInt64) -> Jitter { Jitter(kind: kind, seed: seed) }

  /// `.full`, `.none`, …, as written in code; `.full.seeded(7)` when seeded.
  public var description: String {
    let name =
      switch kind {
      case .none: ".none"
      case .full: ".full"
      case .equal: ".equal"
      case .decorrelated: ".decorrelated"
      }
    return seed.map { "\(name).seeded(\($0))" } ?? name
  }

}

/// Where the waits of one `retry` are drawn from, shared by its runs.
final class JitterDraws: Sendable {
  private let generator: Locked<JitterGenerator>

  init(seed: UInt64?) { generator = Locked(JitterGenerator(seed: seed)) }

  /// A draw uniform in `[0, 1]`.
  func unit() -> Double { generator.withLock { Double.random(in: 0...1, using: &$0) } }
}

/// The system generator, or SplitMix64 from a seed.
struct JitterGenerator: RandomNumberGenerator {
  private var state: UInt64?

  init(seed: UInt64?) { state = seed }

  mutating func next() -> UInt64 {
    guard var z = state else {
      var system = SystemRandomNumberGenerator()
      return system.next()
    }
    z &+= 0x9E37_79B9_7F4A_7C15
    state = z
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

}
