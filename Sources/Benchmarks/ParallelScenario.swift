import AsyncCombinators
import Dispatch
import Synchronization

/// A 100,000-branch parallel fold whose branches each hop to a concurrent queue, against
/// `DispatchGroup` with a locked array (the same hops), the same keeping the callback contract
/// by hand, and `TaskGroup` for memory.
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
    { sum.value.store(contractKeepingFanOut(count, on: queue), ordering: .relaxed) },
  ])
  report(
    "parallel, \(count) branches", unit: "ns/branch", timings, ours: 0, per: count,
    baselines: [("DispatchGroup", 1), (contractKeepingLabel, 2)])
  reportContractFloor("parallel", timings, floor: 2, plain: 1)
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

/// The label of ``contractKeepingFanOut(_:on:)`` in the report.
let contractKeepingLabel = "DispatchGroup, contract kept"

/// `DispatchGroup` with a locked array, keeping the callback contract by hand: each branch's
/// `complete` is an object that claims the one call (a second is dropped) and notices being
/// released uncalled, held by a closure of its own that the hop captures.
///
/// Those are the two allocations a branch of the library cannot do without, both made on the
/// starting thread and freed on the finishing one: the completion object that enforces the
/// contract, and the box Swift makes when the caller's closure captures a `complete` whose type
/// is generic in the library (`Result<Output, any Error>` is passed indirectly there and
/// directly in the caller's closure, so the caller's copy is a thunk around the library's).
/// Against the plain fan-out, this one shows what the contract's objects cost alone; against
/// it, the library's figure shows what the rest of its work costs.
@inline(never)
func contractKeepingFanOut(_ count: Int, on queue: DispatchQueue) -> Int {
  let group = DispatchGroup()
  let results = Mutex([Int](repeating: 0, count: count))
  for index in 0..<count {
    group.enter()
    let complete = exactlyOnceCompletion { value in
      results.withLock { $0[index] = value }
      group.leave()
    }
    queue.async { complete(index) }
  }
  group.wait()
  return results.withLock { $0.reduce(0, &+) }
}

/// A completion that delivers to `deliver` once, made out of line as the library makes its own:
/// inlined, the optimizer would fold it into the hop's closure, which no caller of a library
/// gets.
@inline(never)
private func exactlyOnceCompletion(
  _ deliver: @escaping @Sendable (Int) -> Void
) -> @Sendable (Int) -> Void {
  let once = ExactlyOnce()
  return { value in
    guard once.claim() else { return }
    deliver(value)
  }
}

/// A hand-written completion's exactly-once check, as the library's completion object makes it.
private final class ExactlyOnce: Sendable {
  private let called = Atomic(false)

  func claim() -> Bool { !called.exchange(true, ordering: .acquiringAndReleasing) }

  deinit {
    precondition(called.load(ordering: .acquiring), "a branch was released uncalled")
  }
}

/// Keeps, for the end of the run, what the contract's two objects cost a fan-out alone (the
/// contract-keeping baseline against the plain one) and what the library costs beyond them.
func reportContractFloor(_ row: String, _ timings: Timings, floor: Int, plain: Int) {
  recordForBars("floor \(row)", timings.ratio(floor, to: plain))
}

/// Peak memory of one 100,000-branch fan-out, run alone in a child process so that each
/// figure is its own peak.
///
/// `when` is the Promise facade's `when` over promises made with `firstly`, whose blocks hop
/// to a global queue: the work PromiseKit's `when(fulfilled:)` is measured on in issue 39.
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
  case "when":
    let all = when((0..<count).map { index in firstly { index } })
    waitFor { done in all.always { done() }.error { _ in } }
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
