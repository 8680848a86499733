import Synchronization

/// A run waiting at an ``Admission`` for a slot: the object that will run is its own place in
/// the queue, so waiting allocates nothing beside it.
protocol AdmissionWaiter: AnyObject, Sendable {
  /// The gate it waits at.
  var gate: Admission<Self> { get }
  /// Its place in the queue; read and written only under the gate's lock.
  var place: AdmissionPlace { get set }
  /// The token whose cancellation turns it away while it waits.
  var waitsOn: CancellationToken { get }
  /// It has a slot: start now on `input`, and call the gate's ``Admission/leave()`` once done.
  func admitted(_ input: AnyValue)
  /// Its run was cancelled while it waited: it leaves without a slot, and must report so.
  func turnedAway()
}

/// Where an ``AdmissionWaiter`` stands, kept in the waiter and guarded by the gate's lock.
///
/// Small on purpose: the waiter is made on one thread and freed on another, and it stays within
/// the allocator's fastest bins only while it is small (see `LimitedRun`). So the handler that
/// turns it away is kept as its id on ``AdmissionWaiter/waitsOn``, and the input waits in the
/// queue beside it rather than in it.
struct AdmissionPlace {
  fileprivate var registration: UInt64?
  /// In the queue, neither admitted nor turned away; a waiter that is not is a tombstone.
  fileprivate var isWaiting = false

  init() {}
}

/// The gate of one `limit(_:)`: at most `limit` holders at once, the rest wait in FIFO order.
///
/// Waiting parks an object, not a thread. A waiter whose run is cancelled leaves the queue at
/// once (its entry becomes a tombstone that the next grant skips) and is turned away. Grants
/// happen in a drain loop that at most one thread runs at a time, so a holder that finishes
/// synchronously inside its grant frees its slot without recursing into the next grant.
///
/// Generic over the waiter, so that the queue holds the waiters themselves, not existentials
/// to open at every step; `limit`'s gate is specialized for its run type.
final class Admission<Waiter: AdmissionWaiter>: Sendable {
  private struct State {
    var holders = 0
    /// Waiters in arrival order from `head` on, tombstones among them, each with the input it
    /// will start on. The waiter keeps its own place, so cancelling one is a store, not a
    /// search; a tombstone's input goes when compaction drops it.
    var queue: [(waiter: Waiter, input: AnyValue)] = []
    var head = 0
    /// The waiters in `queue` that are not tombstones.
    var waitingCount = 0
    var isDraining = false

    /// The next live waiter, out of the queue, with its registration; its input is moved into
    /// `input`. Moved, not returned: an optional tuple holding an existential is copied
    /// through the runtime at each step out of the lock.
    mutating func popWaiter(
      input: inout AnyValue
    ) -> (Waiter, CancellationToken.Registration?)? {
      while head < queue.count {
        let waiter = queue[head].waiter
        let index = head
        head += 1
        if waiter.place.isWaiting {
          waiter.place.isWaiting = false
          waitingCount -= 1
          swap(&input, &queue[index].input)  // The entry behind `head` holds nothing now.
          let registration = waiter.place.registration.take().map {
            CancellationToken.Registration(on: waiter.waitsOn, id: $0)
          }
          return (waiter, registration)
        }
      }
      return nil
    }

    /// Takes a cancelled waiter out, leaving a tombstone; `false` if it had left already.
    mutating func cancel(_ waiter: Waiter) -> Bool {
      guard waiter.place.isWaiting else { return false }
      waiter.place.isWaiting = false
      waiter.place.registration = nil
      waitingCount -= 1
      compact()
      return true
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
        queue = queue[head...].filter { $0.waiter.place.isWaiting }
        head = 0
      }
    }
  }

  let limit: Int
  private let state = Locked(State())

  init(limit: Int) { self.limit = limit }

  /// How many entries the queue holds, tombstones included: what compaction bounds.
  var queuedEntries: Int { state.withLock { $0.queue.count - $0.head } }

  /// Admits `waiter` now if a slot is free and nobody is waiting, else when its turn comes;
  /// if its ``AdmissionWaiter/waitsOn`` token is cancelled first, it is turned away. An admitted waiter calls ``leave()``
  /// exactly once, when its work is done.
  func enter(_ waiter: Waiter, input: AnyValue) {
    let queued = state.withLock { state -> Bool in
      if state.waitingCount == 0 && state.holders < limit {
        state.holders += 1
        return false
      }
      waiter.place.isWaiting = true
      state.queue.append((waiter, input))
      state.waitingCount += 1
      return true
    }
    guard queued else { return waiter.admitted(input) }
    // Captures the waiter alone, which needs no allocation of its own.
    let registration = waiter.waitsOn.onCancel { waiter.gate.cancel(waiter) }
    let isSettled = state.withLock { state in
      guard waiter.place.isWaiting else { return true }
      waiter.place.registration = registration.idOnToken
      return false
    }
    // Admitted or turned away meanwhile: the handler has nothing left to guard.
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
    if drain { admitWaiting() }
  }

  /// The drain loop: admits waiters in order while slots are free.
  private func admitWaiting() {
    while true {
      var input: AnyValue = ()
      let admitted = state.withLock {
        state -> (Waiter, CancellationToken.Registration?)? in
        guard state.holders < limit, let next = state.popWaiter(input: &input) else {
          state.isDraining = false
          state.compact()
          return nil
        }
        state.holders += 1
        return next
      }
      guard let (waiter, registration) = admitted else { return }
      registration?.remove()
      waiter.admitted(input)
    }
  }

  private func cancel(_ waiter: Waiter) {
    if state.withLock({ $0.cancel(waiter) }) { waiter.turnedAway() }
  }
}
