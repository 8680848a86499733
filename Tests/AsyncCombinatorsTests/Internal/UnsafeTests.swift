import AsyncCombinators
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The pieces of Internal/Primitives/Unsafe.swift; the thread-local slot from many threads at
/// once, for ThreadSanitizer.
@Suite struct UnsafeTests {
  private class Animal: @unchecked Sendable {}  // No state.
  private final class Dog: Animal, @unchecked Sendable {}  // No state.

  /// Counts its live instances, so a test sees the slot give back every retain it took.
  private final class Counted: Sendable {
    let owner: Int
    private let alive: Counter

    init(_ owner: Int, _ alive: Counter) {
      self.owner = owner
      self.alive = alive
      alive.add(1)
    }

    deinit { alive.add(-1) }
  }

  private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    func add(_ delta: Int) { count.add(delta, ordering: .acquiringAndReleasing) }
  }

  @Test func castExactlyHandsBackAValueOfTheSameType() {
    #expect(castExactly(42, to: Int.self) == 42)
    #expect(castExactly("text", to: String.self) == "text")
    let dog = Dog()
    #expect(castExactly(dog, to: Dog.self) === dog)
  }

  @Test func castExactlyLooksAtTheStaticTypeOnly() {
    #expect(castExactly(42, to: Int64.self) == nil)
    let boxed: any Sendable = 42
    // `as` keeps the existential closed: passed bare, it would be opened to `Int`.
    #expect(castExactly(boxed as any Sendable, to: Int.self) == nil)
    let animal: Animal = Dog()
    #expect(castExactly(animal, to: Dog.self) == nil)
  }

  @Test func theLabelOfTheCurrentQueueIsFound() {
    let queue = DispatchQueue(label: "unsafe-tests-queue")
    #expect(queue.sync { CurrentExecutor.name } == "unsafe-tests-queue")
  }

  /// Each of many threads replaces its own slot's object many times and reads it back; at the
  /// end every object the slot held has been let go, whether the thread emptied the slot or
  /// exited with it full.
  @Test(.timeLimit(.minutes(1)))
  func aThreadLocalSlotIsEachThreadsOwn() async throws {
    let slot = ThreadLocalReference<Counted>()
    let alive = Counter()
    let threads = 8
    let wrong = Counter()
    let finished = Counter()
    for owner in 0..<threads {
      let thread = Thread {
        if slot.value != nil { wrong.add(1) }
        for _ in 0..<2_000 {
          slot.value = Counted(owner, alive)
          if slot.value?.owner != owner { wrong.add(1) }
        }
        // Half the threads exit with the slot full: the key's destructor lets go of it.
        if owner.isMultiple(of: 2) { slot.value = nil }
        finished.add(1)
      }
      thread.start()
    }
    // Waits for the threads to exit and their slots' destructors to run.
    let deadline = ContinuousClock.now + .seconds(30)
    while finished.value < threads || alive.value > 0, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    #expect(finished.value == threads)
    #expect(wrong.value == 0)
    #expect(alive.value == 0)
  }
}
