import Synchronization

/// A run waiting at an ``Admission`` for a slot: the object that will run is its own place in
/// the queue, so waiting allocates nothing beside it.
protocol AdmissionWaiter: AnyObject, Sendable {
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
/// the allocator's fastest bins only while it is small (see `LimitedRun`). So the input waits
/// in the queue beside it rather than in it, and the handler that turns it away is not its own
/// but its token's (see ``Admission``).
struct AdmissionPlace {
  /// The next waiter on the same token, in arrival order; it is in the queue, which keeps it.
  fileprivate unowned(unsafe) var nextInWatch: AnyObject?
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
/// The waiters on one token share one cancellation handler on it, a `Watch`, made when the
/// first of them queues and removed when the last leaves: inside a fold every element waits on
/// the fold's token, and a handler per waiter would take that token's lock, which every
/// element shares, twice per element. A cancellation turns the watch's waiters away together.
/// A watch lists its waiters in arrival order, as the queue does, so the waiter the queue
/// admits is always the first on its watch's list: leaving it is O(1), whatever the number
/// waiting.
///
/// Generic over the waiter, so that the queue holds the waiters themselves, not existentials
/// to open at every step; `limit`'s gate is specialized for its run type.
final class Admission<Waiter: AdmissionWaiter>: Sendable {
  /// The waiters queued on one token, and the one handler on it that turns them all away.
  ///
  /// Guarded by the gate's lock, which makes the `@unchecked Sendable` safe: the handler that
  /// holds it reads it only under that lock.
  private final class Watch: @unchecked Sendable {
    let token: ObjectIdentifier
    /// Its waiters in arrival order, linked through their places; the queue keeps them.
    unowned(unsafe) var first: Waiter?
    unowned(unsafe) var last: Waiter?
    /// The handler's id on the token, once registered.
    var registration: UInt64?
    /// In the gate's `watches`: false once its last waiter left or its token was cancelled.
    var isActive = true

    init(token: ObjectIdentifier) { self.token = token }
  }

  /// What ``enter(_:input:)`` found.
  private enum Entry {
    case admitted
    case queued
    /// Queued as the first waiter on its token: the watch's handler is still to register.
    case queuedWatching(Watch)
  }

  private struct State {
    var holders = 0
    /// Waiters in arrival order from `head` on, tombstones among them, each with the input it
    /// will start on. The waiter keeps its own place, so cancelling one is a store, not a
    /// search; a tombstone's input goes when compaction drops it.
    ///
    /// An admitted waiter is taken out of its entry, not copied: the entries behind `head` then
    /// hold no waiter that compaction, which runs under the gate's lock, would free there.
    var queue: [(waiter: Waiter?, input: AnyValue)] = []
    var head = 0
    /// The waiters in `queue` that are not tombstones.
    var waitingCount = 0
    var isDraining = false
    /// A watch per token that waiters in the queue wait on, by the token's identity: no other
    /// token can take that identity while the watch lives, since its waiters hold the token.
    var watches: [ObjectIdentifier: Watch] = [:]
    /// The watch used last: inside a fold, every waiter's, found without hashing.
    var recentWatch: Watch?

    private func watch(for token: ObjectIdentifier) -> Watch? {
      if let recent = recentWatch, recent.token == token { return recent }
      return watches[token]
    }

    /// Queues `waiter` on `input`, last on its token's watch: a new one if it is the first.
    mutating func enqueue(_ waiter: Waiter, _ input: AnyValue) -> Entry {
      queue.append((waiter, input))
      waitingCount += 1
      waiter.place.isWaiting = true
      let token = ObjectIdentifier(waiter.waitsOn)
      if let watch = watch(for: token) {
        watch.last!.place.nextInWatch = waiter
        watch.last = waiter
        return .queued
      }
      let watch = Watch(token: token)
      watch.first = waiter
      watch.last = waiter
      watches[token] = watch
      recentWatch = watch
      return .queuedWatching(watch)
    }

    /// Takes an admitted waiter, the first on its watch, off the watch; if it was the last
    /// there, ends the watch and returns its registration to remove.
    mutating func unwatch(_ waiter: Waiter) -> CancellationToken.Registration? {
      let watch = watch(for: ObjectIdentifier(waiter.waitsOn))!
      assert(watch.first === waiter, "the queue admits in arrival order, as watches list")
      waiter.place.isWaiting = false
      waitingCount -= 1
      let next = waiter.place.nextInWatch.map { unsafeDowncast($0, to: Waiter.self) }
      waiter.place.nextInWatch = nil
      watch.first = next
      guard next == nil else { return nil }
      watch.last = nil
      end(watch)
      return watch.registration.map { CancellationToken.Registration(on: waiter.waitsOn, id: $0) }
    }

    /// Takes `watch` out of the gate: its waiters have left, or are being turned away.
    mutating func end(_ watch: Watch) {
      watch.isActive = false
      watches[watch.token] = nil
      if recentWatch === watch { recentWatch = nil }
    }

    /// The next live waiter, out of the queue and its watch, with the watch's registration if
    /// it was the watch's last; its input is moved into `input`. Moved, not returned: an
    /// optional tuple holding an existential is copied through the runtime at each step out of
    /// the lock.
    mutating func popWaiter(
      input: inout AnyValue
    ) -> (Waiter, CancellationToken.Registration?)? {
      while head < queue.count {
        let index = head
        head += 1
        // Taken: the waiter's last reference, once its run is over, is then not the queue's.
        guard let waiter = queue[index].waiter.take() else { continue }
        if waiter.place.isWaiting {
          let registration = unwatch(waiter)
          swap(&input, &queue[index].input)  // The entry behind `head` holds nothing now.
          return (waiter, registration)
        }
      }
      return nil
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
        queue = queue[head...].filter { $0.waiter?.place.isWaiting == true }
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
  /// if its ``AdmissionWaiter/waitsOn`` token is cancelled first, it is turned away. An
  /// admitted waiter calls ``leave()`` exactly once, when its work is done.
  func enter(_ waiter: Waiter, input: AnyValue) {
    let entry = state.withLock { state -> Entry in
      if state.waitingCount == 0 && state.holders < limit {
        state.holders += 1
        return .admitted
      }
      return state.enqueue(waiter, input)
    }
    switch entry {
    case .admitted: waiter.admitted(input)
    case .queued: return
    case .queuedWatching(let watch):
      // Registered outside the lock: on a token cancelled already the handler runs at once.
      let registration = waiter.waitsOn.onCancel { self.turnAway(watch) }
      let hasEnded = state.withLock { _ in
        guard watch.isActive else { return true }
        watch.registration = registration.idOnToken
        return false
      }
      // Every waiter on it left, or was turned away, meanwhile: nothing left to guard.
      if hasEnded { registration.remove() }
    }
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

  /// The watch's token was cancelled: every waiter on it leaves the queue, turned away.
  private func turnAway(_ watch: Watch) {
    let turnedAway = state.withLock { state -> [Waiter] in
      guard watch.isActive else { return [] }
      state.end(watch)
      var waiters: [Waiter] = []
      var next = watch.first
      while let waiter = next {
        next = waiter.place.nextInWatch.map { unsafeDowncast($0, to: Waiter.self) }
        waiter.place.nextInWatch = nil
        waiter.place.isWaiting = false
        waiters.append(waiter)
      }
      watch.first = nil
      watch.last = nil
      state.waitingCount -= waiters.count
      state.compact()
      return waiters
    }
    for waiter in turnedAway { waiter.turnedAway() }
  }
}
