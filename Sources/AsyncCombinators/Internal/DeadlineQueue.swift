/// Items due at instants, taken earliest first (ties in the order they were scheduled), each
/// cancellable by the id that scheduling it returned: the library's shared timers and the
/// testing module's `TestClock` both keep their timers in one.
///
/// A binary min-heap of keys sits beside a table of the items still pending. Cancelling takes
/// the item out of the table at once, so it holds nothing it captured, and leaves its key in
/// the heap as a tombstone that taking skips. Once tombstones outnumber the live keys the heap
/// is rebuilt from the live ones, so it never grows beyond twice the pending items (or 64),
/// whatever order timers are cancelled in.
///
/// - Complexity: Scheduling, cancelling and taking are O(log *n*) amortized for *n* pending.
package struct DeadlineQueue<Instant: Comparable, Item> {
  private struct Key {
    let deadline: Instant
    let id: UInt64

    func precedes(_ other: Key) -> Bool {
      deadline < other.deadline || (deadline == other.deadline && id < other.id)
    }
  }

  private var heap: [Key] = []
  private var items: [UInt64: Item] = [:]
  private var nextID: UInt64 = 0

  package init() {}

  /// How many items are pending: neither taken nor cancelled.
  package var count: Int { items.count }

  /// How many keys the heap holds, tombstones included: what the rebuilding bounds.
  var keysHeld: Int { heap.count }

  /// Queues `item` to be due at `deadline`, and returns the id that cancels it.
  package mutating func schedule(_ item: Item, at deadline: Instant) -> UInt64 {
    let id = nextID
    nextID += 1
    items[id] = item
    push(Key(deadline: deadline, id: id))
    return id
  }

  /// Takes the item `id` out, or returns `nil` if it was taken or cancelled already.
  package mutating func cancel(_ id: UInt64) -> Item? {
    let item = items.removeValue(forKey: id)
    if heap.count > 64 && heap.count > 2 * items.count { rebuildFromLiveKeys() }
    return item
  }

  /// Takes the earliest pending item if it is due by `limit`.
  package mutating func takeFirst(dueBy limit: Instant) -> (deadline: Instant, item: Item)? {
    while let first = heap.first, first.deadline <= limit {
      popFirst()
      if let item = items.removeValue(forKey: first.id) { return (first.deadline, item) }
    }
    return nil
  }

  /// The deadline of the earliest pending item, or `nil` when nothing is pending; tombstones
  /// on top of the heap are dropped on the way.
  package mutating func nextDeadline() -> Instant? {
    while let first = heap.first {
      if items[first.id] != nil { return first.deadline }
      popFirst()
    }
    return nil
  }

  // MARK: The heap

  private mutating func push(_ key: Key) {
    heap.append(key)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private mutating func popFirst() {
    heap.swapAt(0, heap.count - 1)
    heap.removeLast()
    siftDown(from: 0)
  }

  private mutating func siftDown(from start: Int) {
    var parent = start
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var first = parent
      if left < heap.count, heap[left].precedes(heap[first]) { first = left }
      if right < heap.count, heap[right].precedes(heap[first]) { first = right }
      guard first != parent else { return }
      heap.swapAt(parent, first)
      parent = first
    }
  }

  private mutating func rebuildFromLiveKeys() {
    heap.removeAll { items[$0.id] == nil }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
  }
}
