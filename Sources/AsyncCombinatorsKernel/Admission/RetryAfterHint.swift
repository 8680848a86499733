/// An error that says how long to wait before trying again: a server's `Retry-After`, an open
/// circuit breaker's time left, a rate limiter's next free permit.
///
/// ``AsyncFunc/retry(_:delay:backoff:maxDelay:jitter:budget:if:clock:file:line:)`` waits
/// `retryAfter` instead of its own computed wait when the error it is about to retry conforms
/// and the hint is not `nil`: exactly the hint with `jitter: .none`, and with any other jitter
/// a wait drawn in `[hint, 2 × hint]` for each run, so that the runs one outage turned away
/// do not all come back at once; capped by its `maxDelay` either way. A negative hint is
/// waited as zero.
///
/// ```swift
/// struct Throttled: RetryAfterHint {
///   var retryAfter: Duration? { .seconds(7) }
/// }
/// let error: any Error = Throttled()
/// print((error as? any RetryAfterHint)?.retryAfter ?? .zero)
/// // prints 7.0 seconds
/// ```
public protocol RetryAfterHint: Error {
  /// How long to wait before the next attempt; `nil` when the error gives no hint.
  ///
  /// A negative hint is not a misuse: it is waited as zero, as an HTTP client treats a
  /// `Retry-After` date already past, since a server's clock, not the program, wrote it.
  var retryAfter: Duration? { get }
}
