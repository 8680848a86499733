import Dispatch
import Synchronization

/// A one-shot timer on a global queue that a run's cancellation stops.
///
/// Used by `retry`'s delay, `timeout` and `delay`. Cancelling the token cancels the work item,
/// so a cancelled wait holds neither a thread nor the closure past the cancellation.
enum OneShotTimer {
  /// Calls `fire` once `duration` has passed, unless `token` is cancelled first.
  ///
  /// A zero or negative duration fires on the global queue at once.
  static func after(
    _ duration: Duration, token: CancellationToken, _ fire: @escaping @Sendable () -> Void
  ) {
    let link = CancellationLink()
    let item = WorkItem {
      link.finish()
      fire()
    }
    link.connect(token, to: item)
    DispatchQueue.global().asyncAfter(deadline: deadline(after: duration), execute: item.item)
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

/// A `DispatchWorkItem` as a ``Cancellable``.
///
/// Dispatch keeps a cancelled item, and its block, until the deadline passes. The block
/// therefore holds only a box, which cancelling empties: a cancelled 30-second timeout does
/// not keep its run's completion alive for 30 seconds.
private final class WorkItem: Cancellable {
  /// The work until it runs or is cancelled.
  private final class Pending: Sendable {
    let work: Locked<(@Sendable () -> Void)?>
    init(_ work: @escaping @Sendable () -> Void) { self.work = Locked(work) }
    func take() -> (@Sendable () -> Void)? { work.withLock { $0.take() } }
  }

  private let pending: Pending
  // `DispatchWorkItem` is thread-safe (libdispatch guards its state); it is only not
  // annotated as `Sendable` on every platform.
  nonisolated(unsafe) let item: DispatchWorkItem

  init(_ work: @escaping @Sendable () -> Void) {
    let pending = Pending(work)
    self.pending = pending
    item = DispatchWorkItem { pending.take()?() }
  }

  func cancel() {
    let work = pending.take()
    item.cancel()
    _ = work  // Released outside the lock: releasing the closure may run deinits.
  }
}
