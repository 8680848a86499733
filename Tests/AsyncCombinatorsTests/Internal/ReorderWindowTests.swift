import AsyncCombinators
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ReorderWindowTests {
  /// How many `Tracked` values are alive.
  private final class Alive: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    func add(_ delta: Int) { count.add(delta, ordering: .relaxed) }
  }

  /// Counts its instances, so a test can see that the window lets go of every value.
  private final class Tracked: Sendable {
    let id: Int
    let alive: Alive
    init(_ id: Int, _ alive: Alive) {
      self.id = id
      self.alive = alive
      alive.add(1)
    }
    deinit { alive.add(-1) }
  }

  @Test func values_come_out_in_source_order_across_the_rings_growth() {
    let window = ReorderWindow()
    let alive = Alive()
    for _ in 0..<40 { window.appendRunning() }  // Grows from 8 to 64 slots.
    // Finish from the back, then the front: nothing is ready until element 0 is.
    for index in stride(from: 39, through: 1, by: -1) {
      if index.isMultiple(of: 5) {
        window.setSkipped(at: index)
      } else {
        window.setValue(Tracked(index, alive), at: index)
      }
    }
    #expect(window.first == .running)
    window.setValue(Tracked(0, alive), at: 0)
    var out: [Int] = []
    while let mark = window.first {
      if mark == .value {
        out.append(unbox(window.removeFirstValue(), as: Tracked.self).id)
      } else {
        window.removeFirst()
      }
    }
    #expect(out == (0..<40).filter { !$0.isMultiple(of: 5) || $0 == 0 })
    #expect(window.firstIndex == 40 && window.count == 0)
    #expect(alive.value == 0)
  }

  @Test func growing_while_the_ring_wraps_keeps_every_slot_in_place() {
    let window = ReorderWindow()
    let alive = Alive()
    for _ in 0..<6 { window.appendRunning() }
    for index in 0..<6 { window.setValue(Tracked(index, alive), at: index) }
    for _ in 0..<5 { _ = window.removeFirstValue() }  // `start` is now 5 of 8.
    for _ in 0..<10 { window.appendRunning() }  // Wraps, then grows.
    for index in 6..<16 { window.setValue(Tracked(index, alive), at: index) }
    var out: [Int] = []
    while window.first == .value {
      out.append(unbox(window.removeFirstValue(), as: Tracked.self).id)
    }
    #expect(out == Array(5..<16))
    #expect(alive.value == 0)
  }

  @Test func the_window_lets_go_of_values_it_still_holds() {
    let alive = Alive()
    do {
      let window = ReorderWindow()
      for _ in 0..<20 { window.appendRunning() }
      for index in 1..<20 { window.setValue(Tracked(index, alive), at: index) }
      #expect(alive.value == 19)
      window.removeAll()
      #expect(alive.value == 0)
      window.appendRunning()
      window.setValue(Tracked(20, alive), at: 20)
    }  // Released with a value in it.
    #expect(alive.value == 0)
  }
}
