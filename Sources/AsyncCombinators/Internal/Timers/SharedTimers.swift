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
/// A long timer can also be armed later rather than at once (``armSoon(_:)``): its owner is
/// queued, and the owners queued within a millisecond are looked at together. Inside a fold
/// most runs finish within that millisecond, and their timers are then never armed at all,
/// where arming and disarming each took the timers' lock and a handler on the fold's token. An
/// owner still waiting for its result, with time to spare before its deadline, waits in the
/// next level's batch, four times as long, rather than arming: a fold wider than its workers
/// keep up with leaves a third of its runs going past their first millisecond, and arming
/// theirs made a 30-second timeout's fold 8,900 instructions an element against 6,700 now.
final class SharedTimers: Sendable {
  static let shared = SharedTimers()

  /// How long an owner waits at each level of ``armSoon(_:)``, in nanoseconds: 1 ms, then four
  /// times as long at each level, up to about a second. An owner whose deadline is nearer than
  /// four times the next level's wait is armed at once; one still waiting after the last level
  /// is armed then, 1.4 s after it was queued.
  static let levelWaits: [UInt64] = [1, 4, 16, 64, 256, 1_024].map { $0 * 1_000_000 }

  private struct State {
    var timers = DeadlineQueue<UInt64, Action>()
    /// The deadline the source is set for; `.max` when it is not set.
    var armedFor = UInt64.max
  }

  /// Owners waiting to arm their timers, by level, in the order they were queued, and the
  /// buffers each level's last batch was looked at from, kept empty for the next to queue
  /// into.
  ///
  /// Reusing the buffers matters more than it seems: a batch inside a wide fold holds a
  /// thousand owners, and growing a new buffer for every batch, then freeing it, made glibc
  /// consolidate its free lists each time (`malloc_consolidate` took 3% to 6% of a timed fold).
  private struct Deferred {
    var queued = [[any DeferredTimer]](repeating: [], count: SharedTimers.levelWaits.count)
    var spare = [[any DeferredTimer]](repeating: [], count: SharedTimers.levelWaits.count)
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

  /// Queues `owner` to be looked at within a millisecond, with the others queued meanwhile: by
  /// then it may have no timer left to arm, or time enough to wait longer (see
  /// ``levelWaits``).
  func armSoon(_ owner: any DeferredTimer) {
    let isFirst = deferred.withLock { deferred in
      deferred.queued[0].append(owner)
      return deferred.queued[0].count == 1
    }
    if isFirst { scheduleBatch(level: 0) }
  }

  /// The first owner queued at a level schedules the level's batch; the rest join it.
  private func scheduleBatch(level: Int) {
    guard !holdsBatches.load(ordering: .relaxed) else { return }
    let due = DispatchTime.now().uptimeNanoseconds + Self.levelWaits[level]
    _ = schedule(at: DispatchTime(uptimeNanoseconds: due)) {
      SharedTimers.shared.lookAtBatch(level: level)
    }
  }

  /// Stops batches from being looked at by themselves, so that a test sees what waits in one;
  /// for a test's own process only, as every timer in the process is affected.
  func holdBatchesForTesting() { holdsBatches.store(true, ordering: .relaxed) }

  /// Looks at every owner queued at `level`: one no longer waiting is let go, one whose
  /// deadline is at least four of the next level's waits away moves to that level, and the
  /// rest arm their timers.
  ///
  /// One batch at a time, under `arming`, as ``armDeferred()``. Moving owners on takes the
  /// queue's lock once for the whole batch; the lock hands each owner's deadline to the thread
  /// that looks at it next.
  func lookAtBatch(level: Int) {
    arming.withLock { batches in
      var batch = takeBatch(level: level)
      // Read after the batch was taken, so after every owner in it was queued.
      let now = DispatchTime.now().uptimeNanoseconds
      let isLast = level == Self.levelWaits.count - 1
      let waitsUntil = isLast ? UInt64.max : now + 4 * Self.levelWaits[level + 1]
      batch.removeAll { owner in
        guard let deadline = owner.deadline(queuedBefore: now) else { return true }
        guard deadline <= waitsUntil else { return false }  // Waits at the next level.
        owner.armDeferred()
        return true
      }
      if !batch.isEmpty {
        let isFirst = deferred.withLock { deferred in
          deferred.queued[level + 1].append(contentsOf: batch)
          return deferred.queued[level + 1].count == batch.count
        }
        if isFirst { scheduleBatch(level: level + 1) }
      }
      keepSpare(&batch, level: level)
      batches += 1
    }
  }

  /// Arms every owner queued so far, at every level: the batch's timer, or a count that must
  /// see them.
  ///
  /// One batch at a time, under `arming`: a count that comes while a batch is being looked
  /// at waits for it, and then sees every timer armed. Queueing takes only `deferred`, so it
  /// never waits for a batch. Arming takes the timers' lock and the runs' tokens' locks
  /// inside this one, and nothing takes this one inside them.
  func armDeferred() {
    arming.withLock { batches in
      for level in Self.levelWaits.indices {
        var batch = takeBatch(level: level)
        let now = DispatchTime.now().uptimeNanoseconds
        for owner in batch where owner.deadline(queuedBefore: now) != nil { owner.armDeferred() }
        keepSpare(&batch, level: level)
      }
      batches += 1
    }
  }

  /// The owners queued at `level`, with the level's spare buffer, empty, in their place; for
  /// the holder of `arming` alone.
  private func takeBatch(level: Int) -> [any DeferredTimer] {
    deferred.withLock { deferred in
      var batch: [any DeferredTimer] = []
      swap(&batch, &deferred.spare[level])
      swap(&batch, &deferred.queued[level])
      return batch
    }
  }

  /// Keeps a looked-at batch's buffer, emptied, for the level's next batch, unless a burst made
  /// it too large to hold on to.
  private func keepSpare(_ batch: inout [any DeferredTimer], level: Int) {
    guard batch.capacity <= Self.keptCapacity else { return }
    batch.removeAll(keepingCapacity: true)
    deferred.withLock { swap(&$0.spare[level], &batch) }
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

  /// Timers armed and neither fired nor cancelled, without arming those waiting in batches;
  /// for tests.
  var armedCount: Int { state.withLock { $0.timers.count } }

  /// Owners waiting in `level`'s batch; for tests.
  func waitingCount(level: Int) -> Int { deferred.withLock { $0.queued[level].count } }

  /// Timers neither fired nor cancelled and due after `deadline`; for tests, which pick a
  /// deadline no other test's timers reach, since every test shares these timers.
  func pendingCount(dueAfter deadline: DispatchTime) -> Int {
    armDeferred()
    return state.withLock { $0.timers.countDue(after: deadline.uptimeNanoseconds) }
  }
}

/// An owner of a timer that ``SharedTimers/armSoon(_:)`` arms later, in a batch.
protocol DeferredTimer: AnyObject, Sendable {
  /// When the timer is due, in uptime nanoseconds, given that its owner was queued before
  /// `now`; `nil` once it is no longer needed. The first batch to ask fixes the deadline.
  func deadline(queuedBefore now: UInt64) -> UInt64?

  /// Arms the timer for the deadline fixed by ``deadline(queuedBefore:)``, unless it is no
  /// longer needed.
  func armDeferred()
}
