import AsyncCombinators
import Dispatch
import Synchronization

/// `concurrentMap(limit: 8)` over 100,000 elements whose body hops to a concurrent queue,
/// against a hand-written DispatchGroup + semaphore version of the same work (HoneyBee's
/// approach: the caller blocks while eight are in flight).
func runConcurrentMapScenario() {
  let count = 100_000
  let limit = 8
  let queue = DispatchQueue(label: "bench.concurrentMap", attributes: .concurrent)
  let input = Array(0..<count)

  let hop = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }
  let mapped = hop.concurrentMap(limit: limit)
  func library() -> Int {
    let done = DispatchSemaphore(value: 0)
    let sum = Atomic(0)
    mapped.run(input) { result in
      sum.store(succeeded(result).reduce(0, &+), ordering: .relaxed)
      done.signal()
    }
    done.wait()
    return sum.load(ordering: .relaxed)
  }

  func baseline() -> Int {
    let group = DispatchGroup()
    let slots = DispatchSemaphore(value: limit)
    let results = Mutex([Int](repeating: 0, count: count))
    for x in input {
      slots.wait()
      group.enter()
      queue.async {
        let y = x &* 2
        results.withLock { $0[x] = y }
        slots.signal()
        group.leave()
      }
    }
    group.wait()
    return results.withLock { $0.reduce(0, &+) }
  }

  let sums = Box()
  let timings = measure([
    { sums.value.store(library(), ordering: .relaxed) },
    { precondition(baseline() == sums.value.load(ordering: .relaxed), "results differ") },
  ])
  report(
    "concurrentMap(limit: \(limit)), \(count) elements", unit: "ns/element", timings, ours: 0,
    per: count, baselines: [("DispatchGroup + semaphore", 1)])
}
