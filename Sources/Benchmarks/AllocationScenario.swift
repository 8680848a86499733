import AsyncCombinators
import Dispatch
import Foundation
import Synchronization

/// Heap allocations per run, counted by valgrind over two numbers of runs (1,000 and 2,000),
/// so that what the process does once cancels out.
///
/// The child mode `--allocations-child <path> <runs>` does the runs, one after another, each
/// over before the next starts. A rejection is against a `.sync` stage that throws an error
/// of the same shape, so 0 means it allocates nothing beyond its error. With `modifiers`, each
/// modifier is against the plain hopping stage it wraps: what the modifier adds to a run.
func runAllocationScenario(modifiers: Bool = false) {
  guard
    let valgrind = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"].first(where: {
      FileManager.default.isExecutableFile(atPath: $0)
    })
  else {
    print("Allocations per run: valgrind not found, not measured")
    return
  }
  func perRun(_ path: String) -> Double? {
    let (small, large) = (1_000, 2_000)
    guard let few = allocations(path, runs: small, valgrind: valgrind),
      let many = allocations(path, runs: large, valgrind: valgrind)
    else { return nil }
    return Double(many - few) / Double(large - small)
  }
  func compare(_ rows: [(path: String, what: String)], against baseline: String, bars: Bool) {
    guard let base = perRun(baseline) else {
      return print("Allocations per run: valgrind did not report")
    }
    for (path, what) in rows {
      guard let figure = perRun(path) else { continue }
      if bars { recordForBars("allocations \(path)", figure - base) }
      print(
        what.padding(toLength: 46, withPad: " ", startingAt: 0)
          + " \(format(figure - base)) allocations per run beyond it"
          + " (\(format(figure)) against \(format(base)))")
    }
  }
  print("\nAllocations per run, counted by valgrind")
  compare(
    [
      ("limiter", "Limiter rejection, against its error"),
      ("breaker", "Open breaker's rejection, against its error"),
    ], against: "failing", bars: true)
  if modifiers {
    compare(
      allocationModifiers.keys.sorted().map { ($0, "\($0), against the plain stage") },
      against: "plain", bars: false)
  }
}

/// The total heap allocations valgrind reports for one child run of `path`.
private func allocations(_ path: String, runs: Int, valgrind: String) -> Int? {
  let child = Process()
  child.executableURL = URL(fileURLWithPath: valgrind)
  child.arguments = [CommandLine.arguments[0], "--allocations-child", path, "\(runs)"]
  let pipe = Pipe()
  child.standardError = pipe
  child.standardOutput = FileHandle.nullDevice
  guard (try? child.run()) != nil else { return nil }
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  child.waitUntilExit()
  // "total heap usage: 12,345 allocs, 12,300 frees, …"
  guard
    let line = output.split(separator: "\n").first(where: { $0.contains("total heap usage") })
  else { return nil }
  let words = line.split(separator: " ")
  guard let allocs = words.firstIndex(where: { $0.hasPrefix("allocs") }) else { return nil }
  return Int(words[words.index(before: allocs)].replacingOccurrences(of: ",", with: ""))
}

/// A stage that completes on a global queue, as real work does.
private let hop = AsyncFunc<Int, Int>(name: "hop") { x, complete in
  DispatchQueue.global().async { complete(.success(x &+ 1)) }
}

/// Each modifier around the plain hopping stage.
private let allocationModifiers: [String: AsyncFunc<Int, Int>] = [
  "recover": hop.recover { _ in 0 },
  "finally": hop.finally(.sync { _ in }),
  "retry(2)": hop.retry(2),
  "on(queue)": hop.on(DispatchQueue.global()),
  "timeout(30 s)": hop.timeout(.seconds(30)),
  "limit(8)": hop.limit(8),
]

/// The runs one valgrind child counts: `runs` runs of the path, one after another.
func runAllocationChild(_ path: String, runs: Int) {
  let function: AsyncFunc<Int, Int>
  var failing = false
  switch path {
  case "limiter":
    // The first run holds the only slot for the whole process: every other run is rejected.
    let held = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let parked = AsyncFunc<Int, Int>(name: "parked") { _, complete in
      held.withLock { $0 = complete }
    }
    function = parked.limited(by: Limiter(concurrency: 1, queue: .none))
    function.run(-1) { _ in }
    failing = true
  case "breaker":
    let breaker = CircuitBreaker(
      name: "bench", minimumThroughput: 1, breakDuration: .seconds(3_600))
    function = AsyncFunc<Int, Int>.sync { _ in throw LimitExceeded(retryAfter: nil) }
      .guarded(by: breaker)
    function.run(-1) { _ in }  // The one failure that opens it.
    precondition(breaker.state == .open, "the breaker did not open")
    failing = true
  case "failing":
    function = .sync { _ in throw LimitExceeded(retryAfter: nil) }
    failing = true
  case "plain":
    function = hop
  default:
    guard let modified = allocationModifiers[path] else { fatalError("no path \(path)") }
    function = modified
  }
  let failures = Box()
  for x in 0..<runs {
    let done = DispatchSemaphore(value: 0)
    function.run(x) { result in
      if case .failure = result { failures.value.add(1, ordering: .relaxed) }
      done.signal()
    }
    done.wait()
  }
  precondition(failures.value.load(ordering: .relaxed) == (failing ? runs : 0))
}
