import Synchronization

/// The gate of one `limit(_:)`: at most `limit` holders at once, the rest wait in FIFO order.
///
/// Waiting parks a closure, not a thread. A waiter whose run is cancelled leaves the queue
/// (its slot in the FIFO becomes a tombstone that the next grant skips). Grants happen in a
/// drain loop that at most one thread runs at a time, so a holder that finishes synchronously
/// inside its grant frees its slot without recursing into the next grant.
final class Admission: Sendable {
  /// A run waiting for a slot. Its `var`s are read and written only under the admission's
  /// lock, which is what makes it `@unchecked Sendable`; `start` is `nil` once the waiter was
  /// granted or cancelled, and the waiter is then a tombstone in the queue.
  ///
  /// It holds its gate so that its cancellation handler can capture the waiter alone, which
  /// needs no allocation of its own. Tombstones are dropped once no live waiter is left, so
  /// this holds the gate no longer than the waiting `start` closures do.
  private final class Waiter: @unchecked Sendable {
    let gate: Admission
    /// An ``Action``, so that taking it out under the lock wraps it in no thunk.
    var start: Action?
    var registration: CancellationToken.Registration?

    init(_ gate: Admission, _ start: @escaping @Sendable () -> Void) {
      self.gate = gate
      self.start = Action(start)
    }

    func cancel() { gate.cancel(self) }
  }

  private struct State {
    var holders = 0
    /// Waiters in arrival order from `head` on, tombstones among them. An object per waiter
    /// rather than an id into a table: cancelling one is then a store, not a hash lookup.
    var queue: [Waiter] = []
    var head = 0
    /// The waiters in `queue` that are not tombstones.
    var waitingCount = 0
    var isDraining = false

    mutating func append(_ waiter: Waiter) {
      queue.append(waiter)
      waitingCount += 1
    }

    /// The next live waiter's start, taken out of it, and its registration.
    mutating func popWaiter() -> (start: Action, CancellationToken.Registration?)? {
      while head < queue.count {
        let waiter = queue[head]
        head += 1
        if let start = waiter.start.take() {
          waitingCount -= 1
          return (start, waiter.registration.take())
        }
      }
      return nil
    }

    /// Takes a cancelled waiter's start out, leaving a tombstone.
    mutating func cancel(_ waiter: Waiter) -> Action? {
      guard let start = waiter.start.take() else { return nil }
      waitingCount -= 1
      waiter.registration = nil
      return start
    }

    /// Drops what the queue holds before `head`, and its tombstones once they are most of it,
    /// so that its size stays proportional to the waiters still waiting.
    mutating func compact() {
      if waitingCount == 0 {
        queue.removeAll(keepingCapacity: queue.count <= 64)
        head = 0
        return
      }
      let held = queue.count - head
      if head > 64 && head * 2 > queue.count {
        queue.removeFirst(head)
        head = 0
      }
      if held > 64 && held > 2 * waitingCount {
        queue = queue[head...].filter { $0.start != nil }
        head = 0
      }
    }
  }

  let limit: Int
  private let state = Locked(State())

  init(limit: Int) { self.limit = limit }

  /// How many entries the queue holds, tombstones included: what compaction bounds.
  var queuedEntries: Int { state.withLock { $0.queue.count - $0.head } }

  /// Calls `start` now if a slot is free and nobody is waiting, else when its turn comes.
  /// If `token` is cancelled first, `start` is released uncalled. Call ``leave()`` exactly
  /// once after `start` has run and its work is done.
  func enter(token: CancellationToken, _ start: @escaping @Sendable () -> Void) {
    let waiter = state.withLock { state -> Waiter? in
      if state.waitingCount == 0 && state.holders < limit {
        state.holders += 1
        return nil
      }
      let waiter = Waiter(self, start)
      state.append(waiter)
      return waiter
    }
    guard let waiter else { return start() }
    let registration = token.onCancel { waiter.cancel() }
    let isSettled = state.withLock { state in
      guard waiter.start != nil else { return true }
      waiter.registration = registration
      return false
    }
    // Granted or cancelled meanwhile: the handler has nothing left to guard.
    if isSettled { registration.remove() }
  }

  /// Frees a slot; the longest waiter, if any, gets it.
  func leave() {
    let drain = state.withLock { state in
      state.holders -= 1
      guard !state.isDraining, state.waitingCount > 0 else { return false }
      state.isDraining = true
      return true
    }
    if drain { grantWaiting() }
  }

  /// The drain loop: grants slots to waiters in order while slots are free.
  private func grantWaiting() {
    while true {
      let granted = state.withLock {
        state -> (Action, CancellationToken.Registration?)? in
        guard state.holders < limit, let next = state.popWaiter() else {
          state.isDraining = false
          state.compact()
          return nil
        }
        state.holders += 1
        return next
      }
      guard let (start, registration) = granted else { return }
      registration?.remove()
      start()
    }
  }

  private func cancel(_ waiter: Waiter) {
    let removed = state.withLock { state in
      defer { state.compact() }
      return state.cancel(waiter)
    }
    _ = removed  // Released outside the lock: releasing the closure may run deinits.
  }
}
