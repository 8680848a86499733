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
  /// A promise of `links` links, each a `then` on a promise the reduction still holds: a chain
  /// of one-link nodes, the deepest shape a promise chain takes.
  private static func chain(_ links: Int) -> Promise<Int> {
    (0..<links).reduce(firstly { 0 }) { promise, _ in promise.then { $0 &+ 1 } }
  }

  @Test func thens_written_in_one_expression_share_one_chain_object() {
    // Each `then` consumes the promise it extends: a temporary that nothing else holds, so the
    // link goes into the chain's buffer rather than into an object of its own.
    let promise = Promise(AsyncFunc<Void, Int>.sync(name: "head") { 0 })
      .then { $0 + 1 }.then { $0 * 2 }.then { $0 - 3 }
    guard case .then(let chain) = promise.chain.program else {
      Issue.record("the chain does not end in a `then` node")
      return
    }
    #expect(chain.isChain)
    #expect(chain.hopCount == 3)
    guard case .direct = chain.previous else {
      Issue.record("the chain does not follow the head")
      return
    }
    #expect(String(describing: promise.chain) == "head +> then +> then +> then")
  }

  @Test func a_then_on_a_promise_held_elsewhere_starts_a_chain_of_its_own() {
    // `base` is still held here, so `then` may not grow it: the new link is a chain that
    // follows it, and `base` keeps its one link.
    let base = firstly { 0 }.then { $0 + 1 }
    let longer = base.then { $0 * 2 }
    guard case .then(let shorter) = base.chain.program,
      case .then(let chain) = longer.chain.program
    else {
      Issue.record("a promise does not end in a `then` node")
      return
    }
    #expect(shorter.hopCount == 1)
    #expect(chain.hopCount == 1)
    guard case .then(let followed) = chain.previous else {
      Issue.record("the new link does not follow the promise it extends")
      return
    }
    #expect(followed === shorter)
    #expect(String(describing: base.chain) == "firstly +> then")
    #expect(String(describing: longer.chain) == "firstly +> then +> then")
  }

  @Test func a_block_held_elsewhere_is_not_taken_over_by_the_link() async throws {
    // The same block in two chains: each `+>` must leave it as it is.
    let block = AsyncFunc<Int, Int>.block(on: nil) { $0 * 10 }
    let first = AsyncFunc<Int, Int>.sync { $0 + 1 } +> block
    let second = AsyncFunc<Int, Int>.sync { $0 + 2 } +> block
    #expect(try await first(1) == 20)
    #expect(try await second(1) == 30)
    #expect(try await block(1) == 10)
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
    // Runs of `then` links, each run following a `flatMap` stage: a link's release loop stops
    // at the `+>` below it, whose own release then takes the next run apart.
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
