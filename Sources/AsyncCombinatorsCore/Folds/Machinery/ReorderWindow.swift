import AsyncCombinatorsKernel

/// The elements of an ordered stream between the oldest one not yet yielded and the newest one
/// pulled, each slot addressed by the element's position in the source.
///
/// A ring whose capacity is a power of two, grown by doubling: the stream bounds how many
/// slots are live (twice its limit), so the ring stops growing after a few doublings and every
/// operation is O(1).
///
/// Raw memory rather than an array of an enum with an existential payload: the stream runs
/// unspecialized, where every copy, assignment and destruction of such an enum goes through
/// the runtime's value witnesses. A slot is a mark and, when the mark says so, a value moved
/// in and out.
///
/// A class so that it can free what it holds; `@unchecked Sendable` because it is only ever
/// used as part of the stream's state machine, behind the storage's lock.
final class ReorderWindow: @unchecked Sendable {
  enum Mark: UInt8 {
    /// The element is still running.
    case running
    /// The element succeeded; its output waits for the earlier ones.
    case value
    /// The element failed within the tolerance; the stream skips it.
    case skipped
  }

  private var marks: UnsafeMutablePointer<Mark>
  private var values: UnsafeMutablePointer<AnyValue>
  private var capacity = 8
  /// The ring position of the first slot.
  private var start = 0
  /// How many slots are live.
  private(set) var count = 0
  /// The source position of the first slot.
  private(set) var firstIndex = 0

  init() {
    marks = .allocate(capacity: capacity)
    values = .allocate(capacity: capacity)
  }

  deinit {
    removeAll()
    marks.deallocate()
    values.deallocate()
  }

  /// The first slot's mark, or `nil` when no slot is live.
  var first: Mark? { count == 0 ? nil : marks[start] }

  /// Adds the slot of the next element pulled, which is element `firstIndex + count`: running.
  func appendRunning() {
    if count == capacity { grow() }
    marks[(start + count) & (capacity - 1)] = .running
    count += 1
  }

  /// The element at `index` in the source, which must be live and running, succeeded.
  func setValue(_ value: consuming AnyValue, at index: Int) {
    let position = (start + index - firstIndex) & (capacity - 1)
    (values + position).initialize(to: value)
    marks[position] = .value
  }

  /// The element at `index` in the source, which must be live and running, is skipped.
  func setSkipped(at index: Int) {
    marks[(start + index - firstIndex) & (capacity - 1)] = .skipped
  }

  /// Removes the first slot, which must hold a value, and returns the value.
  func removeFirstValue() -> AnyValue {
    precondition(first == .value, "ReorderWindow: the first slot holds no value")
    let value = (values + start).move()
    dropFirst()
    return value
  }

  /// Removes the first slot, whatever it holds.
  func removeFirst() {
    if marks[start] == .value { (values + start).deinitialize(count: 1) }
    dropFirst()
  }

  /// Drops every slot, keeping the positions counting on.
  func removeAll() {
    while count > 0 { removeFirst() }
  }

  private func dropFirst() {
    start = (start + 1) & (capacity - 1)
    count -= 1
    firstIndex += 1
  }

  private func grow() {
    let larger = capacity * 2
    let newMarks = UnsafeMutablePointer<Mark>.allocate(capacity: larger)
    let newValues = UnsafeMutablePointer<AnyValue>.allocate(capacity: larger)
    for offset in 0..<count {
      let old = (start + offset) & (capacity - 1)
      newMarks[offset] = marks[old]
      if marks[old] == .value { (newValues + offset).moveInitialize(from: values + old, count: 1) }
    }
    marks.deallocate()
    values.deallocate()
    marks = newMarks
    values = newValues
    capacity = larger
    start = 0
  }
}
