import Dispatch
import Synchronization

/// Every pending library timer on the default clock, behind one Dispatch timer source.
///
/// A `DispatchQueue.asyncAfter` per `timeout` cost more than the work it bounded, and Dispatch
/// keeps a cancelled item in its own timer heap until the deadline: 100,000 elements each
/// bounded by a 30-second timeout left 100,000 items there. Here the timers wait in one
/// ``DeadlineQueue``, which lets go of a cancelled timer's closure at once and stays
/// proportional in size to the timers still pending; the one source is set for the earliest
/// deadline.
///
/// Due timers fire on a global queue, one `async` each, as `asyncAfter` did: the source's own
/// queue only takes them out of the heap.
///
/// A long timer can also be armed soon rather than at once (``armSoon(_:)``): its owner is
/// queued, and the owners queued within a millisecond are armed together. Inside a fold most
/// runs finish within that millisecond, and their timers are then never armed at all, where
/// arming and disarming each took the timers' lock and a handler on the fold's token.
final class SharedTimers: Sendable {
  static let shared = SharedTimers()

  /// How long an owner queued by ``armSoon(_:)`` may wait to be armed.
  static let armingDelay = DispatchTimeInterval.milliseconds(1)

  private struct State {
    var timers = DeadlineQueue<UInt64, Action>()
    /// The deadline the source is set for; `.max` when it is not set.
    var armedFor = UInt64.max
  }

  /// Owners waiting to arm their timers, in the order they were queued, and the buffer the
  /// last batch was armed from, kept empty for the next batch to queue into.
  ///
  /// Reusing the two buffers matters more than it seems: a batch inside a wide fold holds a
  /// thousand owners, and growing a new buffer for every batch, then freeing it, made glibc
  /// consolidate its free lists each time (`malloc_consolidate` took 3% to 6% of a timed fold).
  private struct Deferred {
    var queued: [any DeferredTimer] = []
    var spare: [any DeferredTimer] = []
  }

  /// The most owners a kept buffer may have room for (256 KiB): a larger one, left by a burst,
  /// is freed rather than held for the life of the process.
  private static let keptCapacity = 16_384

  private let state = Locked(State())
  /// A lock of its own, which queueing takes and the batch's arming takes once.
  private let deferred = Locked(Deferred())
  /// Held while a batch is armed (see ``armDeferred()``). It counts the batches armed so that
  /// the lock guards a value of some size: an empty one shares its address with the lock's
  /// own mutex pointer, which ThreadSanitizer reports as a race.
  private let arming = Locked(0)
  /// Set only by a test, in a process of its own: queued owners wait until a count arms them.
  private let holdsBatches = Atomic<Bool>(false)
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
  struct Timer: Cancellable {
    let id: UInt64
    func cancel() { SharedTimers.shared.cancel(id) }

    /// A timer that was never scheduled: cancelling it does nothing.
    static var none: Timer { Timer(id: .max) }
  }

  /// Calls `fire` on a global queue once `deadline` has passed, unless cancelled first.
  func schedule(at deadline: DispatchTime, _ fire: @escaping @Sendable () -> Void) -> Timer {
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

  /// Queues `owner` to arm its timer within ``armingDelay``, with the others queued meanwhile;
  /// by then it may have no timer left to arm.
  func armSoon(_ owner: any DeferredTimer) {
    let isFirst = deferred.withLock { deferred in
      deferred.queued.append(owner)
      return deferred.queued.count == 1
    }
    // The first of a batch schedules the batch's arming; the rest join it.
    guard isFirst, !holdsBatches.load(ordering: .relaxed) else { return }
    _ = schedule(at: .now() + Self.armingDelay) { SharedTimers.shared.armDeferred() }
  }

  /// Stops arming batches by themselves, so that a test sees what waits in one; for a test's
  /// own process only, as every timer in the process is affected.
  func holdBatchesForTesting() { holdsBatches.store(true, ordering: .relaxed) }

  /// Arms every owner queued so far: the batch's timer, or a count that must see them.
  ///
  /// One batch at a time, under `arming`: a count that comes while a batch is being armed
  /// waits for it, and then sees every timer armed. Queueing takes only `deferred`, so it
  /// never waits for a batch. Arming takes the timers' lock and the runs' tokens' locks
  /// inside this one, and nothing takes this one inside them.
  func armDeferred() {
    arming.withLock { batches in
      var batch = deferred.withLock { deferred in
        // The spare, empty, takes the queue's place; only this lock's holder touches it.
        var batch: [any DeferredTimer] = []
        swap(&batch, &deferred.spare)
        swap(&batch, &deferred.queued)
        return batch
      }
      for owner in batch { owner.armDeferred() }
      if batch.capacity <= Self.keptCapacity {
        batch.removeAll(keepingCapacity: true)
        deferred.withLock { swap(&$0.spare, &batch) }
      }
      batches += 1
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

  /// Timers neither fired nor cancelled, those queued to be armed soon armed first; for tests.
  var pendingCount: Int {
    armDeferred()
    return state.withLock { $0.timers.count }
  }

  /// Timers neither fired nor cancelled and due after `deadline`; for tests, which pick a
  /// deadline no other test's timers reach, since every test shares these timers.
  func pendingCount(dueAfter deadline: DispatchTime) -> Int {
    armDeferred()
    return state.withLock { $0.timers.countDue(after: deadline.uptimeNanoseconds) }
  }
}

/// An owner of a timer that ``SharedTimers/armSoon(_:)`` arms later, in a batch.
protocol DeferredTimer: AnyObject, Sendable {
  /// Arms the timer now, unless it is no longer needed.
  func armDeferred()
}
