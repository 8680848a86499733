import Dispatch
import Synchronization

@testable import AsyncCombinators

/// Suspends until `queue` has run a block: a real suspension point with a real thread hop,
/// which, unlike `Task.yield()`, lets other work run. Tests use it to give jobs random length.
func hop(_ queue: DispatchQueue) async {
  await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
}

/// Calls `then` after `count` hops through `queue`: random length for callback bodies.
func bounce(_ count: Int, on queue: DispatchQueue, then: @escaping @Sendable () -> Void) {
  guard count > 0 else { return then() }
  queue.async { bounce(count - 1, on: queue, then: then) }
}

/// Completions a test double parks, to be called when the test decides.
final class ParkedCompletions<Value: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Value, any Error>) -> Void

  private struct State {
    var parked: [Completion] = []
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }
  private let state = Locked(State())

  init() {}

  func park(_ completion: @escaping Completion) {
    let ready = state.withLock { state in
      state.parked.append(completion)
      let count = state.parked.count
      defer { state.waiters.removeAll { $0.count <= count } }
      return state.waiters.filter { $0.count <= count }.map(\.continuation)
    }
    for continuation in ready { continuation.resume() }
  }

  /// Waits until `count` completions have been parked.
  func arrivals(_ count: Int) async {
    await withCheckedContinuation { continuation in
      let now = state.withLock { state in
        if state.parked.count >= count { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if now { continuation.resume() }
    }
  }

  /// Calls the `index`th parked completion.
  func release(_ index: Int, _ result: Result<Value, any Error>) {
    let completion = state.withLock { $0.parked[index] }
    completion(result)
  }
}
