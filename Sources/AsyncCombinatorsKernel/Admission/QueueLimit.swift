/// How many runs may wait at a ``Limiter`` or a ``WorkQueue`` when no slot is free, and for
/// how long: the point past which a queue sheds load instead of growing.
///
/// A waiter that the limit sends away fails with ``LimitExceeded``, never with a
/// `CancellationError`, and nothing of its work starts. The limit sends away the
/// lowest-priority run (see ``AsyncFunc/limited(by:weight:priority:file:line:)`` and
/// ``WorkQueue/Priority``): a newcomer that finds ``count(_:file:line:)`` reached takes the
/// place of the newest waiter of the lowest priority if its own priority is higher, and is
/// the one sent away otherwise.
///
/// ```swift
/// print(QueueLimit.unbounded, QueueLimit.none, QueueLimit.count(100))
/// print(QueueLimit.wait(.seconds(2)))
/// print(QueueLimit.codel())
/// // prints unbounded none count(100)
/// // prints wait(2.0 seconds)
/// // prints codel(target: 0.005 seconds, interval: 0.1 seconds)
/// ```
public struct QueueLimit: Sendable, Hashable, CustomStringConvertible {
  package enum Kind: Hashable {
    case unbounded
    case none
    case count(Int)
    case wait(Duration)
    case codel(target: Duration, interval: Duration)
  }

  package let kind: Kind

  /// Whether a run may be rejected as it arrives, rather than only after waiting.
  package var rejectsAtOnce: Bool {
    switch kind {
    case .none, .count: true
    case .unbounded, .wait, .codel: false
    }
  }

  /// Whether the gate needs a clock: to time a waiter out, or to measure its wait.
  package var needsClock: Bool {
    switch kind {
    case .wait, .codel: true
    case .unbounded, .none, .count: false
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

  /// CoDel: a waiter is turned away with `LimitExceeded` while the shortest queue wait seen in the last
  /// `interval` stayed above `target`; otherwise it waits.
  ///
  /// Controlled delay (Nichols and Jacobson's CoDel, in the form folly's `Codel` gives it for
  /// request queues) keeps a queue short under overload without a count to guess: a queue
  /// that empties now and then is a buffer and is left alone; one whose waits never get down
  /// to `target` for a whole `interval` is a standing queue, and is cut. Each priority is
  /// measured on its own, on the limiter's clock:
  ///
  /// - A priority saw a short wait when its queue was last empty, or when one of its runs was
  ///   last admitted after waiting at most `target`. Once that is `interval` ago or more, the
  ///   priority is *overloaded*.
  /// - While its priority is overloaded, a waiter that has waited longer than twice `target`
  ///   is turned away, oldest first, as runs arrive and leave. The admitted then wait between
  ///   `target` and twice it, which keeps the priority overloaded while the overload lasts,
  ///   instead of letting the queue grow back for an interval each time one run gets in fast.
  ///
  /// Below capacity nobody waits, so nothing is turned away, and a burst that drains is let
  /// through. Under overload the runs of the lowest priority wait longest and are shed first,
  /// while a priority that gets its slots quickly is never shed: one state for all would see
  /// only the short waits of the runs admitted first.
  ///
  /// ```swift
  /// let backend = Limiter(concurrency: 8, queue: .codel(target: .milliseconds(5)))
  /// print(backend)
  /// // prints Limiter(concurrency: 8, queue: codel(target: 0.005 seconds, interval: 0.1 seconds))
  /// ```
  ///
  /// - Precondition: `target` and `interval` are above zero; otherwise the program stops with a
  ///   message naming the caller's line.
  /// - Parameters:
  ///   - target: The wait a standing queue is cut down to; above zero.
  ///   - interval: How long the waits must stay above `target` before anything is turned
  ///     away, about one round trip of the work behind the limiter; above zero.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The limit.
  public static func codel(
    target: Duration = .milliseconds(5), interval: Duration = .milliseconds(100),
    file: StaticString = #fileID, line: UInt = #line
  ) -> QueueLimit {
    require(
      target > .zero, "QueueLimit.codel(target: \(target)): the target must be above zero",
      file: file, line: line)
    require(
      interval > .zero,
      "QueueLimit.codel(interval: \(interval)): the interval must be above zero", file: file,
      line: line)
    return QueueLimit(.codel(target: target, interval: interval))
  }

  /// `unbounded`, `none`, `count(n)`, `wait(d)` or `codel(target: t, interval: i)`.
  public var description: String {
    switch kind {
    case .unbounded: "unbounded"
    case .none: "none"
    case .count(let n): "count(\(n))"
    case .wait(let d): "wait(\(d))"
    case .codel(let target, let interval): "codel(target: \(target), interval: \(interval))"
    }
  }
}
