import AsyncCombinators
import Dispatch
import Synchronization

/// `--profile <name> [count]`: one contender alone, five times over `count` elements (100,000
/// unless given), for `perf stat` and callgrind, where a ratio hides which instructions make it.
func runProfile(_ name: String, count: Int = 100_000) {
  let f = AsyncFunc<Int, Int>(name: "f") { x, complete in
    DispatchQueue.global().async { complete(.success(x &+ 1)) }
  }
  let folds: [String: AsyncFunc<[Int], [Int]>] = [
    "map": f.concurrentMap(),
    "map8": f.concurrentMap(limit: 8),
    "on": f.on(DispatchQueue.global()).concurrentMap(),
    "recover": f.recover { _ in 0 }.concurrentMap(),
    "finally": f.finally(.sync { _ in }).concurrentMap(),
    "retry": f.retry(2).concurrentMap(),
    "retry-jittered": f.retry(2, jitter: .full).concurrentMap(),
    "guarded": f.guarded(by: CircuitBreaker()).concurrentMap(),
    "hedged": f.hedged(after: .seconds(30)).concurrentMap(),
    "timeout": f.timeout(.seconds(30)).concurrentMap(),
    "limit": f.limit(8).concurrentMap(),
    "settled": f.settled().concurrentMap().map { try $0.map { try $0.get() } },
    "race": AsyncFunc.race([f]).concurrentMap(),
    "latest": f.latest().concurrentMap(limit: 1),
    "serialized": f.serialized().concurrentMap(),
    "async": AsyncFunc<Int, Int>.async { $0 &+ 1 }.concurrentMap(),
    "infallible": AsyncFunc<Int, Int>.infallible { x, done in
      DispatchQueue.global().async { done(x &+ 1) }
    }.concurrentMap(),
  ]
  let parallel = AsyncFunc.parallel(Array(repeating: f, count: count))
  let input = Array(0..<count)
  for _ in 0..<5 {
    if name == "group" {
      let group = DispatchGroup()
      let results = Mutex([Int](repeating: 0, count: count))
      for x in input {
        group.enter()
        DispatchQueue.global().async {
          results.withLock { $0[x] = x &+ 1 }
          group.leave()
        }
      }
      group.wait()
    } else if name == "contract" {
      _ = contractKeepingFanOut(count, on: DispatchQueue.global())
    } else if name == "parallel" {
      waitFor { done in parallel.run(0) { _ in done() } }
    } else if let fold = folds[name] {
      waitFor { done in fold.run(input) { _ in done() } }
    } else {
      fatalError(
        "no profile \(name): try group, contract, parallel or one of \(folds.keys.sorted())")
    }
  }
}
