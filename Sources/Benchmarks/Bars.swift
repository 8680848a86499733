import Foundation
import Synchronization

/// The bars the issues set, checked against this run's figures at the end of a whole run.
///
/// Every reported ratio is recorded under its row and baseline; ``printBars()`` then lists
/// each bar beside the figure this run measured. One run on a shared machine says little
/// about a row near its bar (a row moves between runs by more than most bars allow): run the
/// benchmark a few times and read the middle, as the Performance guide does.
private let recorded = Mutex<[String: Double]>([:])

/// Keeps `value` for the bars, under `key`.
func recordForBars(_ key: String, _ value: Double) {
  recorded.withLock { $0[key] = value }
}

/// The key of a reported ratio: the row, then the baseline it is against.
func barKey(_ row: String, against baseline: String) -> String { "\(row) | \(baseline)" }

private struct Bar {
  let what: String
  let key: String
  /// The most the figure may be.
  let limit: Double
  let unit: String
}

private let modifierOverheadBars: [Bar] = [
  ("on(queue)", 1.5), ("recover", 1.5), ("finally", 1.5), ("retry(2)", 1.5), ("settled", 1.5),
  ("timeout(30 s)", 2.0), ("limit(8)", 2.0), ("retry(2) jittered", 1.5),
  ("guarded closed", 1.5), ("hedged primary wins", 2.0), ("race([f])", 2.0),
].map { name, limit in
  Bar(what: "\(name) against the plain map", key: "overhead \(name)", limit: limit, unit: "x")
}

private let growthBars: [Bar] = [
  "on(queue)", "recover", "finally", "retry(2)", "timeout(30 s)", "limit(8)", "latest, limit 1",
  "settled", "race([f])",
].map { Bar(what: "\($0) growth, 10,000 to 160,000", key: "growth \($0)", limit: 1.3, unit: "x") }

private let bars: [Bar] =
  [
    Bar(
      what: "1 × .on(queue) against DispatchQueue.async",
      key: barKey("1 × .on(queue) stage, 10000 runs", against: "DispatchQueue.async"), limit: 1.3,
      unit: "x"),
    Bar(
      what: "3 × .on(queue) against DispatchQueue.async",
      key: barKey("3 × .on(queue) stage, 10000 runs", against: "DispatchQueue.async"), limit: 1.3,
      unit: "x"),
    Bar(
      what: "Promise then against a hand-written hop",
      key: barKey("Promise, 1000 × then", against: "DispatchQueue.global().async"), limit: 1.5,
      unit: "x"),
    Bar(
      what: "concurrentMap() against the contract kept by hand",
      key: barKey("concurrentMap(), 100000 elements", against: contractKeepingLabel),
      limit: 1.15, unit: "x"),
    Bar(
      what: "parallel against the contract kept by hand",
      key: barKey("parallel, 100000 branches", against: contractKeepingLabel), limit: 1.15,
      unit: "x"),
    Bar(
      what: ".sync stage against a hand-written continuation",
      key: barKey("serial, 1000000 .sync stages", against: "hand-written CPS"), limit: 1.2,
      unit: "x"),
    Bar(
      what: "limited(by:) against concurrentMap(limit: 8)",
      key: barKey(
        "limited(by: Limiter(concurrency: 8)), 100000", against: "concurrentMap(limit: 8)"),
      limit: 2.0, unit: "x"),
    Bar(
      what: "queued(on:) against concurrentMap(limit: 8)",
      key: barKey("queued(on: WorkQueue(limit: 8)), 100000", against: "concurrentMap(limit: 8)"),
      limit: 2.0, unit: "x"),
    Bar(
      what: "Limiter waiting, growth 10,000 to 160,000", key: "growth waiting", limit: 1.3,
      unit: "x"),
    Bar(
      what: "Limiter rejection, allocations beyond its error", key: "allocations limiter",
      limit: 0, unit: ""),
    Bar(
      what: "Open breaker's rejection, allocations beyond its error",
      key: "allocations breaker", limit: 0, unit: ""),
  ] + modifierOverheadBars + growthBars
  + ["ordered", "unordered"].map { order in
    Bar(
      what: "concurrentMap(over:), \(order), against the array",
      key: barKey(
        "concurrentMap(over:), 100000, hop, \(order)", against: "array concurrentMap(limit: 8)"),
      limit: 1.5, unit: "x")
  }
  + [
    Bar(
      what: "concurrentMap(over:) of 1,000,000, process peak", key: "stream peak", limit: 64,
      unit: " MB")
  ]
  + [
    (
      "f.shared() with distinct keys against the map", "f.shared(), 100000 distinct keys in a map",
      "f.concurrentMap()"
    ),
    ("memoized hit against a .sync stage", "memoized hit, 1000000 runs", ".sync stage"),
    (
      "batched load against a map element", "10000 loads, 100 keys, batches of 10",
      "f.concurrentMap()"
    ),
    (
      "batched + memoized load against a map element", "the same through memoized(in:)",
      "f.concurrentMap()"
    ),
  ].map { what, row, baseline in
    Bar(what: what, key: barKey(row, against: baseline), limit: 2.0, unit: "x")
  }

/// Prints every bar, the figure this run measured for it, and whether that figure is within it.
func printBars() {
  let figures = recorded.withLock { $0 }
  print("\nAgainst the issues' bars (this run alone; read the middle of a few runs)")
  for bar in bars {
    let name = bar.what.padding(toLength: 52, withPad: " ", startingAt: 0)
    let limit = "\(String(format: "%g", bar.limit))\(bar.unit)"
    guard let figure = figures[bar.key] else {
      print("\(name) not measured (bar \(limit))")
      continue
    }
    let verdict = figure <= bar.limit ? "within" : "over"
    print("\(name) \(String(format: "%.2f", figure))\(bar.unit)  \(verdict) \(limit)")
  }
  printContractFloors(figures)
}

/// The fan-out rows split in two: what the callback contract's two objects per branch cost a
/// hand-written `DispatchGroup` fan-out alone, and what the library costs beyond that.
private func printContractFloors(_ figures: [String: Double]) {
  let rows = [
    ("parallel", "parallel, 100000 branches"),
    ("concurrentMap()", "concurrentMap(), 100000 elements"),
  ]
  print("\nThe fan-out rows against DispatchGroup, split: the contract's objects, then the rest")
  for (name, row) in rows {
    guard let floor = figures["floor \(name)"],
      let rest = figures[barKey(row, against: contractKeepingLabel)]
    else { continue }
    let label = name.padding(toLength: 16, withPad: " ", startingAt: 0)
    print(
      "\(label) contract kept by hand \(String(format: "%.2f", floor))x DispatchGroup; "
        + "ours \(String(format: "%.2f", rest))x that")
  }
}
