import Dispatch
import Foundation
import Synchronization

@testable import AsyncCombinators

/// A one-way door for ordering tests without sleeps: waiters are parked until `open()`.
///
/// `wait()` suspends and `whenOpen(_:)` calls back (no thread blocked); `blockingWait()` is
/// for code on a ``BlockingLane``, never Dispatch or the cooperative pool.
final class Gate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    var blocked: [DispatchSemaphore] = []
    var callbacks: [@Sendable () -> Void] = []
  }
  private let state = Locked(State())

  init() {}

  var isOpen: Bool { state.withLock { $0.isOpen } }

  func open() {
    let (waiters, blocked, callbacks) = state.withLock { state in
      state.isOpen = true
      defer {
        state.waiters = []
        state.blocked = []
        state.callbacks = []
      }
      return (state.waiters, state.blocked, state.callbacks)
    }
    for waiter in waiters { waiter.resume() }
    for semaphore in blocked { semaphore.signal() }
    for callback in callbacks { callback() }
  }

  /// Runs `body` once the gate is open: at once if it already is, else on the opening thread.
  func whenOpen(_ body: @escaping @Sendable () -> Void) {
    let runNow = state.withLock { state in
      if state.isOpen { return true }
      state.callbacks.append(body)
      return false
    }
    if runNow { body() }
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

/// Runs blocks that block (a gate's `blockingWait()`, a semaphore) on threads of their own.
///
/// Never Dispatch for such work: the global pool, which Swift concurrency shares on Linux, may
/// be only as wide as the cores, and a blocked worker can starve the very task that would
/// unblock it. Each block gets a new thread, so blocks on one lane may overlap.
struct BlockingLane: Sendable {
  let name: String

  func async(_ block: @escaping @Sendable () -> Void) {
    let thread = Thread(block: block)
    thread.name = "AsyncCombinatorsTests.lane.\(name)"
    thread.start()
  }
}

func blockingLane(_ name: String) -> BlockingLane { BlockingLane(name: name) }
