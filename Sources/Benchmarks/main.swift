import AsyncCombinators
import Dispatch
import Foundation
import Synchronization

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
final class Sink: Sendable { let v = Atomic<Int>(0) }

nonisolated func bench(_ n: Int, _ which: String) {
  let stages = (0..<n).map { _ in AsyncFunc<Int, Int> { x, c in c(.success(x &+ 1)) } }
  let chain = AsyncFunc.serial(stages)
  let syncChain = AsyncFunc.serial((0..<n).map { _ in AsyncFunc<Int, Int>.sync { $0 &+ 1 } })
  let cps: [@Sendable (Int, (Int) -> Void) -> Void] = (0..<n).map { _ in { x, k in k(x &+ 1) } }
  let sink = Sink()
  for _ in 0..<(n < 1_000_000 ? 1 : 5) {
    var t = now()
    if which.contains("c") { chain.run(0) { r in sink.v.store(try! r.get(), ordering: .relaxed) } }
    let a = Double(now() - t) / Double(n)
    t = now()
    if which.contains("s") {
      syncChain.run(0) { r in sink.v.store(try! r.get(), ordering: .relaxed) }
    }
    let b = Double(now() - t) / Double(n)
    t = now()
    var v = 0
    for s in cps { s(v) { v = $0 } }
    let c = Double(now() - t) / Double(n)
    print(String(format: "callback %.1f  sync %.1f  cps %.1f  (%d)", a, b, c, v))
  }
}
bench(
  Int(ProcessInfo.processInfo.environment["N"] ?? "1000000")!,
  CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "cs")
runConcurrentMapScenario()
