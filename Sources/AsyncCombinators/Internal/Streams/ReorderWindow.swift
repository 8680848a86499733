/// The elements of an ordered stream between the oldest one not yet yielded and the newest one
/// pulled, each slot addressed by the element's position in the source.
///
/// A ring whose capacity is a power of two, grown by doubling: the stream bounds how many
/// slots are live (twice its limit), so the ring stops growing after a few doublings and every
/// operation is O(1).
struct ReorderWindow: Sendable {
  enum Slot: Sendable {
    /// The element is still running.
    case running
    /// The element succeeded; its output waits for the earlier ones.
    case value(AnyValue)
    /// The element failed within the tolerance; the stream skips it.
    case skipped
  }

  private var ring: [Slot] = Array(repeating: .skipped, count: 8)
  /// The ring position of the first slot.
  private var start = 0
  /// How many slots are live.
  private(set) var count = 0
  /// The source position of the first slot.
  private(set) var firstIndex = 0

  var first: Slot? { count == 0 ? nil : ring[start] }

  /// Adds the slot of the next element pulled, which is element `firstIndex + count`.
  mutating func append(_ slot: Slot) {
    if count == ring.count { grow() }
    ring[(start + count) & (ring.count - 1)] = slot
    count += 1
  }

  /// Sets the slot of the element at `index` in the source, which must be live.
  mutating func set(_ slot: Slot, at index: Int) {
    ring[(start + index - firstIndex) & (ring.count - 1)] = slot
  }

  /// Removes the first slot and returns it.
  mutating func removeFirst() -> Slot {
    let slot = ring[start]
    ring[start] = .skipped  // releases the output
    start = (start + 1) & (ring.count - 1)
    count -= 1
    firstIndex += 1
    return slot
  }

  /// Drops every slot, keeping the positions counting on.
  mutating func removeAll() {
    while count > 0 { _ = removeFirst() }
  }

  private mutating func grow() {
    var larger = [Slot](repeating: .skipped, count: ring.count * 2)
    for offset in 0..<count { larger[offset] = ring[(start + offset) & (ring.count - 1)] }
    ring = larger
    start = 0
  }
}
