import Dispatch
import Synchronization

/// A one-shot timer that a run's cancellation stops, on whichever clock an operator was given.
///
/// Used by `retry`'s delay, `timeout` and `delay`. `ContinuousClock`, the default, keeps the
/// fast path: an entry in ``SharedTimers``, one Dispatch timer source for all of them. A ``TimerSchedulingClock`` (the test
/// clock) schedules the timer itself. Any other clock is honoured through its
/// `sleep(until:tolerance:)`: one task per pending timer, cancelled with the run.
enum OneShotTimer {
  /// Calls `fire` once `duration` has passed on `clock`, unless `token` is cancelled first.
  ///
  /// A zero or negative duration fires at once (on Dispatch, on the global queue).
  static func after<C: Clock>(
    _ duration: Duration, clock: C, token: CancellationToken,
    _ fire: @escaping @Sendable () -> Void
  ) where C.Duration == Duration {
    TimerDeadline(after: duration, on: clock).arm(token: token, fire)
  }

  /// `now + duration`, saturating: a negative duration is now, a huge one is far in the future.
  static func deadline(after duration: Duration) -> DispatchTime {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return .now() }
    let (nanos, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    guard !overflow else { return .distantFuture }
    return .now() + .nanoseconds(Int(clamping: nanos + attoseconds / 1_000_000_000))
  }
}

/// When a timer is due, fixed when its wait begins, so that work done before the timer is
/// armed (`timeout` starts its inner run first) does not lengthen the wait.
struct TimerDeadline<C: Clock>: Sendable where C.Duration == Duration {
  private enum Kind: Sendable {
    /// The default clock: Dispatch's uptime-based deadline.
    case dispatch(DispatchTime)
    /// Any other clock, and the instant on it.
    case clock(C, C.Instant)
  }

  private let kind: Kind

  init(after duration: Duration, on clock: C) {
    if C.self == ContinuousClock.self {
      kind = .dispatch(OneShotTimer.deadline(after: duration))
    } else {
      kind = .clock(clock, clock.now.advanced(by: duration))
    }
  }

  /// Starts the timer: `fire` runs once at the deadline unless `token` is cancelled first.
  func arm(token: CancellationToken, _ fire: @escaping @Sendable () -> Void) {
    let link = CancellationLink()
    let finishThenFire: @Sendable () -> Void = {
      link.finish()
      fire()
    }
    switch kind {
    case .dispatch(let deadline):
      link.connect(token, to: SharedTimers.shared.schedule(at: deadline, finishThenFire))
    case .clock(let clock, let deadline):
      if let scheduling = clock as? any TimerSchedulingClock {
        // The clock may fire at once, before `connect`: the link then unregisters itself.
        link.connect(token, to: schedule(on: scheduling, at: deadline, finishThenFire))
      } else {
        let task = Task {
          do { try await clock.sleep(until: deadline, tolerance: nil) } catch { return }
          finishThenFire()
        }
        link.connect(token, to: task)
      }
    }
  }

  /// Opens the scheduling clock, which is `C` itself, so the deadline can be handed over.
  private func schedule<S: TimerSchedulingClock>(
    on clock: S, at deadline: C.Instant, _ fire: @escaping @Sendable () -> Void
  ) -> any Cancellable {
    // `clock` was `C` cast to the protocol, so `S.Instant` is `C.Instant`.
    clock.scheduleTimer(at: deadline as! S.Instant, fire)
  }
}

/// A clock erased to what a timer needs, for state that cannot be generic over it.
struct TimerClock: Sendable {
  /// Starts a timer: `fire` once `duration` has passed, unless the token is cancelled first.
  let after:
    @Sendable (
      _ duration: Duration, _ token: CancellationToken, _ fire: @escaping @Sendable () -> Void
    ) ->
      Void

  init<C: Clock>(_ clock: C) where C.Duration == Duration {
    after = { duration, token, fire in
      OneShotTimer.after(duration, clock: clock, token: token, fire)
    }
  }

  static let continuous = TimerClock(ContinuousClock())
}
