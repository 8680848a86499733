// The allocation check: heap allocations per run of the library's main paths, each held to a
// committed limit. `.ci/allocations` builds it `-c release` and runs it; it exits non-zero
// naming every path over its limit. Performance.md's section "What the code's shape buys, and
// the check that holds it" says which reason of cost each row holds.
//
// A path is run many times after a warm-up, in rounds; a row is the fewest allocations a round
// made, per run (or per element, per branch, per link), rounded: Dispatch's threads and caches
// allocate now and then on their own, and a round they fell in counts more. A limit is the
// count measured when it was set: lower it when a change saves an allocation. A path whose
// runs leave blocks allocated, about one a run or more (a leak, such as a cycle of
// references), fails too.
//
// `--print` prints the table and checks nothing (for setting limits). Only Linux counts (the
// C target defines malloc there); elsewhere the check says so and passes.

import AsyncCombinators
import CAllocationCounter
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// One main path: what one run does, and the allocations per unit it may make.
struct Path {
  let name: String
  /// Allocations per unit at most: the count measured when the limit was set.
  let limit: Int
  /// What a run counts in: 1 for a whole run, or its elements, branches or links.
  let units: Int
  /// Runs per round.
  let runs: Int
  /// One run, over when it returns.
  let run: () -> Void
}

/// Runs `function` on `input` and waits for it to complete; `done` and `completion` are made
/// once per path, so that the waiting adds no allocation of its own to a run.
final class Waiter<Input: Sendable, Output: Sendable>: Sendable {
  private let function: AsyncFunc<Input, Output>
  private let done = DispatchSemaphore(value: 0)
  private let completion: @Sendable (Result<Output, any Error>) -> Void

  init(_ function: AsyncFunc<Input, Output>) {
    self.function = function
    let done = done
    completion = { result in
      if case .failure(let error) = result { fatalError("a checked run failed: \(error)") }
      done.signal()
    }
  }

  func run(_ input: Input) {
    function.run(input, completion: completion)
    done.wait()
  }
}

/// A stage that completes on a global queue, as real work does.
let hop = AsyncFunc<Int, Int>(name: "hop") { x, complete in
  DispatchQueue.global().async { complete(.success(x &+ 1)) }
}
let increment = AsyncFunc<Int, Int>.sync { $0 &+ 1 }
let serialQueue = DispatchQueue(label: "allocation-check")

func paths() -> [Path] {
  let sync = Waiter(increment)
  let chain = Waiter(increment +> increment +> increment)
  let pair = Waiter(increment <> increment)
  let onQueue = Waiter(increment.on(serialQueue))
  let timeout = Waiter(hop.timeout(.seconds(3_600)))
  let limited = Waiter(hop.limited(by: Limiter(concurrency: 8)))
  let elements = 1_000
  let map = Waiter(hop.concurrentMap(limit: 8))
  let mapInput = Array(0..<elements)
  let branches = 1_000
  let parallel = Waiter(AsyncFunc.parallel(Array(repeating: hop, count: branches)))
  let links = 100
  return [
    Path(name: "synchronous run", limit: 5, units: 1, runs: 10_000) { sync.run(1) },
    Path(name: "+> chain of 3", limit: 7, units: 1, runs: 10_000) { chain.run(1) },
    Path(name: "<> of two", limit: 15, units: 1, runs: 10_000) { pair.run(1) },
    Path(name: "on(queue)", limit: 7, units: 1, runs: 5_000) { onQueue.run(1) },
    // 17 in most processes, 18 in some: one more allocation per run for the whole process
    // (in every round), seemingly in re-arming the shared timer's dispatch source.
    Path(name: "timeout, not firing", limit: 18, units: 1, runs: 5_000) { timeout.run(1) },
    Path(name: "limited(by:), uncontended", limit: 13, units: 1, runs: 5_000) { limited.run(1) },
    Path(name: "concurrentMap(limit: 8), per element", limit: 7, units: elements, runs: 20) {
      map.run(mapInput)
    },
    Path(name: "parallel, per branch", limit: 6, units: branches, runs: 20) { parallel.run(1) },
    Path(name: "Promise then, per link", limit: 3, units: links, runs: 200) {
      // Built and run: a link's cost is both.
      var promise = Promise(AsyncFunc<Void, Int>.sync { 0 })
      for _ in 0..<links { promise = promise.then { $0 &+ 1 } }
      Waiter(promise.chain).run(())
    },
  ]
}

/// What a path's runs cost: allocations per unit, and blocks per unit still held after the
/// runs (a leak, such as a cycle of references, shows there).
struct Measured {
  var allocations: Double
  var held: Double
}

/// The fewest allocations, and blocks held, per unit over `rounds` rounds of the path, after
/// a warm-up.
func measure(_ path: Path, rounds: Int = 5) -> Measured {
  for _ in 0..<max(path.runs / 10, 2) { path.run() }
  var fewest = Int64.max
  var leastHeld = Int64.max
  for _ in 0..<rounds {
    let before = (ac_allocations(), ac_live_blocks())
    for _ in 0..<path.runs { path.run() }
    fewest = min(fewest, ac_allocations() - before.0)
    leastHeld = min(leastHeld, ac_live_blocks() - before.1)
  }
  let units = Double(path.runs * path.units)
  return Measured(allocations: Double(fewest) / units, held: Double(leastHeld) / units)
}

func padded(_ text: String, _ width: Int) -> String {
  text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func twoDecimals(_ value: Double) -> String {
  let hundredths = Int((abs(value) * 100).rounded())
  let fraction = String(hundredths % 100)
  let sign = value < 0 && hundredths > 0 ? "-" : ""
  return sign + "\(hundredths / 100)." + (fraction.count == 1 ? "0" + fraction : fraction)
}

guard ac_counting_available() else {
  print("Allocation check: counting allocations needs Linux; skipped")
  exit(0)
}
let printOnly = CommandLine.arguments.contains("--print")
print(padded("path", 40) + padded("allocations", 14) + padded("limit", 8) + "held")
var exceeded: [String] = []
var leaking: [String] = []
for path in paths() {
  let measured = measure(path)
  let over = Int(measured.allocations.rounded()) > path.limit
  let leaks = Int(measured.held.rounded()) > 0
  if over { exceeded.append(path.name) }
  if leaks { leaking.append(path.name) }
  print(
    padded(path.name, 40) + padded(twoDecimals(measured.allocations), 14)
      + padded("\(path.limit)", 8) + twoDecimals(measured.held)
      + (over && !printOnly ? "  over the limit" : "") + (leaks && !printOnly ? "  leaks" : ""))
}
if !printOnly {
  if !exceeded.isEmpty {
    print(
      "Allocation check failed: more allocations than the limit in "
        + exceeded.joined(separator: ", "))
  }
  if !leaking.isEmpty {
    print(
      "Allocation check failed: blocks left allocated after the runs of "
        + leaking.joined(separator: ", "))
  }
  if !exceeded.isEmpty || !leaking.isEmpty { exit(1) }
}
