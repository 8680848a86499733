import AsyncCombinators
import Dispatch
import Synchronization

/// The shared admission core against the fold's own limit: a `Limiter` and a `WorkQueue` of 8
/// inside an unlimited `concurrentMap` of 100,000 hopping elements, against
/// `concurrentMap(limit: 8)` of the same body (and beside `limit(8)` in the same place, the
/// gate the two share); and what waiting costs per run at 10,000 and at
/// 160,000 waiters.
func runAdmissionScenario() {
  let count = 100_000
  let queue = DispatchQueue(label: "bench.admission", attributes: .concurrent)
  let input = Array(0..<count)
  let hop = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }

  func time(_ function: AsyncFunc<[Int], [Int]>) -> Int {
    let sum = Atomic(0)
    waitFor { done in
      function.run(input) { result in
        sum.store(succeeded(result).reduce(0, &+), ordering: .relaxed)
        done()
      }
    }
    return sum.load(ordering: .relaxed)
  }

  let folded = hop.concurrentMap(limit: 8)
  let sums = Box()
  let timings = measure([
    {
      sums.value.store(
        time(hop.limited(by: Limiter(concurrency: 8)).concurrentMap()), ordering: .relaxed)
    },
    {
      precondition(
        time(hop.queued(on: WorkQueue(limit: 8)).concurrentMap())
          == sums.value.load(ordering: .relaxed))
    },
    { precondition(time(folded) == sums.value.load(ordering: .relaxed), "results differ") },
    { precondition(time(hop.limit(8).concurrentMap()) == sums.value.load(ordering: .relaxed)) },
  ])
  report(
    "limited(by: Limiter(concurrency: 8)), \(count)", unit: "ns/element", timings, ours: 0,
    per: count, baselines: [("concurrentMap(limit: 8)", 2), ("limit(8)", 3)])
  report(
    "queued(on: WorkQueue(limit: 8)), \(count)", unit: "ns/element", timings, ours: 1,
    per: count, baselines: [("concurrentMap(limit: 8)", 2), ("limit(8)", 3)])

  // Waiting: one run holds the only slot while `waiters` queue behind it; then all drain.
  func waiting(_ waiters: Int) {
    let held = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let body = AsyncFunc<Int, Int> { x, complete in
      if x < 0 { held.withLock { $0 = complete } } else { complete(.success(x)) }
    }
    let limited = body.limited(by: Limiter(concurrency: 1))
    waitFor { done in
      let left = Atomic(waiters)
      limited.run(-1) { _ in }
      for x in 0..<waiters {
        limited.run(x) { _ in
          if left.subtract(1, ordering: .relaxed).newValue == 0 { done() }
        }
      }
      held.withLock { $0.take() }?(.success(-1))
    }
  }
  let small = 10_000
  let large = 160_000
  let growth = measure([{ waiting(small) }, { waiting(large) }])
  let perSmall = growth.median(0, per: small)
  let perLarge = growth.median(1, per: large)
  recordForBars("growth waiting", perLarge / perSmall)
  print(
    "Limiter waiting, per run".padding(toLength: 46, withPad: " ", startingAt: 0)
      + " \(small) waiters \(format(perSmall)) ns | \(large) waiters \(format(perLarge)) ns"
      + " (growth x\(String(format: "%.2f", perLarge / perSmall)))")
}
