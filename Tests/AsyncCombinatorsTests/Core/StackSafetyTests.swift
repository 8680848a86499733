import AsyncCombinators
import AsyncCombinatorsTesting
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

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

/// Runs `body` on a fresh thread whose stack is 512 KiB and blocks until it returns: for the
/// exit tests, whose child process has nothing else to do meanwhile.
private func blockOnSmallStack(_ body: @escaping @Sendable () -> Void) {
  let finished = DispatchSemaphore(value: 0)
  let thread = Thread {
    body()
    finished.signal()
  }
  thread.stackSize = 512 * 1024
  thread.start()
  finished.wait()
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
      blockOnSmallStack {
        var chain: AsyncFunc<Int, Int>? = (1..<100_000).reduce(AsyncFunc<Int, Int>.sync { $0 }) {
          chain, _ in chain +> .sync { $0 &+ 1 }
        }
        chain = nil
        _ = chain
      }
    }
  }
}

/// `((f <> g) +> sum <> g) +> sum ...`: fork-joins nested 100,000 deep, each joining the one
/// inside it with a leaf; `asynchronous` leaves complete on a global queue.
private func deepParallel(asynchronous: Bool, depth: Int = 100_000) -> AsyncFunc<Int, Int> {
  let leaf: AsyncFunc<Int, Int> =
    asynchronous
    ? AsyncFunc { _, complete in DispatchQueue.global().async { complete(.success(1)) } }
    : .sync { _ in 1 }
  return (1..<depth).reduce(AsyncFunc<Int, Int>.sync { $0 }) { chain, _ in
    (chain <> leaf) +> .sync { $0.0 &+ $0.1 }
  }
}

/// `<>` is as stack-safe as `+>`: starting, joining and releasing.
@Suite struct ParallelStackSafetyTests {
  @Test(arguments: [false, true])
  func nested_parallel_of_a_hundred_thousand_runs_on_a_small_stack(asynchronous: Bool) async throws
  {
    let nested = deepParallel(asynchronous: asynchronous)
    #expect(try await runOnSmallStack(nested, 0).get() == 99_999)
    #expect(String(describing: nested).count > 100_000)
  }

  @Test func releasing_a_nested_parallel_of_a_hundred_thousand_uses_a_small_stack() async {
    await #expect(processExitsWith: .success) {
      blockOnSmallStack {
        var nested: AsyncFunc<Int, Int>? = deepParallel(asynchronous: false)
        nested = nil
        _ = nested
      }
    }
  }
}

@Suite struct PromiseChainStackSafetyTests {
  /// A promise of `links` links, each a `then` on the promise before it: a left-nested chain
  /// of `+>`, one callback stage per link.
  private static func chain(_ links: Int) -> Promise<Int> {
    (0..<links).reduce(firstly { 0 }) { promise, _ in promise.then { $0 &+ 1 } }
  }

  @Test func releasing_a_promise_leaves_the_links_it_shares_with_another_intact() async throws {
    // Two promises grown from one: releasing the first must not take apart the links the
    // second still runs through.
    let shared = (0..<10).reduce(firstly { 0 }) { promise, _ in promise.then { $0 + 1 } }
    var first: Promise<Int>? = shared.then { $0 * 10 }
    let second = shared.then { $0 * 100 }
    #expect(try await first!.value == 100)
    first = nil
    _ = first
    #expect(try await second.value == 1_000)
    #expect(try await shared.value == 10)
  }

  @Test func a_chain_of_then_runs_between_other_stages_is_released_on_a_small_stack() async {
    // Runs of `then` links, each run following a `flatMap` stage: every kind of link the
    // facade makes, in one chain deep enough to overflow a small stack if released by
    // recursion.
    await #expect(processExitsWith: .success) {
      blockOnSmallStack {
        var promise: Promise<Int>? = (0..<100_000).reduce(firstly { 0 }) { promise, index in
          index.isMultiple(of: 10)
            ? promise.flatMap { x in firstly { x } } : promise.then { $0 &+ 1 }
        }
        promise = nil
        _ = promise
      }
    }
  }

  @Test func a_hundred_thousand_links_run_and_are_released_on_a_small_stack() async {
    // In a child process: a stack overflow would otherwise end the whole test run.
    await #expect(processExitsWith: .success) {
      blockOnSmallStack {
        let ran = DispatchSemaphore(value: 0)
        var promise: Promise<Int>? = PromiseChainStackSafetyTests.chain(100_000)
        promise!.chain.run(()) { result in
          precondition((try? result.get()) == 100_000)
          ran.signal()
        }
        ran.wait()
        promise = nil
        _ = promise
      }
    }
  }
}
