import AsyncCombinatorsKernel
import Synchronization

/// The outputs of a fold's elements by index: each slot is written at most once, by the
/// element's own completion, and read only once the fold has finished.
///
/// Not `[AnyValue?]`: a fold runs unspecialized, where every optional filled with `nil`,
/// assigned, copied out and destroyed goes through the runtime's value witnesses. Here a slot
/// is raw memory that a value is moved into, beside a byte that says it is there.
///
/// `@unchecked Sendable`: each slot is written by one thread only, the one that completes that
/// element, once, before it sets the slot's flag with a release; every read of a slot, the
/// deinitializer's included, first loads its flag with an acquire. Slots are distinct memory,
/// so completions on different threads never touch the same bytes.
final class FanOutValues: @unchecked Sendable {
  let count: Int
  private let slots: UnsafeMutablePointer<AnyValue>
  private let flags: UnsafeMutablePointer<Atomic<Bool>>

  init(count: Int) {
    self.count = count
    slots = .allocate(capacity: count)
    flags = .allocate(capacity: count)
    for index in 0..<count { (flags + index).initialize(to: Atomic(false)) }
  }

  deinit {
    for index in 0..<count where isPresent(index) { (slots + index).deinitialize(count: 1) }
    flags.deinitialize(count: count)
    slots.deallocate()
    flags.deallocate()
  }

  private func isPresent(_ index: Int) -> Bool {
    flags[index].load(ordering: .acquiring)
  }

  /// Moves the output of element `index` in; once per index.
  func store(_ value: consuming AnyValue, at index: Int) {
    (slots + index).initialize(to: value)
    flags[index].store(true, ordering: .releasing)
  }

  /// The output of element `index`, unboxed, or `nil` if it has none (it failed).
  func value<Value>(at index: Int, as _: Value.Type = Value.self) -> Value? {
    isPresent(index) ? unbox(slots[index], as: Value.self) : nil
  }

  /// The outputs that are there, unboxed, in order: a fold's, whose failed elements left none.
  ///
  /// A loop over pointers rather than `compactMap`: a fold is generic over its element type and
  /// runs unspecialized, and there `compactMap` asks the runtime for the result's type metadata
  /// once per element.
  func unboxPresent<Value>(as _: Value.Type = Value.self) -> [Value] {
    var present = 0
    for index in 0..<count where isPresent(index) { present += 1 }
    return Array(unsafeUninitializedCapacity: present) { buffer, initialized in
      // Bounded by the count as well: every element has reported by the time this runs, but a
      // buffer overrun is not a price to pay for trusting that.
      for index in 0..<count where initialized < present && isPresent(index) {
        (buffer.baseAddress! + initialized).initialize(to: unbox(slots[index], as: Value.self))
        initialized += 1
      }
    }
  }
}
