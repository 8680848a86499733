import AsyncCombinators
import Foundation
import Synchronization
import Testing

@testable import AsyncCombinatorsKernel

/// Primitives/WriteOnceSlots.swift: filled from many threads at once while others read, for
/// ThreadSanitizer.
@Suite struct WriteOnceSlotsTests {
  private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func add(_ delta: Int) { count.add(delta, ordering: .acquiringAndReleasing) }
  }

  /// Counts its live instances, so a test sees the slots let go of every value they hold.
  private final class Counted: Sendable {
    let index: Int
    private let alive: Counter

    init(_ index: Int, _ alive: Counter) {
      self.index = index
      self.alive = alive
      alive.add(1)
    }

    deinit { alive.add(-1) }
  }

  /// Shares one set of slots between threads; the slots are its only state.
  private final class Shared: Sendable {
    let slots: WriteOnceSlots<Counted>
    init(count: Int) { slots = WriteOnceSlots(count: count) }
  }

  /// Each of many threads writes its own share of the slots while readers load every slot
  /// over and over: a reader sees a slot either empty or holding its whole value.
  @Test(.timeLimit(.minutes(1)))
  func many_threads_fill_distinct_slots_while_others_read_them() async throws {
    let count = 4_000
    let writers = 8
    let readers = 2
    let alive = Counter()
    let wrong = Counter()
    let finished = Counter()
    let slots = Shared(count: count)
    for writer in 0..<writers {
      Thread {
        for index in stride(from: writer, to: count, by: writers) {
          slots.slots.store(Counted(index, alive), at: index)
        }
        finished.add(1)
      }.start()
    }
    for _ in 0..<readers {
      Thread {
        var seen = 0
        while seen < count {
          seen = 0
          for index in 0..<count where slots.slots.isWritten(index) {
            if slots.slots[index].index != index { wrong.add(1) }
            seen += 1
          }
        }
        finished.add(1)
      }.start()
    }
    let deadline = ContinuousClock.now + .seconds(30)
    while finished.value < writers + readers, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    #expect(finished.value == writers + readers)
    #expect(wrong.value == 0)
    let indices = slots.slots.withAllValues { $0.map(\.index) }
    #expect(indices == Array(0..<count))
    #expect(alive.value == count)
  }

  @Test func only_the_written_slots_are_read_and_let_go() {
    let alive = Counter()
    do {
      let slots = WriteOnceSlots<Counted>(count: 5)
      slots.store(Counted(1, alive), at: 1)
      slots.store(Counted(3, alive), at: 3)
      #expect((0..<5).map { slots.isWritten($0) } == [false, true, false, true, false])
      #expect(slots[3].index == 3)
      #expect(alive.value == 2)
    }
    #expect(alive.value == 0)
  }

  @Test func a_slot_written_twice_is_a_precondition_failure() async throws {
    await #expect(processExitsWith: .failure) {
      let slots = WriteOnceSlots<Int>(count: 2)
      slots.store(1, at: 0)
      slots.store(2, at: 0)
    }
  }

  @Test func reading_a_slot_not_yet_written_is_a_precondition_failure() async throws {
    await #expect(processExitsWith: .failure) {
      let slots = WriteOnceSlots<Int>(count: 2)
      slots.store(1, at: 0)
      _ = slots.withAllValues { $0.reduce(0, +) }
    }
  }
}
