import Dispatch
import Synchronization

@testable import AsyncCombinators

/// A one-way door for ordering tests without sleeps: waiters are parked until `open()`.
///
/// `wait()` suspends (no thread blocked); `blockingWait()` is for code on a private dispatch
/// queue or thread, never the cooperative pool.
final class Gate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    var blocked: [DispatchSemaphore] = []
  }
  private let state = Locked(State())

  init() {}

  var isOpen: Bool { state.withLock { $0.isOpen } }

  func open() {
    let (waiters, blocked) = state.withLock { state in
      state.isOpen = true
      defer {
        state.waiters = []
        state.blocked = []
      }
      return (state.waiters, state.blocked)
    }
    for waiter in waiters { waiter.resume() }
    for semaphore in blocked { semaphore.signal() }
  }

  func wait() async {
    await withCheckedContinuation { continuation in
      let resumeNow = state.withLock { state in
        if state.isOpen { return true }
        state.waiters.append(continuation)
        return false
      }
      if resumeNow { continuation.resume() }
    }
  }

  func blockingWait() {
    let semaphore = DispatchSemaphore(value: 0)
    let waitNow = state.withLock { state in
      if state.isOpen { return false }
      state.blocked.append(semaphore)
      return true
    }
    if waitNow { semaphore.wait() }
  }
}

/// Counts down to zero, then opens its gate: "all N things happened".
final class Countdown: Sendable {
  private let remaining: Atomic<Int>
  let gate = Gate()

  init(_ count: Int) {
    remaining = Atomic(count)
    if count <= 0 { gate.open() }
  }

  func tick() {
    if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { gate.open() }
  }

  func wait() async { await gate.wait() }
}

/// A thread-safe list of events, for asserting what happened and in which order.
final class Recorder<Event: Sendable>: Sendable {
  private let events = Locked<[Event]>([])

  init() {}

  func record(_ event: Event) { events.withLock { $0.append(event) } }
  var all: [Event] { events.withLock { $0 } }
  var count: Int { events.withLock { $0.count } }
}

/// Runs `function` and awaits the completion without using the async bridge under test:
/// the completion resumes a continuation, whatever thread it arrives on.
func runToCompletion<Input: Sendable, Output: Sendable>(
  _ function: AsyncFunc<Input, Output>, _ input: Input
) async -> Result<Output, any Error> {
  await withCheckedContinuation { continuation in
    function.run(input) { continuation.resume(returning: $0) }
  }
}

/// A private concurrent queue, for completions that should arrive on many threads.
///
/// Never block on it where the test needs another block to run meanwhile: a concurrent queue
/// draws on the global pool, which here may be only as wide as the cores and shared with every
/// test running in parallel. Block on a ``blockingLane(_:)`` instead.
func testQueue(_ label: String = "test") -> DispatchQueue {
  DispatchQueue(label: "AsyncCombinatorsTests.\(label)", attributes: .concurrent)
}

/// A private serial queue for work that blocks (a gate's `blockingWait()`, a semaphore).
/// Serial queues run on Dispatch's overcommitting pool, so each lane gets a thread of its own
/// at once: two lanes blocked on each other's progress overlap whatever else is running.
func blockingLane(_ label: String) -> DispatchQueue {
  DispatchQueue(label: "AsyncCombinatorsTests.lane.\(label)")
}
