import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Whether a finished run still holds on to what its completion captured.
@Suite struct ToolkitLeakTests {
  final class Tracked: Sendable {}

  /// Runs `function` to completion with a completion that captures a tracked object, drops
  /// every reference, and reports whether the object is still alive.
  static func leaksCompletion<Input: Sendable, Output: Sendable>(
    _ function: AsyncFunc<Input, Output>, _ input: Input
  ) async -> Bool {
    weak var weakTracked: Tracked?
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let tracked = Tracked()
      weakTracked = tracked
      function.run(input) { _ in
        _ = tracked
        continuation.resume()
      }
    }
    // The completing thread drops its references after the completion returns: poll for
    // that, up to a second, rather than assume a sleep is long enough.
    let deadline = ContinuousClock.now + .seconds(1)
    while weakTracked != nil && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(5))
    }
    return weakTracked != nil
  }

  static let hop = AsyncFunc<Int, Int> { x, complete in
    DispatchQueue.global().async { complete(.success(x)) }
  }

  @Test func finished_toolkit_runs_release_their_completion() async {
    #expect(await Self.leaksCompletion(Self.hop.concurrentMap(limit: 2), [1, 2, 3]) == false)
    #expect(await Self.leaksCompletion(AsyncFunc.race([Self.hop, Self.hop]), 1) == false)
    #expect(await Self.leaksCompletion(Self.hop.limit(1), 1) == false)
    #expect(await Self.leaksCompletion(Self.hop.timeout(.seconds(30)), 1) == false)
    #expect(await Self.leaksCompletion(Self.hop.retry(1), 1) == false)
  }

  /// `ForkJoin` registers a handler on its branch token that holds the join; it must take it
  /// off on success, or the join and the token keep each other (and the completion) alive.
  @Test func fork_join_releases_its_completion_after_success() async {
    #expect(await Self.leaksCompletion(Self.hop <> Self.hop, 1) == false)
    #expect(await Self.leaksCompletion(AsyncFunc.parallel([Self.hop, Self.hop]), 1) == false)
  }
}
