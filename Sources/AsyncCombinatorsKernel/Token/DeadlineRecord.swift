/// One deadline set around some work, linked to the one set around it: the chain a token's
/// ``CancellationToken/deadline(on:)`` reads, innermost first.
///
/// A record is added only when it is earlier than the one already set on its clock, so the
/// first record found for a clock is the earliest, and a lookup walks the nested deadlines,
/// not the token tree. Immutable, and shared by every token under it.
package final class DeadlineRecord: Sendable {
  /// Which clock: the instance for a class clock, the type for a struct clock.
  private let clock: ObjectIdentifier
  /// A class clock, held so that its identifier is not reused while the record lives.
  private let owner: (any Sendable)?
  /// An instant of that clock.
  private let instant: any Sendable
  /// The deadlines set around this one.
  package let enclosing: DeadlineRecord?

  private init(
    clock: ObjectIdentifier, owner: (any Sendable)?, instant: any Sendable,
    enclosing: DeadlineRecord?
  ) {
    self.clock = clock
    self.owner = owner
    self.instant = instant
    self.enclosing = enclosing
  }

  /// The identity of `clock`, and what to hold to keep it.
  private static func identity<C: Clock>(of clock: C) -> (ObjectIdentifier, (any Sendable)?) {
    if C.self is AnyObject.Type {
      return (ObjectIdentifier(clock as AnyObject), clock)
    }
    return (ObjectIdentifier(C.self), nil)
  }

  /// The earliest deadline on `clock` in this chain, or `nil`.
  package func instant<C: Clock>(on clock: C) -> C.Instant? {
    let (key, _) = Self.identity(of: clock)
    var record: DeadlineRecord? = self
    while let current = record {
      if current.clock == key, let instant = current.instant as? C.Instant { return instant }
      record = current.enclosing
    }
    return nil
  }

  /// `records` with a deadline at `instant` on `clock`: a new record if it is earlier than the
  /// one set on that clock, else `records` itself.
  package static func adding<C: Clock>(
    _ instant: C.Instant, on clock: C, to records: DeadlineRecord?
  ) -> DeadlineRecord {
    if let records, let current = records.instant(on: clock), current <= instant {
      return records
    }
    let (key, owner) = identity(of: clock)
    return DeadlineRecord(clock: key, owner: owner, instant: instant, enclosing: records)
  }
}
