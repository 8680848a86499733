/// Items due at instants, taken earliest first (ties in the order they were scheduled), each
/// cancellable by the id that scheduling it returned: the library's shared timers and the
/// testing module's `TestClock` both keep their timers in one.
///
/// A binary min-heap of keys sits beside a slab of the items still pending: a slot per item,
/// reused through a free list, so that finding an item by its id is an index, not a hash.
/// Cancelling takes the item out of its slot at once, so it holds nothing it captured, and
/// leaves its key in the heap as a tombstone that taking skips (a slot's generation tells a
/// key of its current item from one of an earlier item). Once tombstones outnumber the live
/// keys the heap is rebuilt from the live ones, so it never grows beyond twice the pending
/// items (or 64), whatever order timers are cancelled in.
///
/// - Complexity: Scheduling, cancelling and taking are O(log *n*) amortized for *n* pending.
package struct DeadlineQueue<Instant: Comparable, Item> {
  private struct Key {
    let deadline: Instant
    /// Scheduling order, for ties.
    let sequence: UInt64
    let slot: Int32
    let generation: UInt32

    func precedes(_ other: Key) -> Bool {
      deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
    }
  }

  private struct Slot {
    var item: Item?
    /// Bumped each time the slot is freed, so that ids and keys of earlier items miss.
    var generation: UInt32 = 0
    var nextFree: Int32 = -1
  }

  private var heap: [Key] = []
  private var slots: [Slot] = []
  private var firstFree: Int32 = -1
  private var nextSequence: UInt64 = 0
  private(set) package var count = 0

  package init() {}

  /// How many keys the heap holds, tombstones included: what the rebuilding bounds.
  package var keysHeld: Int { heap.count }

  /// Queues `item` to be due at `deadline`, and returns the id that cancels it.
  package mutating func schedule(_ item: Item, at deadline: Instant) -> UInt64 {
    let slot: Int32
    if firstFree >= 0 {
      slot = firstFree
      firstFree = slots[Int(slot)].nextFree
      slots[Int(slot)].item = item
    } else {
      slot = Int32(slots.count)
      slots.append(Slot(item: item))
    }
    count += 1
    let generation = slots[Int(slot)].generation
    push(Key(deadline: deadline, sequence: nextSequence, slot: slot, generation: generation))
    nextSequence += 1
    return UInt64(generation) << 32 | UInt64(UInt32(slot))
  }

  /// Takes the item `id` out, or returns `nil` if it was taken or cancelled already.
  package mutating func cancel(_ id: UInt64) -> Item? {
    let slot = Int32(truncatingIfNeeded: id & 0xFFFF_FFFF)
    let generation = UInt32(truncatingIfNeeded: id >> 32)
    guard slot >= 0, Int(slot) < slots.count, slots[Int(slot)].generation == generation,
      let item = take(slot)
    else { return nil }
    if heap.count > 64 && heap.count > 2 * count { rebuildFromLiveKeys() }
    return item
  }

  /// Takes the earliest pending item if it is due by `limit`.
  package mutating func takeFirst(dueBy limit: Instant) -> (deadline: Instant, item: Item)? {
    while let first = heap.first, first.deadline <= limit {
      popFirst()
      if isLive(first), let item = take(first.slot) { return (first.deadline, item) }
    }
    return nil
  }

  /// The deadline of the earliest pending item, or `nil` when nothing is pending; tombstones
  /// on top of the heap are dropped on the way.
  package mutating func nextDeadline() -> Instant? {
    while let first = heap.first {
      if isLive(first) { return first.deadline }
      popFirst()
    }
    return nil
  }

  /// How many pending items are due after `instant` (and before `end`, when given); for tests.
  package func countDue(after instant: Instant, before end: Instant? = nil) -> Int {
    heap.lazy.filter { key in
      self.isLive(key) && key.deadline > instant && (end.map { key.deadline < $0 } ?? true)
    }.count
  }

  // MARK: The slab

  /// Whether `key` is its slot's current item: taking an item out bumps the generation.
  private func isLive(_ key: Key) -> Bool {
    slots[Int(key.slot)].generation == key.generation
  }

  /// Empties `slot` and puts it on the free list.
  private mutating func take(_ slot: Int32) -> Item? {
    guard let item = slots[Int(slot)].item.take() else { return nil }
    slots[Int(slot)].generation &+= 1
    slots[Int(slot)].nextFree = firstFree
    firstFree = slot
    count -= 1
    return item
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
    let slots = slots
    heap.removeAll { slots[Int($0.slot)].generation != $0.generation }
    for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
  }
}
