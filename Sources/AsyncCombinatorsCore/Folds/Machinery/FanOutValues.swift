import AsyncCombinatorsKernel
import Synchronization

/// The outputs of a fold's elements by index: each slot is written at most once, by the
/// element's own completion, and read only once the fold has finished.
///
/// Not `[AnyValue?]`, which a fold, running unspecialized, would handle through the runtime at
/// every slot: Performance.md, "What the code's shape buys, and the check that holds it". The
/// slots are the kernel's `WriteOnceSlots`, whose discipline makes the `@unchecked Sendable`
/// safe: its slots are its only state.
final class FanOutValues: @unchecked Sendable {
  private let slots: WriteOnceSlots<AnyValue>

  init(count: Int) {
    slots = WriteOnceSlots(count: count)
  }

  var count: Int { slots.count }

  /// Moves the output of element `index` in; once per index.
  func store(_ value: consuming AnyValue, at index: Int) {
    slots.store(value, at: index)
  }

  /// The output of element `index`, unboxed, or `nil` if it has none (it failed).
  func value<Value>(at index: Int, as _: Value.Type = Value.self) -> Value? {
    slots.isWritten(index) ? unbox(slots[index], as: Value.self) : nil
  }

  /// The outputs that are there, unboxed, in order: a fold's, whose failed elements left none.
  ///
  /// A loop over indices rather than `compactMap`, for the same reason as the slots.
  func unboxPresent<Value>(as _: Value.Type = Value.self) -> [Value] {
    var present = 0
    for index in 0..<count where slots.isWritten(index) { present += 1 }
    return Array(unsafeUninitializedCapacity: present) { buffer, initialized in
      // Bounded by the count as well: every element has reported by the time this runs, but a
      // buffer overrun is not a price to pay for trusting that.
      for index in 0..<count where initialized < present && slots.isWritten(index) {
        (buffer.baseAddress! + initialized).initialize(to: unbox(slots[index], as: Value.self))
        initialized += 1
      }
    }
  }
}
