import AsyncCombinators
import Foundation

// `swift run -c release Benchmarks` prints every scenario, each against a hand-written
// baseline measured in the same run. Medians of seven, and each ratio the median of the rounds'
// ratios; ratios matter more than nanoseconds.

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "--memory", let kind = arguments.dropFirst().first {
  if kind == "stream" { runConcurrentMapStreamMemory() } else { runParallelMemory(kind) }
  exit(0)
}

if arguments.first == "--allocations-child", let path = arguments.dropFirst().first {
  runAllocationChild(path, runs: arguments.dropFirst(2).first.flatMap { Int($0) } ?? 1_000)
  exit(0)
}

print("AsyncCombinators benchmarks (release build, medians of 7, interleaved, ratios by round)")
if arguments.first == "--serial" {
  // A smaller chain for instruction counting under valgrind.
  runSerialScenario(stages: arguments.dropFirst().first.flatMap { Int($0) } ?? 1_000_000)
  exit(0)
}
if arguments.first == "--hot" {
  // One callback stage repeated, for instruction counts under valgrind.
  let stage = AsyncFunc<Int, Int> { x, complete in complete(.success(x &+ 1)) }
  let chain = AsyncFunc.serial(Array(repeating: stage, count: 100_000))
  let result = Box()
  chain.run(0) { result.value.store(succeeded($0), ordering: .relaxed) }
  exit(result.value.load(ordering: .relaxed) == 100_000 ? 0 : 1)
}
if arguments.first == "--modifiers" {
  // The modifier section alone, optionally at other widths: `--modifiers 10000 20000`.
  let widths = arguments.dropFirst().compactMap { Int($0) }
  if widths.isEmpty {
    runModifierScenario()
    runAdmissionScenario()
  } else {
    runModifierScenario(widths: widths, overheadWidth: widths[widths.count / 2])
  }
  exit(0)
}
if arguments.first == "--rows" {
  // Chosen modifier rows alone at 100,000 elements: `--rows timeout(30 s) limit(8)`.
  runModifierScenario(widths: [100_000], rows: ["none"] + arguments.dropFirst())
  exit(0)
}
if arguments.first == "--resilience" {
  // The resilience rows alone, at the width their bars are stated at.
  runModifierScenario(
    widths: [100_000], rows: ["none", "retry(2) jittered", "guarded closed", "hedged primary wins"])
  exit(0)
}
if arguments.first == "--promise" {
  // The promise and hop rows alone, optionally at other lengths: `--promise 100 4000`.
  let lengths = arguments.dropFirst().compactMap { Int($0) }
  for links in lengths.isEmpty ? [1_000] : lengths { runPromiseScenario(links: links) }
  runHopScenario()
  exit(0)
}
if arguments.first == "--profile", let name = arguments.dropFirst().first {
  // An element count after the name makes a quicker profile: the cost per element is the same.
  runProfile(name, count: arguments.dropFirst(2).first.flatMap { Int($0) } ?? 100_000)
  exit(0)
}
if arguments.first == "--promise-split" {
  // Building, running and releasing a promise chain, timed apart.
  runPromiseSplit()
  exit(0)
}
if arguments.first == "--promise-profile" {
  // `--promise-profile [hand] [links]`: one contender alone, for `perf stat` and callgrind;
  // a longer chain shows whether a link's cost grows with the chain's length.
  runPromiseProfile(
    handWritten: arguments.contains("hand"),
    links: arguments.dropFirst().compactMap { Int($0) }.first ?? 1_000)
  exit(0)
}
if arguments.first == "--parallel" {
  runParallelScenario()
  exit(0)
}
if arguments.first == "--folds" {
  // The fan-out rows alone: parallel, limited and unlimited concurrentMap.
  runParallelScenario()
  runConcurrentMapScenario()
  runUnlimitedMapScenario()
  exit(0)
}
if arguments.first == "--stream-profile" {
  // `--stream-profile [array | hand] [sync] [unordered]`: one contender alone, for `perf stat`
  // and valgrind; `sync` runs a synchronous body instead of the hop, to see the stream's own
  // cost; `hand` runs the hand-written stream (always with the hop).
  runConcurrentMapStreamProfile(
    arrayInstead: arguments.contains("array"), handWritten: arguments.contains("hand"),
    synchronous: arguments.contains("sync"), ordered: !arguments.contains("unordered"))
  exit(0)
}
if arguments.first == "--admission" {
  runAdmissionScenario()
  exit(0)
}
if arguments.first == "--allocations" {
  // What a rejection and each modifier allocate per run, counted under valgrind.
  runAllocationScenario(modifiers: true)
  exit(0)
}
if arguments.first == "--sharing" {
  // The shared, memoized and batched rows alone.
  runSharingScenario()
  exit(0)
}
if arguments.first == "--stream" {
  runConcurrentMapStreamScenario()
  exit(0)
}
runSerialScenario()
runParallelScenario()
runConcurrentMapScenario()
runConcurrentMapStreamScenario()
runUnlimitedMapScenario()
runHopScenario()
runPromiseScenario()
runModifierScenario()
runAdmissionScenario()
runSharingScenario()

// Peak memory needs a process per figure: a peak never goes down.
var peaks: [(String, Double)] = []
for kind in ["ours", "dispatch", "taskgroup", "when"] {
  let child = Process()
  child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
  child.arguments = ["--memory", kind]
  let pipe = Pipe()
  child.standardOutput = pipe
  try child.run()
  child.waitUntilExit()
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  if let figure = output.split(separator: " ").last.flatMap({
    Double($0.trimmingCharacters(in: .whitespacesAndNewlines))
  }) {
    peaks.append((kind, figure))
  }
}
let memory = peaks.filter { $0.0 != "when" }.map { "\($0.0) \(format($0.1)) MB" }
  .joined(separator: " | ")
print("parallel, 100000 branches, peak memory        \(memory)")
// Issue 39 sets this one against PromiseKit's `when(fulfilled:)`, which is not built here.
if let promises = peaks.first(where: { $0.0 == "when" }) {
  print("Promise when, 100000 promises, peak memory    when \(format(promises.1)) MB")
}

// The stream's whole-process peak, not a difference: its promise is about the process.
let stream = Process()
stream.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
stream.arguments = ["--memory", "stream"]
let streamPipe = Pipe()
stream.standardOutput = streamPipe
try stream.run()
stream.waitUntilExit()
let streamOutput = String(
  decoding: streamPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
let streamPeak = streamOutput.split(separator: " ").last.map {
  $0.trimmingCharacters(in: .whitespacesAndNewlines)
}
print("concurrentMap(over:), 1000000, process peak   \(streamPeak ?? "?") MB (bound: 64 MB)")
if let peak = streamPeak.flatMap({ Double($0) }) { recordForBars("stream peak", peak) }
runAllocationScenario()
printBars()
