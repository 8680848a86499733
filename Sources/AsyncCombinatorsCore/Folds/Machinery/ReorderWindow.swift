import AsyncCombinatorsKernel

/// The elements of an ordered stream between the oldest one not yet yielded and the newest one
/// pulled, each slot addressed by the element's position in the source.
///
/// A ring whose capacity is a power of two, grown by doubling: the stream bounds how many
/// slots are live (twice its limit), so the ring stops growing after a few doublings and every
/// operation is O(1).
///
/// A class, so that the state machine mutates it in place; `@unchecked Sendable` because it is
/// only ever used as part of the stream's state machine, behind the storage's lock.
final class ReorderWindow: @unchecked Sendable {
  enum Mark: UInt8 {
    /// The element is still running.
    case running
    /// The element succeeded; its output waits for the earlier ones.
    case value
    /// The element failed within the tolerance; the stream skips it.
    case skipped
  }

  /// Each slot's mark, and its output when the mark is `value`: apart, so that reading a mark
  /// copies no output.
  private var marks = ContiguousArray(repeating: Mark.skipped, count: 8)
  private var values = ContiguousArray<AnyValue?>(repeating: nil, count: 8)
  /// The ring position of the first slot.
  private var start = 0
  /// How many slots are live.
  private(set) var count = 0
  /// The source position of the first slot.
  private(set) var firstIndex = 0

  private var mask: Int { marks.count - 1 }

  /// The first slot's mark, or `nil` when no slot is live.
  var first: Mark? { count == 0 ? nil : marks[start] }

  /// Adds the slot of the next element pulled, which is element `firstIndex + count`: running.
  func appendRunning() {
    if count == marks.count { grow() }
    marks[(start + count) & mask] = .running
    count += 1
  }

  /// The element at `index` in the source, which must be live and running, succeeded.
  func setValue(_ value: consuming AnyValue, at index: Int) {
    let position = (start + index - firstIndex) & mask
    values[position] = value
    marks[position] = .value
  }

  /// The element at `index` in the source, which must be live and running, is skipped.
  func setSkipped(at index: Int) {
    marks[(start + index - firstIndex) & mask] = .skipped
  }

  /// Removes the first slot, which must hold a value, and returns the value.
  func removeFirstValue() -> AnyValue {
    precondition(first == .value, "ReorderWindow: the first slot holds no value")
    let value = values[start].take()!
    dropFirst()
    return value
  }

  /// Removes the first slot, whatever it holds.
  func removeFirst() {
    values[start] = nil
    dropFirst()
  }

  /// Drops every slot, keeping the positions counting on.
  func removeAll() {
    while count > 0 { removeFirst() }
  }

  private func dropFirst() {
    start = (start + 1) & mask
    count -= 1
    firstIndex += 1
  }

  /// Doubles the ring, its live slots first.
  private func grow() {
    let larger = marks.count * 2
    var newMarks = ContiguousArray(repeating: Mark.skipped, count: larger)
    var newValues = ContiguousArray<AnyValue?>(repeating: nil, count: larger)
    for offset in 0..<count {
      let old = (start + offset) & mask
      newMarks[offset] = marks[old]
      newValues[offset] = values[old].take()
    }
    marks = newMarks
    values = newValues
    start = 0
  }
}
