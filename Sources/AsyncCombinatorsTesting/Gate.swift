import AsyncCombinators
import Dispatch
import Foundation
import Synchronization

/// A one-way door for ordering tests without sleeps: whoever waits is held until `open()`.
///
/// A test that must say "this happened before that" opens a gate where *this* happens and
/// waits on it before checking *that*; no `sleep` or `Task.yield()` decides the order.
/// ``wait()`` suspends and ``whenOpen(_:)`` calls back, so no thread is blocked;
/// ``blockingWait()`` is for code on a ``BlockingLane`` only, never for Dispatch or the
/// cooperative pool.
///
/// ```
/// let started = Gate()
/// let work = AsyncFunc<Int, Int>(name: "work") { x, complete in
///   started.open()
///   complete(.success(x))
/// }
/// work.run(1) { _ in }
/// await started.wait()
/// print(started.isOpen)
/// // prints true
/// ```
package final class Gate: Sendable {
  private struct State {
    var isOpen = false
    var waiters: [CheckedContinuation<Void, Never>] = []
    var blocked: [DispatchSemaphore] = []
    var callbacks: [@Sendable () -> Void] = []
  }
  private let state = Locked(State())

  /// Creates a closed gate.
  package init() {}

  /// Whether ``open()`` has been called.
  package var isOpen: Bool { state.withLock { $0.isOpen } }

  /// Opens the gate for good: every waiter goes on, and later waits return at once.
  package func open() {
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
  ///
  /// - Parameter body: What to run.
  package func whenOpen(_ body: @escaping @Sendable () -> Void) {
    let runNow = state.withLock { state in
      if state.isOpen { return true }
      state.callbacks.append(body)
      return false
    }
    if runNow { body() }
  }

  /// Suspends until the gate is open.
  package func wait() async {
    await withCheckedContinuation { continuation in
      let resumeNow = state.withLock { state in
        if state.isOpen { return true }
        state.waiters.append(continuation)
        return false
      }
      if resumeNow { continuation.resume() }
    }
  }

  /// Blocks the calling thread until the gate is open: only on a ``BlockingLane``.
  package func blockingWait() {
    let semaphore = DispatchSemaphore(value: 0)
    let waitNow = state.withLock { state in
      if state.isOpen { return false }
      state.blocked.append(semaphore)
      return true
    }
    if waitNow { semaphore.wait() }
  }
}

/// Counts down to zero, then opens its gate: "all *n* things happened".
///
/// ```
/// let finished = Countdown(2)
/// finished.tick()
/// finished.tick()
/// await finished.wait()
/// print(finished.gate.isOpen)
/// // prints true
/// ```
package final class Countdown: Sendable {
  private let remaining: Atomic<Int>
  /// Opens when the count reaches zero.
  package let gate = Gate()

  /// Creates a countdown from `count`; zero or less is open at once.
  package init(_ count: Int) {
    remaining = Atomic(count)
    if count <= 0 { gate.open() }
  }

  /// Counts one thing done, from any thread.
  package func tick() {
    if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { gate.open() }
  }

  /// Suspends until the count has reached zero.
  package func wait() async { await gate.wait() }
}

/// A thread-safe list of events, for asserting what happened and in which order.
///
/// ```
/// let events = Recorder<String>()
/// events.record("start")
/// events.record("end")
/// print(events.all)
/// // prints ["start", "end"]
/// ```
package final class Recorder<Event: Sendable>: Sendable {
  private let events = Locked<[Event]>([])

  /// Creates an empty recorder.
  package init() {}

  /// Appends `event`, from any thread.
  package func record(_ event: Event) { events.withLock { $0.append(event) } }
  /// Everything recorded so far, in the order it was recorded.
  package var all: [Event] { events.withLock { $0 } }
  /// How many events were recorded.
  package var count: Int { events.withLock { $0.count } }
}

/// Runs `function` and awaits its completion without the library's own `async` bridge.
///
/// The completion resumes a continuation, whatever thread it arrives on, so a test of the
/// bridge can compare against it.
///
/// ```
/// let double = AsyncFunc<Int, Int>.sync { $0 * 2 }
/// print(await runToCompletion(double, 21))
/// // prints success(42)
/// ```
///
/// - Parameters:
///   - function: What to run.
///   - input: Its input.
/// - Returns: The result its completion was called with.
package func runToCompletion<Input: Sendable, Output: Sendable>(
  _ function: AsyncFunc<Input, Output>, _ input: Input
) async -> Result<Output, any Error> {
  await withCheckedContinuation { continuation in
    function.run(input) { continuation.resume(returning: $0) }
  }
}

/// A private concurrent queue, for completions that should arrive on many threads.
///
/// Never block on it where the test needs another block to run meanwhile: a concurrent queue
/// draws on the global pool, which may be only as wide as the cores and is shared with every
/// test running in parallel. Block on a ``BlockingLane`` instead.
///
/// - Parameter label: Ends the queue's label, for debuggers.
/// - Returns: A new concurrent queue.
package func testQueue(_ label: String = "test") -> DispatchQueue {
  DispatchQueue(label: "AsyncCombinatorsTesting.\(label)", attributes: .concurrent)
}

/// Runs blocks that block (a gate's `blockingWait()`, a semaphore) on threads of their own.
///
/// Never Dispatch for such work: the global pool, which Swift concurrency shares on Linux,
/// may be only as wide as the cores, and a blocked worker can starve the very task that
/// would unblock it. Each block gets a new thread, so blocks on one lane may overlap.
///
/// ```
/// let gate = Gate()
/// let through = Gate()
/// BlockingLane(name: "worker").async {
///   gate.blockingWait()
///   through.open()
/// }
/// gate.open()
/// await through.wait()
/// print(through.isOpen)
/// // prints true
/// ```
package struct BlockingLane: Sendable {
  /// Ends the name of each thread, for debuggers.
  package let name: String

  /// A lane whose threads are named after `name`.
  package init(name: String) { self.name = name }

  /// Runs `block` on a new thread.
  package func async(_ block: @escaping @Sendable () -> Void) {
    let thread = Thread(block: block)
    thread.name = "AsyncCombinatorsTesting.lane.\(name)"
    thread.start()
  }
}

/// A ``BlockingLane`` named `name`.
///
/// - Parameter name: Ends the name of each thread.
/// - Returns: The lane.
package func blockingLane(_ name: String) -> BlockingLane { BlockingLane(name: name) }

/// Suspends until `queue` has run a block: a real suspension with a real thread hop.
///
/// Unlike `Task.yield()`, it lets other work run; stress tests use it to give jobs random
/// length.
///
/// - Parameter queue: The queue to hop through.
package func hop(_ queue: DispatchQueue) async {
  await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
}

/// Calls `then` after `count` hops through `queue`: random length for callback bodies.
///
/// - Parameters:
///   - count: How many hops; zero calls `then` at once, on the calling thread.
///   - queue: The queue to hop through.
///   - then: What to call after the last hop.
package func bounce(_ count: Int, on queue: DispatchQueue, then: @escaping @Sendable () -> Void) {
  guard count > 0 else { return then() }
  queue.async { bounce(count - 1, on: queue, then: then) }
}
