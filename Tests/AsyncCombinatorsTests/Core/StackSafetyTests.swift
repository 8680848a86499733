import AsyncCombinatorsTesting
import Foundation
import Testing

@testable import AsyncCombinators

/// A million stages, alternating a lifted function and a callback that completes inline.
private let millionStages = AsyncFunc<Int, Int>.serial(
  (0..<1_000_000).map { index in
    index.isMultiple(of: 2)
      ? .sync { $0 &+ 1 }
      : AsyncFunc { x, complete in complete(.success(x &+ 1)) }
  })

/// `((f +> f) +> f) +> ...`: the nesting that `reduce` builds, 100,000 deep.
private let deepLeftChain: AsyncFunc<Int, Int> = (1..<100_000).reduce(
  AsyncFunc<Int, Int>.sync { $0 &+ 1 }
) { chain, index in
  chain
    +> (index.isMultiple(of: 2)
      ? .sync { $0 &+ 1 }
      : AsyncFunc { x, complete in complete(.success(x &+ 1)) })
}

/// Runs `function` on a fresh thread whose stack is 512 KiB, and awaits its result.
private func runOnSmallStack(_ function: AsyncFunc<Int, Int>, _ input: Int) async
  -> Result<Int, any Error>
{
  await withCheckedContinuation { continuation in
    let thread = Thread { function.run(input) { continuation.resume(returning: $0) } }
    thread.stackSize = 512 * 1024
    thread.start()
  }
}

@Suite struct StackSafetyTests {
  @Test func serial_fold_of_a_million_synchronous_stages_runs_on_a_small_stack() async throws {
    #expect(try await runOnSmallStack(millionStages, 0).get() == 1_000_000)
  }

  @Test func left_nested_chain_of_a_hundred_thousand_runs_on_a_small_stack() async throws {
    #expect(try await runOnSmallStack(deepLeftChain, 0).get() == 100_000)
    #expect(String(describing: deepLeftChain).count > 100_000)
  }

  @Test func releasing_a_left_nested_chain_of_a_hundred_thousand_uses_a_small_stack() async {
    // In a child process: a stack overflow would otherwise end the whole test run.
    await #expect(processExitsWith: .success) {
      let released = DispatchSemaphore(value: 0)
      let thread = Thread {
        var chain: AsyncFunc<Int, Int>? = (1..<100_000).reduce(AsyncFunc<Int, Int>.sync { $0 }) {
          chain, _ in chain +> .sync { $0 &+ 1 }
        }
        chain = nil
        _ = chain
        released.signal()
      }
      thread.stackSize = 512 * 1024
      thread.start()
      released.wait()
    }
  }
}
