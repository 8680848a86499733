import AsyncCombinators

/// A clock whose time moves only when a test says, firing due timers on the test's thread.
///
/// Give it to any timed operator (`timeout(_:clock:)`, `retry(_:delay:backoff:maxDelay:jitter:budget:if:clock:)`,
/// `delay(_:clock:)`) and the operator's timers wait on it instead of on real time. Nothing
/// fires until you call ``advance(by:)`` or ``advance(to:)``; those are synchronous: before
/// they return, every timer due by the new time has fired, in deadline order (ties in the
/// order they were scheduled), on the calling thread, including timers that those firings
/// scheduled inside the window. While a timer fires, ``now`` reads its deadline. With stages
/// that complete synchronously, a whole timed pipeline then runs without any other thread, and
/// a test reads top to bottom with no `await` between the advance and the assertion.
///
/// Tasks that sleep on the clock (`try await clock.sleep(for:)`) are resumed by the advance
/// that passes their deadline; they then run on their own executor, as any resumed task does.
///
/// ```swift
/// let clock = TestClock()
/// let pause = AsyncFunc<Int, Int>.delay(.seconds(2), clock: clock)
/// pause.run(7) { print($0) }
/// clock.advance(by: .seconds(1))
/// print(clock.pendingCount)
/// clock.advance(by: .seconds(1))
/// print(clock.pendingCount)
/// // prints 1
/// // prints success(7)
/// // prints 0
/// ```
///
/// Its name follows the convention of Point-Free's swift-clocks: a `TestClock` is the clock a
/// test owns. It differs in being synchronous: advancing it is not `async`, and what it fires
/// has run when the call returns.
///
/// - Complexity: Scheduling and cancelling a timer are O(log *n*) for *n* pending timers;
///   an advance that fires *k* timers is O(*k* log *n*).
public final class TestClock: TimerSchedulingClock, Sendable {
  /// A point on a ``TestClock``: a duration since the clock started.
  public struct Instant: InstantProtocol, CustomStringConvertible {
    /// The time since the clock's start, which is zero.
    public let sinceStart: Swift.Duration

    /// The instant `sinceStart` after the clock's start.
    public init(sinceStart: Swift.Duration) { self.sinceStart = sinceStart }

    /// The clock's start.
    public static let start = Instant(sinceStart: .zero)

    /// The instant `duration` later.
    public func advanced(by duration: Swift.Duration) -> Instant {
      Instant(sinceStart: sinceStart + duration)
    }

    /// The duration from this instant to `other`.
    public func duration(to other: Instant) -> Swift.Duration {
      other.sinceStart - sinceStart
    }

    /// Whether `lhs` comes before `rhs`.
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.sinceStart < rhs.sinceStart }

    /// The instant `rhs` after `lhs`.
    public static func + (lhs: Instant, rhs: Swift.Duration) -> Instant { lhs.advanced(by: rhs) }

    /// The instant `rhs` before `lhs`.
    public static func - (lhs: Instant, rhs: Swift.Duration) -> Instant {
      lhs.advanced(by: .zero - rhs)
    }

    /// The duration from `rhs` to `lhs`.
    public static func - (lhs: Instant, rhs: Instant) -> Swift.Duration {
      rhs.duration(to: lhs)
    }

    /// `start + 1.5 seconds`, say.
    public var description: String { "start + \(sinceStart)" }
  }

  private enum Entry {
    /// A library timer, from ``scheduleTimer(at:_:)``.
    case timer(@Sendable () -> Void)
    /// A task in ``sleep(until:tolerance:)``.
    case sleeper(Sleeper)
  }

  private struct State {
    var now = Instant.start
    /// The entries neither fired nor cancelled.
    var pending = DeadlineQueue<Instant, Entry>()
    /// How many threads are in an advance: an entry due at once is then queued, not run,
    /// so that it fires in its turn.
    var advancing = 0

    /// Queues `entry` and returns the id that cancels it.
    mutating func insert(_ entry: Entry, at deadline: Instant) -> UInt64 {
      pending.schedule(entry, at: deadline)
    }

    mutating func remove(_ id: UInt64) -> Entry? {
      pending.cancel(id)
    }

    /// Takes the next entry due by `limit`, and moves `now` to its deadline.
    mutating func takeDue(by limit: Instant) -> Entry? {
      guard let (deadline, entry) = pending.takeFirst(dueBy: limit) else { return nil }
      if deadline > now { now = deadline }
      return entry
    }
  }

  private let state = Locked(State())

  /// Creates a clock at ``Instant/start``, with nothing pending.
  public init() {}

  /// The clock's current instant. While a timer fires, that timer's deadline.
  public var now: Instant { state.withLock { $0.now } }

  /// Zero: the clock can be advanced by any duration.
  public var minimumResolution: Swift.Duration { .zero }

  /// How many timers and sleeping tasks are waiting: neither fired nor cancelled.
  ///
  /// A cancelled run's timers are removed at once, and so is a timeout's timer when the
  /// result wins, so this is how a test sees that nothing was left behind.
  public var pendingCount: Int { state.withLock { $0.pending.count } }

  /// The deadline of the earliest pending timer or sleeper, or `nil` when nothing waits.
  public var nextDeadline: Instant? {
    state.withLock { $0.pending.nextDeadline() }
  }

  /// Moves time forward by `duration`, firing every timer due by then. See ``advance(to:)``.
  ///
  /// - Parameter duration: How far to move; zero or negative fires only what is already due.
  public func advance(by duration: Swift.Duration) {
    advance(to: now.advanced(by: duration > .zero ? duration : .zero), firingDue: true)
  }

  /// Moves time forward to `deadline`, firing every timer due by then before returning.
  ///
  /// Timers fire on the calling thread, in deadline order; timers with the same deadline fire
  /// in the order they were scheduled. A timer scheduled by a firing fires in this call too if
  /// its deadline is not after `deadline`. While each fires, ``now`` is its deadline; when the
  /// call returns, ``now`` is `deadline`. Tasks sleeping until an instant in the window are
  /// resumed. An instant not after ``now`` does nothing.
  ///
  /// ```swift
  /// let clock = TestClock()
  /// let slow = AsyncFunc<Int, Int>(name: "slow") { _, token, complete in
  ///   token.onCancel { complete(.failure(CancellationError())) }  // only stops when told
  /// }
  /// slow.timeout(.seconds(5), clock: clock).run(1) { print(clock.now, $0) }
  /// clock.advance(to: .start + .seconds(10))
  /// // prints start + 5.0 seconds failure(TimeoutError: no result within 5.0 seconds)
  /// ```
  ///
  /// - Parameter deadline: The new current instant.
  /// - Complexity: O(*k* log *n*) for *k* timers fired out of *n* pending.
  public func advance(to deadline: Instant) {
    advance(to: deadline, firingDue: false)
  }

  private func advance(to deadline: Instant, firingDue: Bool) {
    let moves = state.withLock { state in
      guard deadline > state.now || firingDue else { return false }
      state.advancing += 1
      return true
    }
    guard moves else { return }
    // The advance ends in the same critical section that finds nothing more due, so an entry
    // scheduled meanwhile by another thread is either taken here or fired by its scheduler.
    while let entry = state.withLock({ state -> Entry? in
      if let entry = state.takeDue(by: deadline) { return entry }
      if deadline > state.now { state.now = deadline }
      state.advancing -= 1
      return nil
    }) {
      switch entry {
      case .timer(let fire): fire()
      case .sleeper(let sleeper): sleeper.wake()
      }
    }
  }

  /// Schedules a library timer: the timed operators call this; tests rarely need to.
  ///
  /// A deadline not after ``now`` fires before this returns (or, during an advance, in its
  /// turn within that advance).
  ///
  /// - Parameters:
  ///   - deadline: When to fire.
  ///   - fire: What to run, on the thread that advances the clock.
  /// - Returns: A handle whose `cancel()` removes the timer at once.
  public func scheduleTimer(at deadline: Instant, _ fire: @escaping @Sendable () -> Void)
    -> any Cancellable
  {
    let id = state.withLock { state -> UInt64? in
      if deadline <= state.now && state.advancing == 0 { return nil }
      return state.insert(.timer(fire), at: deadline)
    }
    guard let id else {
      fire()
      return ScheduledEntry(clock: nil, id: 0)
    }
    return ScheduledEntry(clock: self, id: id)
  }

  /// Suspends until an advance reaches `deadline`; throws `CancellationError` if the task is
  /// cancelled first.
  ///
  /// - Parameters:
  ///   - deadline: When to resume.
  ///   - tolerance: Ignored: the clock is exact.
  public func sleep(until deadline: Instant, tolerance: Swift.Duration? = nil) async throws {
    try Task.checkCancellation()
    let sleeper = Sleeper()
    let id = state.withLock { state -> UInt64? in
      if deadline <= state.now && state.advancing == 0 { return nil }
      return state.insert(.sleeper(sleeper), at: deadline)
    }
    guard let id else { return }
    try await withTaskCancellationHandler {
      try await sleeper.wait()
    } onCancel: {
      self.cancel(id)
      sleeper.cancel()
    }
  }

  fileprivate func cancel(_ id: UInt64) {
    let removed = state.withLock { $0.remove(id) }
    _ = removed  // Released outside the lock: releasing a timer's closure may run deinits.
  }
}

/// The handle of one scheduled timer.
private struct ScheduledEntry: Cancellable {
  let clock: TestClock?
  let id: UInt64

  func cancel() { clock?.cancel(id) }
}

/// One task sleeping on a ``TestClock``: woken by an advance or by its cancellation,
/// whichever comes first, and whether or not it has suspended yet.
private final class Sleeper: Sendable {
  private enum State {
    case idle
    case waiting(CheckedContinuation<Void, any Error>)
    case woken
    case cancelled
    case done
  }

  private let state = Locked(State.idle)

  func wait() async throws {
    try await withCheckedThrowingContinuation { continuation in
      let early = state.withLock { state -> Result<Void, any Error>? in
        switch state {
        case .idle:
          state = .waiting(continuation)
          return nil
        case .woken:
          state = .done
          return .success(())
        case .cancelled, .waiting, .done:
          state = .done
          return .failure(CancellationError())
        }
      }
      if let early { continuation.resume(with: early) }
    }
  }

  func wake() { finish(.woken, .success(())) }

  func cancel() { finish(.cancelled, .failure(CancellationError())) }

  private func finish(_ early: State, _ result: Result<Void, any Error>) {
    let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
      switch state {
      case .idle:
        state = early
        return nil
      case .waiting(let continuation):
        state = .done
        return continuation
      case .woken, .cancelled, .done:
        return nil
      }
    }
    continuation?.resume(with: result)
  }
}
