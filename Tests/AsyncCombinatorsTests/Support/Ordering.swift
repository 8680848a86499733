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
