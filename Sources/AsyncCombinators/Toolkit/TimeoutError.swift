/// The error of a run that ``AsyncFunc/timeout(_:clock:file:line:)`` stopped because it took too long.
public struct TimeoutError: Error, Equatable, CustomStringConvertible {
  /// The time the run was given.
  public let duration: Duration

  /// Creates the error for a run that was given `duration`.
  public init(duration: Duration) { self.duration = duration }

  /// Says how long the run was given.
  public var description: String { "TimeoutError: no result within \(duration)" }
}
