import Dispatch

/// Every pending library timer on the default clock, behind one Dispatch timer source.
///
/// A `DispatchQueue.asyncAfter` per `timeout` cost more than the work it bounded, and Dispatch
/// keeps a cancelled item in its own timer heap until the deadline: 100,000 elements each
/// bounded by a 30-second timeout left 100,000 items there. Here a timer is an entry in a
/// min-heap ordered by deadline (ties by scheduling order) and a closure in a table; the one
/// source is set for the earliest deadline. Cancelling takes the closure out of the table at
/// once (so a cancelled wait holds nothing of its run) and leaves a tombstone in the heap,
/// which the next firing skips; the heap is rebuilt from its live entries when tombstones
/// outnumber them, so its size stays proportional to the timers still pending.
///
/// Due timers fire on a global queue, one `async` each, as `asyncAfter` did: the source's own
/// queue only takes them out of the heap.
final class SharedTimers: Sendable {
  static let shared = SharedTimers()

  private struct Entry {
    let deadline: UInt64
    let id: UInt64

    func precedes(_ other: Entry) -> Bool {
      deadline != other.deadline ? deadline < other.deadline : id < other.id
    }
  }

  private struct State {
    var heap: [Entry] = []
    var pending: [UInt64: @Sendable () -> Void] = [:]
    var nextID: UInt64 = 1
    /// The deadline the source is set for; `.max` when it is idle.
    var armedFor = UInt64.max

    mutating func push(_ entry: Entry) {
      heap.append(entry)
      var child = heap.count - 1
      while child > 0 {
        let parent = (child - 1) / 2
        guard heap[child].precedes(heap[parent]) else { break }
        heap.swapAt(child, parent)
        child = parent
      }
    }

    mutating func popFirst() -> Entry? {
      guard !heap.isEmpty else { return nil }
      heap.swapAt(0, heap.count - 1)
      let first = heap.removeLast()
      siftDown(from: 0)
      return first
    }

    mutating func siftDown(from start: Int) {
      var parent = start
      while true {
        let (left, right) = (2 * parent + 1, 2 * parent + 2)
        var first = parent
        if left < heap.count, heap[left].precedes(heap[first]) { first = left }
        if right < heap.count, heap[right].precedes(heap[first]) { first = right }
        guard first != parent else { return }
        heap.swapAt(parent, first)
        parent = first
      }
    }

    /// Drops tombstones once they outnumber the live entries, keeping the heap O(pending).
    mutating func compactIfMostlyTombstones() {
      guard heap.count > 64, heap.count > 2 * pending.count else { return }
      heap.removeAll { pending[$0.id] == nil }
      for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }
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
  struct Timer: Cancellable {
    fileprivate let id: UInt64
    func cancel() { SharedTimers.shared.cancel(id) }
  }

  /// Calls `fire` on a global queue once `deadline` has passed, unless cancelled first.
  func schedule(at deadline: DispatchTime, _ fire: @escaping @Sendable () -> Void) -> Timer {
    let due = deadline.uptimeNanoseconds
    return state.withLock { state in
      let id = state.nextID
      state.nextID += 1
      state.pending[id] = fire
      state.push(Entry(deadline: due, id: id))
      if due < state.armedFor {
        state.armedFor = due
        source.schedule(deadline: DispatchTime(uptimeNanoseconds: due), leeway: .nanoseconds(0))
      }
      return Timer(id: id)
    }
  }

  private func cancel(_ id: UInt64) {
    // Released outside the lock: releasing the closure may run deinits.
    let removed = state.withLock { state -> (@Sendable () -> Void)? in
      defer { state.compactIfMostlyTombstones() }
      return state.pending.removeValue(forKey: id)
    }
    _ = removed
  }

  /// The source fired: hands every due timer to a global queue and sets the source for the
  /// next deadline.
  private func fireDue() {
    let due = state.withLock { state -> [@Sendable () -> Void] in
      let now = DispatchTime.now().uptimeNanoseconds
      var due: [@Sendable () -> Void] = []
      while let first = state.heap.first, first.deadline <= now {
        _ = state.popFirst()
        if let fire = state.pending.removeValue(forKey: first.id) { due.append(fire) }
      }
      state.armedFor = state.heap.first?.deadline ?? .max
      if state.armedFor != .max {
        source.schedule(
          deadline: DispatchTime(uptimeNanoseconds: state.armedFor), leeway: .nanoseconds(0))
      }
      return due
    }
    for fire in due { DispatchQueue.global().async(execute: fire) }
  }

  /// Timers neither fired nor cancelled; for tests.
  var pendingCount: Int { state.withLock { $0.pending.count } }
}
