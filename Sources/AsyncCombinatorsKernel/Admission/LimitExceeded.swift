/// A run turned away by a ``Limiter`` or a ``WorkQueue`` because its ``QueueLimit`` was
/// reached: it started nothing.
///
/// A `retry` waits `retryAfter`, when known, before trying again: it is when a rate limiter
/// could admit the run, once the runs waiting ahead of it have taken their permits and its
/// own are back.
///
/// ```swift
/// print(LimitExceeded(retryAfter: .seconds(1)))
/// print(LimitExceeded(retryAfter: nil))
/// // prints LimitExceeded: no slot free; retry after 1.0 seconds
/// // prints LimitExceeded: no slot free
/// ```
public struct LimitExceeded: RetryAfterHint, Sendable, CustomStringConvertible {
  /// How long until the run could be admitted, if the limiter can tell.
  public let retryAfter: Duration?

  /// A rejection that hints at `retryAfter`.
  ///
  /// - Parameter retryAfter: How long until a retry may be admitted; `nil` if unknown.
  public init(retryAfter: Duration?) { self.retryAfter = retryAfter }

  /// One line, with the hint when there is one.
  public var description: String {
    retryAfter.map { "LimitExceeded: no slot free; retry after \($0)" }
      ?? "LimitExceeded: no slot free"
  }
}
