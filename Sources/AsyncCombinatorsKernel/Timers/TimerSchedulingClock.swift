/// A clock that runs the library's timers itself, instead of having a task sleep on it.
///
/// The timed operators (``AsyncFunc/timeout(_:clock:file:line:)``,
/// ``AsyncFunc/retry(_:delay:backoff:maxDelay:jitter:budget:if:clock:file:line:)``, ``AsyncFunc/delay(_:clock:file:line:)``) accept any
/// `Clock` measured in `Swift.Duration`. A clock they know nothing about is honoured through
/// `sleep(until:tolerance:)`: one task per pending timer, woken by the clock's executor, so
/// when a timer fires relative to others is up to the scheduler. A clock that adopts this
/// protocol is handed each timer directly and decides exactly when, and on which thread, it
/// fires. That is what lets `TestClock` (in `AsyncCombinatorsTesting`) fire every due timer on
/// the thread that advances it, in deadline order, before `advance` returns.
///
/// The name says what the clock adds to `Clock`: it *schedules timers*, it is not only slept on.
///
/// ```swift
/// /// A clock that is always past every deadline: its timers fire as soon as they start.
/// struct ImpatientClock: TimerSchedulingClock {
///   var now: ContinuousClock.Instant { .now }
///   var minimumResolution: Duration { .zero }
///   func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {}
///   func scheduleTimer(
///     at deadline: ContinuousClock.Instant, _ fire: @escaping @Sendable () -> Void
///   ) -> any Cancellable {
///     fire()
///     return CancellationToken()
///   }
/// }
/// let pause = AsyncFunc<Int, Int>.delay(.seconds(60), clock: ImpatientClock())
/// pause.run(1) { print($0) }
/// // prints success(1)
/// ```
public protocol TimerSchedulingClock: Clock where Duration == Swift.Duration {
  /// Calls `fire` once this clock reaches `deadline`, unless the returned handle is cancelled
  /// first.
  ///
  /// `fire` must be called at most once, and not after `cancel()` on the handle has returned.
  /// A deadline that has already passed may fire before this method returns. Cancelling
  /// should release `fire` at once: a cancelled run's timers must not keep it alive.
  ///
  /// - Parameters:
  ///   - deadline: When to fire, on this clock.
  ///   - fire: What to run then; it may start more timers.
  /// - Returns: A handle whose `cancel()` removes the timer if it has not fired.
  func scheduleTimer(at deadline: Instant, _ fire: @escaping @Sendable () -> Void)
    -> any Cancellable
}
