/// The cause a `latest()` run's token gets when a newer run supersedes it.
///
/// The superseded run still completes with `CancellationError`; its bodies read this from
/// ``CancellationToken/cause`` to tell a newer call from a user who gave up.
///
/// ```swift
/// print(SupersededError())
/// // prints SupersededError: a newer run superseded this one
/// ```
public struct SupersededError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Creates the cause.
  public init() {}

  /// One line for a log.
  public var description: String { "SupersededError: a newer run superseded this one" }
}

/// The cause the attempts that lost a `race` or a `hedged` run get: another attempt answered
/// first.
///
/// A losing attempt's bodies read it from ``CancellationToken/cause``, to tell a loss, which is
/// routine, from a cancellation of the whole run.
///
/// ```swift
/// print(LostRaceError())
/// // prints LostRaceError: another attempt answered first
/// ```
public struct LostRaceError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Creates the cause.
  public init() {}

  /// One line for a log.
  public var description: String { "LostRaceError: another attempt answered first" }
}
