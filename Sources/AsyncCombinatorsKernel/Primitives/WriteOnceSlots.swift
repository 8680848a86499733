import Synchronization

// The one fixed array of slots that threads fill at once: a fork-join's branch values and a
// fold's element outputs. Tests/AsyncCombinatorsTests/Internal/WriteOnceSlotsTests.swift fills
// one from many threads at once, which ThreadSanitizer checks in CI.
//
// Why raw memory rather than `[AnyValue?]` behind a lock: Performance.md, "What the code's
// shape buys, and the check that holds it".

/// A fixed number of slots, each written at most once, by whichever thread holds the value,
/// without a lock, and read once written.
///
/// Safe, which makes the `@unchecked Sendable` sound: each slot has a state, one atomic byte
/// (empty, being written, written). A writer first moves the state from empty to being written
/// (a second writer of the same slot traps there, so no slot is ever written twice or by two
/// threads), then moves the value in, then marks it written with a release. Every read of a
/// value, the deinitializer's included, first loads its state with an acquire and reads only a
/// written slot, so it sees the whole write. Slots are distinct memory, so writers of
/// different slots never touch the same bytes. Only written slots are destroyed. A
/// noncopyable struct, so that it is stored inline in its owner and freed exactly once.
package struct WriteOnceSlots<Element>: ~Copyable, @unchecked Sendable {
  @usableFromInline static var empty: UInt8 { 0 }
  @usableFromInline static var writing: UInt8 { 1 }
  @usableFromInline static var written: UInt8 { 2 }

  package let count: Int
  // Inlinable, so that the folds of the core module use it specialized.
  @usableFromInline let values: UnsafeMutablePointer<Element>
  @usableFromInline let states: UnsafeMutablePointer<Atomic<UInt8>>

  @inlinable package init(count: Int) {
    precondition(count >= 0, "WriteOnceSlots: a negative count")
    self.count = count
    values = .allocate(capacity: count)
    states = .allocate(capacity: count)
    for index in 0..<count { (states + index).initialize(to: Atomic(Self.empty)) }
  }

  @inlinable deinit {
    for index in 0..<count where isWritten(index) { (values + index).deinitialize(count: 1) }
    states.deinitialize(count: count)
    values.deallocate()
    states.deallocate()
  }

  /// Moves `value` into slot `index`, which must be empty: once per index, from any thread.
  @inlinable package func store(_ value: consuming Element, at index: Int) {
    precondition(index >= 0 && index < count, "WriteOnceSlots: index out of range")
    let taken = states[index].compareExchange(
      expected: Self.empty, desired: Self.writing, ordering: .relaxed
    ).exchanged
    precondition(taken, "WriteOnceSlots: a slot written twice")
    (values + index).initialize(to: value)
    states[index].store(Self.written, ordering: .releasing)
  }

  /// Whether slot `index` holds its value; once `true`, it stays so.
  @inlinable package func isWritten(_ index: Int) -> Bool {
    precondition(index >= 0 && index < count, "WriteOnceSlots: index out of range")
    return states[index].load(ordering: .acquiring) == Self.written
  }

  /// The value of slot `index`, which must be written.
  @inlinable package subscript(index: Int) -> Element {
    unsafeAddress {
      precondition(isWritten(index), "WriteOnceSlots: a slot read before it was written")
      return UnsafePointer(values + index)
    }
  }

  /// Calls `body` with every value, in order; every slot must be written.
  @inlinable package func withAllValues<Result>(
    _ body: (UnsafeBufferPointer<Element>) throws -> Result
  ) rethrows -> Result {
    for index in 0..<count {
      precondition(isWritten(index), "WriteOnceSlots: a slot read before it was written")
    }
    return try body(UnsafeBufferPointer(start: values, count: count))
  }
}
