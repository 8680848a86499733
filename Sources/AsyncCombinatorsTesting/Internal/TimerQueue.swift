/// The pending entries of a `TestClock` by deadline, then by the order they were scheduled.
///
/// A binary min-heap of keys only. The entries themselves live in a dictionary, so a
/// cancelled entry is released at once and its key is skipped when it reaches the top.
struct TimerQueue<Instant: Comparable> {
  struct Key {
    let deadline: Instant
    let sequence: UInt64

    func precedes(_ other: Key) -> Bool {
      deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
    }
  }

  private var heap: [Key] = []

  var count: Int { heap.count }
  var first: Key? { heap.first }

  mutating func insert(_ key: Key) {
    heap.append(key)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].precedes(heap[parent]) else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  @discardableResult
  mutating func removeFirst() -> Key? {
    guard !heap.isEmpty else { return nil }
    heap.swapAt(0, heap.count - 1)
    let first = heap.removeLast()
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
      if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
      guard smallest != parent else { break }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
    return first
  }

  /// Keeps only the keys `isLive` accepts: drops the keys of cancelled entries in one pass.
  mutating func retain(where isLive: (Key) -> Bool) {
    let live = heap.filter(isLive)
    heap = []
    heap.reserveCapacity(live.count)
    for key in live { insert(key) }
  }
}
