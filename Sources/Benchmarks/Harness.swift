import AsyncCombinatorsTesting
import Dispatch
import Foundation

/// Times each contender `repetitions` times, interleaved (ours, baseline, ours, ...), and
/// returns each one's median in nanoseconds.
///
/// Medians, not means: the machines are shared, and one descheduled run should not move the
/// figure. Interleaving puts a noisy neighbour on both sides of the ratio, not one. Each round
/// after the first goes in a shuffled order (the same in every process): a contender that
/// leaves Dispatch's threads awake, or the allocator's bins full, would otherwise always hand
/// that state to the same neighbour.
func medianNanoseconds(repetitions: Int = 7, _ contenders: [() -> Void]) -> [Double] {
  var samples = Array(repeating: [UInt64](), count: contenders.count)
  var order = Array(contenders.indices)
  var random = SplitMix64(seed: 0x5EED)
  for round in 0..<repetitions {
    if round > 0 { order.shuffle(using: &random) }
    for index in order {
      let start = DispatchTime.now().uptimeNanoseconds
      contenders[index]()
      samples[index].append(DispatchTime.now().uptimeNanoseconds - start)
    }
  }
  return samples.map { Double($0.sorted()[$0.count / 2]) }
}

/// Blocks the calling (main) thread until `start` calls its argument: benchmarks measure
/// whole runs, and the main thread is not part of the cooperative pool.
func waitFor(_ start: (@escaping @Sendable () -> Void) -> Void) {
  let done = DispatchSemaphore(value: 0)
  start { done.signal() }
  done.wait()
}

/// One row of the report: our figure, the baseline's, and their ratio.
func report(_ scenario: String, unit: String, ours: Double, baselines: [(String, Double)]) {
  let name = scenario.padding(toLength: 46, withPad: " ", startingAt: 0)
  var line = "\(name) ours \(format(ours)) \(unit)"
  for (label, value) in baselines {
    line += " | \(label) \(format(value)) (x\(String(format: "%.2f", ours / value)))"
  }
  print(line)
}

func format(_ value: Double) -> String {
  value >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
}

/// Peak resident memory of this process so far, in megabytes.
///
/// On Linux this reads `VmHWM`, the high-water mark of this address space: `ru_maxrss` would
/// carry the parent's peak across `exec`, which is exactly what the child processes avoid.
func peakResidentMegabytes() -> Double {
  #if os(Linux)
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
    return kilobytes / 1024
  #else
    var usage = rusage()
    getrusage(RUSAGE_SELF, &usage)
    return Double(usage.ru_maxrss) / 1_048_576  // bytes on Darwin
  #endif
}
