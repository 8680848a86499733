import AsyncCombinators
import Foundation
import Synchronization

/// Heap allocations per run of a path that must allocate nothing beyond its error: counted by
/// valgrind over two numbers of runs, so that what the process does once cancels out.
///
/// `--allocations` runs this binary under valgrind once per path and count; the child mode
/// `--allocations-child <path> <runs>` does the runs. Each path is against a `.sync` stage
/// that throws an error of the same shape: a figure of 0 means the path allocates nothing
/// beyond what any failing run does.
func runAllocationScenario() {
  guard
    let valgrind = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"].first(where: {
      FileManager.default.isExecutableFile(atPath: $0)
    })
  else {
    print("Allocations per rejection: valgrind not found, not measured")
    return
  }
  func allocations(_ path: String, runs: Int) -> Int? {
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
      let line = output.split(separator: "\n").first(where: { $0.contains("total heap usage") }),
      let allocs = line.split(separator: " ").firstIndex(where: { $0.hasPrefix("allocs") })
    else { return nil }
    let words = line.split(separator: " ")
    return Int(words[words.index(before: allocs)].replacingOccurrences(of: ",", with: ""))
  }
  func perRun(_ path: String) -> Double? {
    let (small, large) = (1_000, 2_000)
    guard let few = allocations(path, runs: small), let many = allocations(path, runs: large)
    else { return nil }
    return Double(many - few) / Double(large - small)
  }
  guard let baseline = perRun("failing") else {
    print("Allocations per rejection: valgrind did not report")
    return
  }
  for (path, what) in [("limiter", "Limiter rejection (queue: .none)")] {
    guard let figure = perRun(path) else { continue }
    let extra = figure - baseline
    recordForBars("allocations \(path)", extra)
    print(
      "\(what), allocations beyond the error".padding(
        toLength: 70, withPad: " ", startingAt: 0)
        + " \(String(format: "%.2f", extra)) (\(String(format: "%.2f", figure)) against \(String(format: "%.2f", baseline)))"
    )
  }
}

/// The runs one valgrind child counts: `runs` runs of the path, one after another, each
/// ending before the next starts.
func runAllocationChild(_ path: String, runs: Int) {
  let function: AsyncFunc<Int, Int>
  switch path {
  case "limiter":
    // The first run holds the only slot for the whole process: every other run is rejected.
    let held = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let parked = AsyncFunc<Int, Int>(name: "parked") { _, complete in
      held.withLock { $0 = complete }
    }
    function = parked.limited(by: Limiter(concurrency: 1, queue: .none))
    function.run(-1) { _ in }
  default:
    function = .sync { _ in throw LimitExceeded(retryAfter: nil) }
  }
  let failures = Box()
  for x in 0..<runs {
    function.run(x) { result in
      if case .failure = result { failures.value.add(1, ordering: .relaxed) }
    }
  }
  precondition(failures.value.load(ordering: .relaxed) == runs, "every run is rejected")
}
