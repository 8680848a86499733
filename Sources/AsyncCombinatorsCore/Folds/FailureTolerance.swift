import AsyncCombinatorsKernel

/// How many elements of a ``AsyncFunc/concurrentMap(limit:acceptableFailure:progress:file:line:)`` may fail
/// before the whole does.
///
/// Failures within the tolerance are dropped from the output; the first one beyond it fails
/// the whole with ``FailureRateExceeded``. A struct with static members rather than an enum,
/// so that "no failures" can be spelled `.zero` without colliding with `Optional.none`.
///
/// ```swift
/// let tolerance = FailureTolerance.ratio(0.2)
/// print(tolerance.allowedFailures(outOf: 12))
/// // prints 2
/// ```
public struct FailureTolerance: Sendable, Hashable, CustomStringConvertible {
  private enum Kind: Hashable {
    case count(Int)
    case ratio(Double)
  }

  private let kind: Kind

  /// No element may fail: the first failure fails the whole.
  public static let zero = FailureTolerance(kind: .count(0))

  /// Every element may fail; the output holds the values of those that succeeded.
  public static let unlimited = FailureTolerance(kind: .count(.max))

  /// At most `count` elements may fail.
  ///
  /// - Precondition: `count` is not negative; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - count: Not negative; `.count(0)` is ``zero``.
  ///   - file: The caller's file, named when `count` is negative.
  ///   - line: The caller's line, named when `count` is negative.
  public static func count(
    _ count: Int, file: StaticString = #fileID, line: UInt = #line
  ) -> FailureTolerance {
    require(
      count >= 0, "FailureTolerance.count(\(count)): the count must not be negative", file: file,
      line: line)
    return FailureTolerance(kind: .count(count))
  }

  /// At most this fraction of the elements may fail: 2 failures of 12 exceed `.ratio(0.1)`
  /// (1.2 allowed, so 1) and are within `.ratio(0.2)` (2.4 allowed, so 2).
  ///
  /// - Precondition: `fraction` is in `0...1`; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - fraction: In `0...1`.
  ///   - file: The caller's file, named when `fraction` is out of range.
  ///   - line: The caller's line, named when `fraction` is out of range.
  public static func ratio(
    _ fraction: Double, file: StaticString = #fileID, line: UInt = #line
  ) -> FailureTolerance {
    require(
      (0...1).contains(fraction), "FailureTolerance.ratio(\(fraction)): the ratio must be in 0...1",
      file: file, line: line)
    return FailureTolerance(kind: .ratio(fraction))
  }

  /// The number of failures tolerated among `count` elements.
  ///
  /// A ratio is rounded down, with a margin for floating-point error, so that
  /// `.ratio(0.3)` of 10 allows 3 although `0.3 * 10` is `3.0000000000000004`, and
  /// `.ratio(0.29)` of 100 allows 29 although `0.29 * 100` is `28.999999999999996`.
  public func allowedFailures(outOf count: Int) -> Int {
    switch kind {
    case .count(let allowed): allowed
    case .ratio(let fraction): Int((fraction * Double(count) + 1e-9).rounded(.down))
    }
  }

  /// How many elements of a stream must have finished before a ``ratio(_:file:line:)`` tolerance is
  /// judged while the stream is still running: 100.
  ///
  /// A stream's length is unknown until it ends, so
  /// ``AsyncFunc/concurrentMap(over:limit:ordered:acceptableFailure:progress:file:line:)`` judges a ratio
  /// against the elements finished so far, but only once this many have finished, so that two
  /// early failures of ten do not end a stream that would have stayed well within
  /// `.ratio(0.1)`. When the source ends, the ratio is judged against the number of elements
  /// it produced, as for an array. `.ratio(0)` needs no warm-up: the first failure exceeds it.
  public static let minimumFinishedBeforeJudgingRatio = 100

  /// Whether some number of failures could exceed this tolerance: not for `.unlimited` or
  /// `.ratio(1)`, where keeping the failures for a ``FailureRateExceeded`` would only grow a
  /// long stream's memory.
  var canBeExceeded: Bool {
    switch kind {
    case .count(let allowed): allowed != .max
    case .ratio(let fraction): fraction < 1
    }
  }

  /// Whether `failures` exceed this tolerance in a stream where `finished` elements have
  /// finished, and the source has produced `total` elements when it has ended (else `nil`).
  func isExceededInStream(failures: Int, finished: Int, total: Int?) -> Bool {
    switch kind {
    case .count(let allowed):
      return failures > allowed
    case .ratio(let fraction):
      if let total { return failures > allowedFailures(outOf: total) }
      if fraction == 0 { return failures > 0 }
      return finished >= Self.minimumFinishedBeforeJudgingRatio
        && failures > allowedFailures(outOf: finished)
    }
  }

  /// How the tolerance reads in code: `.zero`, `.count(2)`, `.ratio(0.5)`, `.unlimited`.
  public var description: String {
    switch kind {
    case .count(0): ".zero"
    case .count(.max): ".unlimited"
    case .count(let count): ".count(\(count))"
    case .ratio(let fraction): ".ratio(\(fraction))"
    }
  }
}
