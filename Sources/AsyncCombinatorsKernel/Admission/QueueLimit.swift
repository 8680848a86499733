/// How many runs may wait at a ``Limiter`` or a ``WorkQueue`` when no slot is free, and for
/// how long: the point past which a queue sheds load instead of growing.
///
/// A waiter that the limit sends away fails with ``LimitExceeded``, never with a
/// `CancellationError`, and nothing of its work starts.
///
/// ```swift
/// print(QueueLimit.unbounded, QueueLimit.none, QueueLimit.count(100))
/// print(QueueLimit.wait(.seconds(2)))
/// // prints unbounded none count(100)
/// // prints wait(2.0 seconds)
/// ```
public struct QueueLimit: Sendable, Hashable, CustomStringConvertible {
  package enum Kind: Hashable {
    case unbounded
    case none
    case count(Int)
    case wait(Duration)
  }

  package let kind: Kind

  /// Whether a run may be rejected as it arrives, rather than only after waiting.
  package var rejectsAtOnce: Bool {
    switch kind {
    case .none, .count: true
    case .unbounded, .wait: false
    }
  }

  private init(_ kind: Kind) { self.kind = kind }

  /// Wait as long as it takes: the queue grows with the waiters.
  public static let unbounded = QueueLimit(.unbounded)

  /// Never wait: a run that finds no free slot is rejected at once.
  public static let none = QueueLimit(.none)

  /// At most `n` waiting; the next one to arrive is rejected at once.
  ///
  /// - Precondition: `n` is not negative; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - n: How many may wait; zero is the same as ``none``.
  ///   - file: The caller's file, named when `n` is negative.
  ///   - line: The caller's line, named when `n` is negative.
  /// - Returns: The limit.
  public static func count(
    _ n: Int, file: StaticString = #fileID, line: UInt = #line
  ) -> QueueLimit {
    require(
      n >= 0, "QueueLimit.count(\(n)): the count must not be negative", file: file, line: line)
    return QueueLimit(.count(n))
  }

  /// A waiter gives up after `d` on the limiter's clock and fails with ``LimitExceeded``.
  ///
  /// - Precondition: `d` is not negative, as for every duration you pass the library;
  ///   otherwise the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - d: The longest wait; zero or more.
  ///   - file: The caller's file, named when `d` is negative.
  ///   - line: The caller's line, named when `d` is negative.
  /// - Returns: The limit.
  public static func wait(
    _ d: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> QueueLimit {
    require(
      d >= .zero, "QueueLimit.wait(\(d)): the longest wait must not be negative", file: file,
      line: line)
    return QueueLimit(.wait(d))
  }

  /// `unbounded`, `none`, `count(n)` or `wait(d)`.
  public var description: String {
    switch kind {
    case .unbounded: "unbounded"
    case .none: "none"
    case .count(let n): "count(\(n))"
    case .wait(let d): "wait(\(d))"
    }
  }
}
