import AsyncCombinators
import Synchronization

/// A million-stage serial chain: our callback and synchronous stages against a hand-written
/// continuation-passing loop and a chain of non-suspending `async` calls over the same number
/// of distinct functions.
func runSerialScenario(stages count: Int = 1_000_000) {
  let result = Box()

  let callbackChain = AsyncFunc.serial(
    (0..<count).map { _ in AsyncFunc<Int, Int> { x, complete in complete(.success(x &+ 1)) } })
  let syncChain = AsyncFunc.serial((0..<count).map { _ in AsyncFunc<Int, Int>.sync { $0 &+ 1 } })
  let handWritten: [@Sendable (Int, (Int) -> Void) -> Void] = (0..<count).map { _ in
    { x, next in next(x &+ 1) }
  }
  let asyncCalls: [@Sendable (Int) async -> Int] = (0..<count).map { _ in { $0 &+ 1 } }

  // The same chains built from one function repeated: the interpreter's own cost, with the
  // stages' code and data hot in cache, against a loop calling one closure.
  let oneCallback = AsyncFunc<Int, Int> { x, complete in complete(.success(x &+ 1)) }
  let hotCallbackChain = AsyncFunc.serial(Array(repeating: oneCallback, count: count))
  let oneStep: @Sendable (Int, (Int) -> Void) -> Void = { x, next in next(x &+ 1) }

  let timings = measure([
    { callbackChain.run(0) { result.value.store(succeeded($0), ordering: .relaxed) } },
    { syncChain.run(0) { result.value.store(succeeded($0), ordering: .relaxed) } },
    { result.value.store(continuationLoop(handWritten), ordering: .relaxed) },
    {
      waitFor { done in
        Task {
          result.value.store(await awaitLoop(asyncCalls), ordering: .relaxed)
          done()
        }
      }
    },
    { hotCallbackChain.run(0) { result.value.store(succeeded($0), ordering: .relaxed) } },
    { result.value.store(repeatedLoop(oneStep, count), ordering: .relaxed) },
  ])
  precondition(result.value.load(ordering: .relaxed) == count)

  let baselines = [("hand-written CPS", 2), ("async/await", 3)]
  report(
    "serial, \(count) callback stages", unit: "ns/stage", timings, ours: 0, per: count,
    baselines: baselines)
  report(
    "serial, \(count) .sync stages", unit: "ns/stage", timings, ours: 1, per: count,
    baselines: baselines)
  report(
    "serial, one callback stage \(count) times", unit: "ns/stage", timings, ours: 4, per: count,
    baselines: [("one closure in a loop", 5)])
}

@inline(never)
func repeatedLoop(_ stage: @Sendable (Int, (Int) -> Void) -> Void, _ count: Int) -> Int {
  var value = 0
  for _ in 0..<count { stage(value) { value = $0 } }
  return value
}

@inline(never)
func continuationLoop(_ stages: [@Sendable (Int, (Int) -> Void) -> Void]) -> Int {
  var value = 0
  for stage in stages { stage(value) { value = $0 } }
  return value
}

@inline(never)
func awaitLoop(_ stages: [@Sendable (Int) async -> Int]) async -> Int {
  var value = 0
  for stage in stages { value = await stage(value) }
  return value
}

/// Keeps a result alive across threads so the optimizer cannot drop the work.
final class Box: Sendable {
  let value = Atomic<Int>(0)
}
