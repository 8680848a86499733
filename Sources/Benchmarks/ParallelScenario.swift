import AsyncCombinators
import Dispatch
import Synchronization

/// A 100,000-branch parallel fold whose branches each hop to a concurrent queue, against
/// `DispatchGroup` with a locked array (the same hops), and `TaskGroup` for memory.
func runParallelScenario(branches count: Int = 100_000) {
  let queue = DispatchQueue(label: "benchmark.parallel", attributes: .concurrent)
  let fold = AsyncFunc.parallel(
    (0..<count).map { index in
      AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &+ index)) } }
    })
  let sum = Box()

  let timings = measure([
    {
      waitFor { done in
        fold.run(0) { result in
          sum.value.store(succeeded(result).reduce(0, &+), ordering: .relaxed)
          done()
        }
      }
    },
    { sum.value.store(dispatchGroupFanOut(count, on: queue), ordering: .relaxed) },
  ])
  report(
    "parallel, \(count) branches", unit: "ns/branch", timings, ours: 0, per: count,
    baselines: [("DispatchGroup", 1)])
}

@inline(never)
func dispatchGroupFanOut(_ count: Int, on queue: DispatchQueue) -> Int {
  let group = DispatchGroup()
  let results = Mutex([Int](repeating: 0, count: count))
  for index in 0..<count {
    group.enter()
    queue.async {
      results.withLock { $0[index] = index }
      group.leave()
    }
  }
  group.wait()
  return results.withLock { $0.reduce(0, &+) }
}

/// Peak memory of one 100,000-branch fan-out, run alone in a child process so that each
/// figure is its own peak.
func runParallelMemory(_ kind: String, branches count: Int = 100_000) {
  let before = peakResidentMegabytes()
  let queue = DispatchQueue(label: "benchmark.memory", attributes: .concurrent)
  switch kind {
  case "ours":
    let fold = AsyncFunc.parallel(
      (0..<count).map { index in
        AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &+ index)) } }
      })
    waitFor { done in fold.run(0) { _ in done() } }
  case "dispatch":
    _ = dispatchGroupFanOut(count, on: queue)
  default:
    waitFor { done in
      Task {
        await withTaskGroup(of: (Int, Int).self) { group in
          for index in 0..<count { group.addTask { (index, index) } }
          var results = [Int](repeating: 0, count: count)
          for await (index, value) in group { results[index] = value }
        }
        done()
      }
    }
  }
  print("memory \(kind) \(format(peakResidentMegabytes() - before))")
}
