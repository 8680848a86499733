import Dispatch
import Synchronization

/// Every pending library timer on the default clock, behind one Dispatch timer source.
///
/// The timers wait in one ``DeadlineQueue``: scheduling and cancelling are O(log n), a
/// cancelled timer's closure is let go at once, and the queue stays proportional to the timers
/// still pending (Dispatch would keep a cancelled `asyncAfter` item until its deadline). The one
/// source is set for the earliest deadline. Due timers fire on a global queue, one `async`
/// each; the source's own queue only takes them out of the heap.
package final class SharedTimers: Sendable {
  package static let shared = SharedTimers()

  private struct State {
    var timers = DeadlineQueue<UInt64, Action>()
    /// The deadline the source is set for; `.max` when it is not set.
    var armedFor = UInt64.max
  }

  private let state = Locked(State())
  // `DispatchSourceTimer` is thread-safe (libdispatch guards its state); it is only not
  // annotated as `Sendable`.
  nonisolated(unsafe) private let source: any DispatchSourceTimer

  private init() {
    source = DispatchSource.makeTimerSource(
      queue: DispatchQueue(label: "AsyncCombinators.timers"))
    source.setEventHandler { [unowned self] in fireDue() }
    source.activate()
  }

  /// A pending timer, as a ``Cancellable``: cancelling it drops its closure at once.
  package struct Timer: Cancellable {
    package let id: UInt64
    package func cancel() {
      guard id != Timer.none.id else { return }
      SharedTimers.shared.cancel(id)
    }

    /// A timer that was never scheduled: cancelling it does nothing.
    package static var none: Timer { Timer(id: .max) }
  }

  /// Calls `fire` on a global queue once `deadline` has passed, unless cancelled first.
  package func schedule(at deadline: DispatchTime, _ fire: @escaping @Sendable () -> Void) -> Timer
  {
    let due = deadline.uptimeNanoseconds
    return state.withLock { state in
      let id = state.timers.schedule(Action(fire), at: due)
      if due < state.armedFor {
        state.armedFor = due
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .nanoseconds(0))
      }
      return Timer(id: id)
    }
  }

  private func cancel(_ id: UInt64) {
    // Released outside the lock: releasing the closure may run deinits.
    let removed = state.withLock { $0.timers.cancel(id) }
    _ = removed
  }

  /// The source fired: hands every due timer to a global queue and sets the source for the
  /// next deadline.
  private func fireDue() {
    let due = state.withLock { state -> [Action] in
      let now = DispatchTime.now().uptimeNanoseconds
      var due: [Action] = []
      while let (_, fire) = state.timers.takeFirst(dueBy: now) { due.append(fire) }
      state.armedFor = state.timers.nextDeadline() ?? .max
      if state.armedFor != .max {
        source.schedule(
          deadline: DispatchTime(uptimeNanoseconds: state.armedFor), leeway: .nanoseconds(0))
      }
      return due
    }
    for fire in due { DispatchQueue.global().async(execute: fire.run) }
  }

  /// Timers neither fired nor cancelled; for tests.
  package var pendingCount: Int { state.withLock { $0.timers.count } }

  /// Timers neither fired nor cancelled and due after `deadline` (and before `end`, when
  /// given); for tests, which pick a span no other test's timers fall in, since every test
  /// shares these timers.
  package func pendingCount(dueAfter deadline: DispatchTime, before end: DispatchTime? = nil) -> Int
  {
    state.withLock {
      $0.timers.countDue(after: deadline.uptimeNanoseconds, before: end?.uptimeNanoseconds)
    }
  }
}
