/// The error of a run that ``AsyncFunc/timeout(_:clock:file:line:)`` stopped because it took
/// too long.
public struct TimeoutError: Error, Equatable, CustomStringConvertible {
  /// The time the run was given.
  public let duration: Duration

  /// Creates the error for a run that was given `duration`.
  public init(duration: Duration) { self.duration = duration }

  /// One line for a log: how long the run was given.
  ///
  /// ```swift
  /// print(TimeoutError(duration: .milliseconds(500)))
  /// // prints TimeoutError: no result within 0.5 seconds
  /// ```
  public var description: String { "TimeoutError: no result within \(duration)" }
}
