import Dispatch
import Synchronization

/// One-shot timers that a run's cancellation stops, on whichever clock an operator was given:
/// ``TimerClock`` arms them, ``TimerDeadline`` is when one is due.
///
/// Used by `retry`'s delay, `timeout` and `delay`. `ContinuousClock`, the default, keeps the
/// fast path: an entry in ``SharedTimers``, one Dispatch timer source for all of them. A
/// ``TimerSchedulingClock`` (the test clock) schedules the timer itself. Any other clock is
/// honoured through its `sleep(until:tolerance:)`: one task per pending timer, cancelled with
/// the run. A zero or negative duration fires at once (on Dispatch, on the global queue).
enum OneShotTimer {
  /// `now + duration`, saturating: a negative duration is now, a huge one is far in the future.
  static func deadline(after duration: Duration) -> DispatchTime {
    deadline(afterNanoseconds: nanoseconds(duration))
  }

  /// `duration` in nanoseconds, for ``deadline(afterNanoseconds:)``: 0 when negative, `nil`
  /// when too long to count. Worked out once by an operator whose duration is fixed, as the
  /// arithmetic costs more than reading the time.
  static func nanoseconds(_ duration: Duration) -> Int? {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    let (nanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return nil }
    return Int(clamping: nanos + attoseconds / 1_000_000_000)
  }

  /// `now + nanoseconds`, or the distant future for `nil` or a sum past it.
  static func deadline(afterNanoseconds nanoseconds: Int?) -> DispatchTime {
    guard let nanoseconds else { return .distantFuture }
    // Added here: `DispatchTime + DispatchTimeInterval` is a second call into Dispatch, which
    // costs as much as reading the time (and `timeout` does this at every run's start).
    let (due, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(
      UInt64(Swift.max(0, nanoseconds)))
    return overflow ? .distantFuture : DispatchTime(uptimeNanoseconds: due)
  }
}

/// When a timer is due, fixed when its wait begins, so that work done before the timer is
/// armed (`timeout` starts its inner run first) does not lengthen the wait.
///
/// Not generic over the clock: code generic over it runs unspecialized inside the library and
/// would ask the runtime's metadata cache for `TimerDeadline<C>` on every run. Operators erase
/// their clock once, into a ``TimerClock``, when they are built.
struct TimerDeadline: Sendable {
  private enum Kind: Sendable {
    /// The default clock: Dispatch's uptime-based deadline.
    case dispatch(DispatchTime)
    /// Any other clock: arms the timer at the instant fixed on it.
    case custom(
      @Sendable (CancellationToken, CancellationLink, @escaping @Sendable () -> Void) -> Void)
  }

  private let kind: Kind

  fileprivate init(dispatch deadline: DispatchTime) { kind = .dispatch(deadline) }

  fileprivate init<C: Clock>(after duration: Duration, on clock: C) where C.Duration == Duration {
    let deadline = clock.now.advanced(by: duration)
    kind = .custom { token, link, fire in
      if let scheduling = clock as? any TimerSchedulingClock {
        // The clock may fire at once, before `connect`: the link then unregisters itself.
        link.connect(token, to: schedule(on: scheduling, at: deadline, fire))
      } else {
        let task = Task {
          do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
          fire()
        }
        link.connect(token, to: task)
      }
    }
  }

  /// The deadline on the default clock, which ``SharedTimers`` can schedule directly; `nil` on
  /// any other clock.
  var dispatchTime: DispatchTime? {
    guard case .dispatch(let deadline) = kind else { return nil }
    return deadline
  }

  /// Starts the timer: `fire` runs once at the deadline unless `token` is cancelled first.
  func arm(token: CancellationToken, _ fire: @escaping @Sendable () -> Void) {
    let link = CancellationLink(onFire: fire)
    switch kind {
    case .dispatch(let deadline):
      link.connect(token, to: SharedTimers.shared.schedule(at: deadline) { link.fire() })
    case .custom(let arm):
      arm(token, link) { link.fire() }
    }
  }
}

/// Opens a scheduling clock, so that a deadline fixed on it can be handed over.
private func schedule<S: TimerSchedulingClock, Instant>(
  on clock: S, at deadline: Instant, _ fire: @escaping @Sendable () -> Void
) -> any Cancellable {
  // `clock` is the operator's clock cast to the protocol, and `deadline` an instant of that
  // clock, so `Instant` is `S.Instant`.
  clock.scheduleTimer(at: deadline as! S.Instant, fire)
}

/// A clock erased, once, to what a timer needs, so that the code each run executes is not
/// generic over it.
struct TimerClock: Sendable {
  /// `nil` for `ContinuousClock`, whose deadlines are Dispatch times.
  private let customDeadline: (@Sendable (Duration) -> TimerDeadline)?

  init<C: Clock>(_ clock: C) where C.Duration == Duration {
    if C.self == ContinuousClock.self {
      customDeadline = nil
    } else {
      customDeadline = { duration in TimerDeadline(after: duration, on: clock) }
    }
  }

  static let continuous = TimerClock(ContinuousClock())

  /// Whether this is the default clock, whose deadlines ``SharedTimers`` schedules.
  var isDispatch: Bool { customDeadline == nil }

  /// The instant `duration` from now.
  func deadline(after duration: Duration) -> TimerDeadline {
    deadline(after: duration, inNanoseconds: OneShotTimer.nanoseconds(duration))
  }

  /// The instant `duration` from now, given also as ``OneShotTimer/nanoseconds(_:)`` of it.
  func deadline(after duration: Duration, inNanoseconds nanoseconds: Int?) -> TimerDeadline {
    guard let customDeadline else {
      return TimerDeadline(dispatch: OneShotTimer.deadline(afterNanoseconds: nanoseconds))
    }
    return customDeadline(duration)
  }

  /// Starts a timer: `fire` once `duration` has passed, unless `token` is cancelled first.
  func after(
    _ duration: Duration, _ token: CancellationToken, _ fire: @escaping @Sendable () -> Void
  ) {
    deadline(after: duration).arm(token: token, fire)
  }
}
