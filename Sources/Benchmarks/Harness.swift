import AsyncCombinatorsTesting
import Dispatch
import Foundation

/// Times each contender `repetitions` times, interleaved (ours, baseline, ours, ...), and
/// returns every round's times.
///
/// Medians, not means: the machines are shared, and one descheduled run should not move the
/// figure. Interleaving puts a noisy neighbour on both sides of the ratio, not one. Each round
/// after the first goes in a shuffled order (the same in every process): a contender that
/// leaves Dispatch's threads awake, or the allocator's bins full, would otherwise always hand
/// that state to the same neighbour.
func measure(repetitions: Int = 7, _ contenders: [() -> Void]) -> Timings {
  var rounds = Array(repeating: [Double](), count: contenders.count)
  var order = Array(contenders.indices)
  var random = SplitMix64(seed: 0x5EED)
  for round in 0..<repetitions {
    if round > 0 { order.shuffle(using: &random) }
    for index in order {
      let start = DispatchTime.now().uptimeNanoseconds
      contenders[index]()
      rounds[index].append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
  }
  return Timings(rounds: rounds)
}

/// What ``measure(repetitions:_:)`` timed: each contender's time in every round.
struct Timings {
  /// Nanoseconds, by contender, then by round.
  let rounds: [[Double]]

  /// The contender's median time in nanoseconds, divided by `units` (elements, stages, ...).
  func median(_ contender: Int, per units: Int = 1) -> Double {
    Timings.median(rounds[contender]) / Double(units)
  }

  /// The median, over the rounds, of the contender's time against the baseline's in the same
  /// round. Paired, so that a slow spell of the machine, which often lasts longer than a
  /// round, slows both sides of a ratio rather than the samples of one contender alone.
  func ratio(_ contender: Int, to baseline: Int) -> Double {
    Timings.median(zip(rounds[contender], rounds[baseline]).map { $0 / $1 })
  }

  private static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
}

/// The value of a benchmarked run, which must succeed: a failed run times nothing worth
/// reporting, so it stops the benchmark, naming the error.
func succeeded<Value>(_ result: Result<Value, any Error>) -> Value {
  switch result {
  case .success(let value): return value
  case .failure(let error): preconditionFailure("a benchmarked run failed: \(error)")
  }
}

/// Blocks the calling (main) thread until `start` calls its argument: benchmarks measure
/// whole runs, and the main thread is not part of the cooperative pool.
func waitFor(_ start: (@escaping @Sendable () -> Void) -> Void) {
  let done = DispatchSemaphore(value: 0)
  start { done.signal() }
  done.wait()
}

/// One row of the report: our figure per unit, each baseline's, and our paired ratio to each
/// (see ``Timings/ratio(_:to:)``).
func report(
  _ scenario: String, unit: String, _ timings: Timings, ours: Int, per units: Int,
  baselines: [(String, Int)]
) {
  let name = scenario.padding(toLength: 46, withPad: " ", startingAt: 0)
  var line = "\(name) ours \(format(timings.median(ours, per: units))) \(unit)"
  for (label, baseline) in baselines {
    let ratio = timings.ratio(ours, to: baseline)
    recordForBars(barKey(scenario, against: label), ratio)
    line += " | \(label) \(format(timings.median(baseline, per: units)))"
    line += " (x\(String(format: "%.2f", ratio)))"
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
