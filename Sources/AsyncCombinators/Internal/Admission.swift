import Synchronization

/// The gate of one `limit(_:)`: at most `limit` holders at once, the rest wait in FIFO order.
///
/// Waiting parks a closure, not a thread. A waiter whose run is cancelled leaves the queue
/// (its slot in the FIFO becomes a tombstone that the next grant skips). Grants happen in a
/// drain loop that at most one thread runs at a time, so a holder that finishes synchronously
/// inside its grant frees its slot without recursing into the next grant.
final class Admission: Sendable {
  private struct Waiter {
    let start: @Sendable () -> Void
    var registration: CancellationToken.Registration?
  }

  private struct State {
    var holders = 0
    /// Waiter ids in arrival order from `head` on; ids no longer in `waiting` are tombstones.
    var queue: [Int] = []
    var head = 0
    var waiting: [Int: Waiter] = [:]
    var nextID = 0
    var isDraining = false

    mutating func popWaiter() -> Waiter? {
      while head < queue.count {
        defer { head += 1 }
        if let waiter = waiting.removeValue(forKey: queue[head]) { return waiter }
      }
      return nil
    }

    mutating func compact() {
      if head > 64 && head * 2 > queue.count {
        queue.removeFirst(head)
        head = 0
      }
    }
  }

  let limit: Int
  private let state = Locked(State())

  init(limit: Int) { self.limit = limit }

  /// Calls `start` now if a slot is free and nobody is waiting, else when its turn comes.
  /// Call ``leave()`` exactly once after `start` has run and its work is done.
  func enter(token: CancellationToken, _ start: @escaping @Sendable () -> Void) {
    let id = state.withLock { state -> Int? in
      if state.waiting.isEmpty && state.holders < limit {
        state.holders += 1
        return nil
      }
      defer { state.nextID += 1 }
      state.queue.append(state.nextID)
      state.waiting[state.nextID] = Waiter(start: start)
      return state.nextID
    }
    guard let id else { return start() }
    let registration = token.onCancel { self.cancelWaiter(id) }
    let isSettled = state.withLock { state in
      guard state.waiting[id] != nil else { return true }
      state.waiting[id]!.registration = registration
      return false
    }
    // Granted or cancelled meanwhile: the handler has nothing left to guard.
    if isSettled { registration.remove() }
  }

  /// Frees a slot; the longest waiter, if any, gets it.
  func leave() {
    let drain = state.withLock { state in
      state.holders -= 1
      guard !state.isDraining, !state.waiting.isEmpty else { return false }
      state.isDraining = true
      return true
    }
    if drain { grantWaiting() }
  }

  private func grantWaiting() {
    while true {
      let waiter = state.withLock { state -> Waiter? in
        guard state.holders < limit, let waiter = state.popWaiter() else {
          state.isDraining = false
          state.compact()
          return nil
        }
        state.holders += 1
        return waiter
      }
      guard let waiter else { return }
      waiter.registration?.remove()
      waiter.start()
    }
  }

  private func cancelWaiter(_ id: Int) {
    let removed = state.withLock { state in state.waiting.removeValue(forKey: id) }
    _ = removed  // Released outside the lock: releasing the closure may run deinits.
  }
}
