import AsyncCombinators
import Dispatch
import Foundation
import Synchronization

/// What sharing calls costs: `shared()` when every key is distinct (nothing to share, so the
/// table is pure overhead), one key joined by every run, a `memoized` hit, and `batched` loads.
///
/// `f` completes on a global queue, as real work does, and each row is against the plain
/// figure it must stay near, measured in the same rounds.
func runSharingScenario(repetitions: Int = 7) {
  print("\nSharing calls (ns per element, run or load)")
  let f = AsyncFunc<Int, Int>(name: "f") { x, complete in
    DispatchQueue.global().async { complete(.success(x &+ 1)) }
  }
  // `BENCHMARK_SHARING="distinct,batched"` keeps those rows alone.
  let only = ProcessInfo.processInfo.environment["BENCHMARK_SHARING"]?.split(separator: ",")
  func wanted(_ row: String) -> Bool { only?.contains { $0 == row } ?? true }
  if wanted("distinct") { runDistinctKeys(f, width: 100_000, repetitions: repetitions) }
  if wanted("one-key") { runOneKey(f, runs: 100_000, repetitions: repetitions) }
  if wanted("hit") { runMemoizedHit(runs: 1_000_000, repetitions: repetitions) }
  if wanted("batched") {
    runBatchedLoads(f, loads: 10_000, keys: 100, maxBatchSize: 10, repetitions: repetitions)
  }
}

/// `f.shared()` inside a fold whose keys are all distinct, against the plain fold.
private func runDistinctKeys(_ f: AsyncFunc<Int, Int>, width: Int, repetitions: Int) {
  let input = Array(0..<width)
  let shared = f.shared().concurrentMap()
  let plain = f.concurrentMap()
  let timings = measure(
    repetitions: repetitions,
    [
      { fold(shared, input) },
      { fold(plain, input) },
    ])
  report(
    "f.shared(), \(width) distinct keys in a map", unit: "ns/element", timings, ours: 0,
    per: width, baselines: [("f.concurrentMap()", 1)])
}

/// Every run of a fold joins one key, whose call waits until all have started; against the
/// plain fold of `f`.
private func runOneKey(_ f: AsyncFunc<Int, Int>, runs: Int, repetitions: Int) {
  let input = Array(repeating: 7, count: runs)
  let calls = Box()
  let parked = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
  let slow = AsyncFunc<Int, Int>(name: "slow") { x, complete in
    calls.value.add(1, ordering: .relaxed)
    parked.withLock { $0 = { _ in complete(.success(x &+ 1)) } }
  }
  let plain = f.concurrentMap()
  let timings = measure(
    repetitions: repetitions,
    [
      {
        let shared = slow.shared().concurrentMap()
        calls.value.store(0, ordering: .relaxed)
        waitFor { done in
          shared.run(input) { result in
            precondition((try? result.get().count) == runs, "a fold failed")
            done()
          }
          // Every element has started: `run` starts them all before it returns.
          parked.withLock { $0.take() }?(.success(0))
        }
        precondition(calls.value.load(ordering: .relaxed) == 1, "joined runs made more calls")
      },
      { fold(plain, input) },
    ])
  report(
    "\(runs) runs joining one key (1 call)", unit: "ns/run", timings, ours: 0, per: runs,
    baselines: [("f.concurrentMap()", 1)])
}

/// Runs that find their key in a `ResultCache`, against runs of a `.sync` stage.
private func runMemoizedHit(runs: Int, repetitions: Int) {
  let stage = AsyncFunc<Int, Int>.sync { $0 &+ 1 }
  let cache = ResultCache<Int, Int>()
  cache.prime(1, with: 2)
  let memoized = stage.memoized(in: cache)
  let sum = Box()
  let timings = measure(
    repetitions: repetitions,
    [
      {
        for _ in 0..<runs { memoized.run(1) { sum.value.add(succeeded($0), ordering: .relaxed) } }
      },
      {
        for _ in 0..<runs { stage.run(1) { sum.value.add(succeeded($0), ordering: .relaxed) } }
      },
    ])
  report(
    "memoized hit, \(runs) runs", unit: "ns/run", timings, ours: 0, per: runs,
    baselines: [(".sync stage", 1)])
}

/// Loads of `keys` keys, the elements of one `concurrentMap` (which starts them in one loop),
/// against a fold of `f` as wide as the loads: through plain `batched`, the loads of each key
/// one after another, so that a batch fills with `maxBatchSize` keys and closes when the next
/// key comes; and through `batched(...).memoized(in:)` (DataLoader with its cache, made afresh
/// each round), the keys taken in turn, where the cache is what keeps a key asked again after
/// its batch was sent out of another batch. Either way the loads make `keys / maxBatchSize`
/// batch calls, which every round checks.
private func runBatchedLoads(
  _ f: AsyncFunc<Int, Int>, loads: Int, keys: Int, maxBatchSize: Int, repetitions: Int
) {
  let batchCalls = Box()
  let load = AsyncFunc<[Int], [Int]>(name: "load") { ids, complete in
    batchCalls.value.add(1, ordering: .relaxed)
    DispatchQueue.global().async { complete(.success(ids.map { $0 &+ 1 })) }
  }
  let plain = f.concurrentMap()
  let input = Array(0..<loads)
  let tick = DispatchQueue(label: "bench.batches")
  /// Loads `asked` with `user`, as the elements of one fold, and waits for them all; then
  /// checks the number of batch calls.
  func loadAll(_ user: AsyncFunc<Int, Int>, _ asked: [Int]) {
    batchCalls.value.store(0, ordering: .relaxed)
    let fold = user.concurrentMap()
    waitFor { done in
      // The fold's loop runs on the loader's queue, so no batch's block can close it early.
      tick.async {
        fold.run(asked) { result in
          precondition((try? result.get().count) == loads, "a load failed")
          done()
        }
      }
    }
    precondition(
      batchCalls.value.load(ordering: .relaxed) == keys / maxBatchSize,
      "the loads made \(batchCalls.value.load(ordering: .relaxed)) batch calls")
  }
  let grouped = input.map { $0 / (loads / keys) }
  let inTurn = input.map { $0 % keys }
  let timings = measure(
    repetitions: repetitions,
    [
      { loadAll(AsyncFunc<Int, Int>.batched(load, maxBatchSize: maxBatchSize, on: tick), grouped) },
      {
        let cached = AsyncFunc<Int, Int>.batched(load, maxBatchSize: maxBatchSize, on: tick)
          .memoized(in: ResultCache<Int, Int>())
        loadAll(cached, inTurn)
      },
      { fold(plain, input) },
    ])
  report(
    "\(loads) loads, \(keys) keys, batches of \(maxBatchSize)", unit: "ns/load", timings,
    ours: 0, per: loads, baselines: [("f.concurrentMap()", 2)])
  report(
    "the same through memoized(in:)", unit: "ns/load", timings, ours: 1, per: loads,
    baselines: [("f.concurrentMap()", 2)])
  print("  (\(keys / maxBatchSize) batch calls in every round, each way)")
}

private func fold(_ function: AsyncFunc<[Int], [Int]>, _ input: [Int]) {
  waitFor { done in
    function.run(input) { result in
      precondition((try? result.get().count) == input.count, "a fold failed")
      done()
    }
  }
}
