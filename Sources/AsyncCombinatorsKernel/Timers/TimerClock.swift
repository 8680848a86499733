import Dispatch
import Synchronization

/// A clock erased, once, when an operator is built, to what its timers need: `retry`'s waits,
/// `timeout`'s deadline, `delay`'s pause.
///
/// `ContinuousClock`, the default, keeps its timers in ``SharedTimers``. A
/// ``TimerSchedulingClock`` (the test clock) schedules each timer itself. Any other clock is
/// honoured through its `sleep(until:tolerance:)`: one task per pending timer.
///
/// Not generic over the clock, so the code each run executes is not generic either
/// (Performance.md, "What the code's shape buys, and the check that holds it").
package struct TimerClock: Sendable {
  /// `nil` for `ContinuousClock`, whose deadlines are Dispatch uptimes.
  private let customDeadline: (@Sendable (Duration) -> TimerDeadline)?
  /// When the deadline set on this clock around a token's work is, as a wait from now.
  private let untilDeadline: @Sendable (CancellationToken) -> Duration?

  package init<C: Clock>(_ clock: C) where C.Duration == Duration {
    if C.self == ContinuousClock.self {
      customDeadline = nil
    } else {
      customDeadline = { duration in TimerDeadline(after: duration, on: clock) }
    }
    untilDeadline = { token in token.deadline(on: clock).map { clock.now.duration(to: $0) } }
  }

  /// The time left before the deadline set on this clock around `token`'s work, or `nil`
  /// without one: what a wait must end before. Reads the clock only under a deadline.
  package func timeLeft(on token: CancellationToken) -> Duration? {
    guard token.deadlines != nil else { return nil }
    return untilDeadline(token)
  }

  /// Whether a wait of `duration` begun now would end at or after the deadline set on this
  /// clock around `token`'s work: such a wait would only be cut short by it.
  package func waitPassesDeadline(_ duration: Duration, on token: CancellationToken) -> Bool {
    guard let left = timeLeft(on: token) else { return false }
    return duration >= left
  }

  package static let continuous = TimerClock(ContinuousClock())

  /// The instant `duration` from now, read now; never for a wait as long as ``horizon``,
  /// decided before the clock is asked to add it.
  package func deadline(after duration: Duration) -> TimerDeadline {
    guard duration < Self.horizon else { return .never }
    return customDeadline?(duration) ?? TimerDeadline(uptimeAfter: duration)
  }

  /// The shortest wait that never comes: a century. No process waits that long, so such a
  /// timer is not armed; and no clock's instant is advanced by more, because a clock may trap
  /// on an instant it cannot represent (`Duration.components` does past `Int64.max` seconds,
  /// so `SuspendingClock` and `ContinuousClock` sleeps do, and an instant counted in `Int64`
  /// nanoseconds overflows within three centuries of its epoch). `.seconds(Int64.max)`, a
  /// natural way to write "no timeout", is well past it.
  package static let horizon = Duration.seconds(100 * 365 * 86_400)

  /// Calls `fire(true)` once `duration` has passed, or `fire(false)` as soon as `token` is
  /// cancelled, whichever comes first: exactly once either way.
  package func after(
    _ duration: Duration, _ token: CancellationToken,
    _ fire: @escaping @Sendable (_ expired: Bool) -> Void
  ) {
    deadline(after: duration).arm(on: token, fire)
  }
}

/// When a timer is due, fixed when its wait begins.
package struct TimerDeadline: Sendable {
  private enum Kind: Sendable {
    /// Beyond what the clock can represent: it never comes.
    case never
    /// The default clock: a Dispatch uptime, in nanoseconds.
    case uptime(UInt64)
    /// Any other clock: schedules the fire at the instant fixed on it.
    case custom(@Sendable (@escaping @Sendable () -> Void) -> any Cancellable)
  }

  private let kind: Kind

  private init(_ kind: Kind) { self.kind = kind }

  /// A deadline that never comes: its timer arms nothing.
  package static let never = TimerDeadline(.never)

  /// `now + duration` in Dispatch's uptime; never when the sum does not fit, since Dispatch
  /// reads an uptime past `Int64.max` as a time in the past.
  package init(uptimeAfter duration: Duration) {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else {
      kind = .uptime(DispatchTime.now().uptimeNanoseconds)
      return
    }
    let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let wait = UInt64(clamping: nanoseconds) &+ UInt64(clamping: attoseconds / 1_000_000_000)
    let (due, pastEnd) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(wait)
    kind = overflow || pastEnd || due >= UInt64(Int64.max) ? .never : .uptime(due)
  }

  /// `now + duration` on `clock`; never from ``TimerClock/horizon`` on, without asking the
  /// clock to add it.
  package init<C: Clock>(after duration: Duration, on clock: C) where C.Duration == Duration {
    guard duration < TimerClock.horizon else {
      kind = .never
      return
    }
    let deadline = clock.now.advanced(by: duration)
    kind = .custom { fire in
      if let scheduling = clock as? any TimerSchedulingClock {
        return scheduleOpened(on: scheduling, at: deadline, fire)
      }
      return Task {
        do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
        fire()
      }
    }
  }

  /// Calls `fire(true)` at the deadline, or `fire(false)` as soon as `token` is cancelled,
  /// whichever comes first: exactly once either way. A deadline that never comes arms nothing
  /// but the cancellation.
  package func arm(
    on token: CancellationToken, _ fire: @escaping @Sendable (_ expired: Bool) -> Void
  ) {
    let pending = PendingTimer(fire)
    let registration = token.onCancel { pending.end(expired: false) }
    pending.keep(
      ArmedTimer(timer: schedule { pending.end(expired: true) }, registration: registration))
  }

  /// Calls `fire` at the deadline, on a thread of the clock's choosing (possibly the caller's,
  /// for a clock whose time has already passed it), unless the timer is cancelled first. It
  /// watches no token: an owner that must hear of a cancellation registers for it itself.
  package func schedule(_ fire: @escaping @Sendable () -> Void) -> ScheduledTimer {
    switch kind {
    case .never: .none
    case .uptime(let due):
      .shared(SharedTimers.shared.schedule(at: DispatchTime(uptimeNanoseconds: due), fire))
    case .custom(let schedule): .custom(ScheduledTimer.CustomTimer(schedule(fire)))
    }
  }
}

/// A timer ``TimerDeadline/schedule(_:)`` made, to take it back with. The default clock's timer is
/// an id, and another clock's is boxed rather than held as an existential
/// (Performance.md, "What the code's shape buys, and the check that holds it").
package enum ScheduledTimer: Cancellable {
  /// A deadline that never comes: nothing was scheduled.
  case none
  case shared(SharedTimers.Timer)
  /// Another clock's timer, boxed.
  case custom(CustomTimer)

  package final class CustomTimer: Sendable {
    package let timer: any Cancellable
    package init(_ timer: any Cancellable) { self.timer = timer }
  }

  /// Takes the timer back, if it has not fired: its closure is let go.
  package func cancel() {
    switch self {
    case .none: break
    case .shared(let timer): timer.cancel()
    case .custom(let custom): custom.timer.cancel()
    }
  }
}

/// One armed timer racing its token's cancellation: the first to end it fires, and takes the
/// other back (the timer out of its queue, the handler off the token). What to take back is
/// kept once both are made; a timer that ended meanwhile takes them back at once.
///
/// `@unchecked Sendable`: `fire` is a `let`; the rest is the ``Keeper``'s.
private final class PendingTimer: Keeper<ArmedTimer>, @unchecked Sendable {
  private let fire: @Sendable (Bool) -> Void

  init(_ fire: @escaping @Sendable (Bool) -> Void) { self.fire = fire }

  func end(expired: Bool) {
    guard let kept = end() else { return }
    if expired { kept?.registration.remove() } else { kept?.timer.cancel() }
    fire(expired)
  }
}

/// Opens a scheduling clock, so that a deadline fixed on it can be handed over.
private func scheduleOpened<S: TimerSchedulingClock, Instant>(
  on clock: S, at deadline: Instant, _ fire: @escaping @Sendable () -> Void
) -> any Cancellable {
  // `clock` is the operator's clock cast to the protocol, and `deadline` an instant of that
  // clock, so `Instant` is `S.Instant`.
  clock.scheduleTimer(at: deadline as! S.Instant, fire)
}
