import AsyncCombinators
import Dispatch

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

extension CancellationToken {
  /// Suspends until a thread has begun running this token's handlers: polls, as the state it
  /// waits for is an internal one no callback reports.
  func waitUntilCancelStarted() async {
    while !hasBegunRunningHandlers { await Task.yield() }
  }

  /// Suspends until `count` callers of `cancel()` wait for another thread's handlers.
  func waitUntilCancellersWaiting(_ count: Int) async {
    while waitingCancellerCount < count { await Task.yield() }
  }
}
