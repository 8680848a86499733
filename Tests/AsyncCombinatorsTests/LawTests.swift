import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

private struct Boom: Error, Equatable {
  let id: Int
}

/// What a pipeline of integer stages ends with: the reference model's answer.
private enum Outcome: Equatable, CustomStringConvertible {
  case value([Int])
  /// Failed with one of these stages' errors (a race may pick among parallel failures).
  case failed(Set<Int>)

  var description: String {
    switch self {
    case .value(let values): "value \(values)"
    case .failed(let ids): "failed with one of \(ids.sorted())"
    }
  }

  /// Whether an actual result is allowed by this expected outcome.
  func admits(_ result: Result<[Int], any Error>) -> Bool {
    switch (self, result) {
    case (.value(let expected), .success(let actual)): expected == actual
    case (.failed(let ids), .failure(let error as Boom)): ids.contains(error.id)
    default: false
    }
  }
}

/// How a random stage delivers its result: SwiftCheck's `ArrowOf`, for callbacks.
private enum Delivery: CaseIterable {
  case sync, inlineCallback, queuedCallback, task
}

/// Shared state of one law: the queue stages complete on, and what ran.
private final class Lab: Sendable {
  let queue = testQueue("laws")
  /// Which stages started, in order; kept only by laws that run one pipeline at a time.
  let started: Recorder<Int>?
  /// Queued completions not yet returned from: zero means nothing more will happen.
  let inFlight = Atomic<Int>(0)

  /// Waits until every queued completion has returned (none is in flight).
  init(recordsStarts: Bool = false) {
    started = recordsStarts ? Recorder() : nil
  }

  func settle() async {
    while inFlight.load(ordering: .acquiring) > 0 {
      await withCheckedContinuation { done in queue.async(flags: .barrier) { done.resume() } }
    }
  }
}

/// One random stage: `x * factor + offset`, or a failure, delivered some random way.
private struct StageSpec: CustomStringConvertible {
  let id: Int
  let factor: Int
  let offset: Int
  let fails: Bool
  let delivery: Delivery

  var description: String {
    "s\(id):\(delivery)" + (fails ? "!fail" : "(x*\(factor)+\(offset))")
  }

  func apply(_ x: Int) -> Int { x &* factor &+ offset }

  func function(in lab: Lab) -> AsyncFunc<Int, Int> {
    let spec = self
    let result: @Sendable (Int) -> Result<Int, any Error> = { x in
      lab.started?.record(spec.id)
      return spec.fails ? .failure(Boom(id: spec.id)) : .success(spec.apply(x))
    }
    switch delivery {
    case .sync:
      return .sync { try result($0).get() }
    case .inlineCallback:
      return AsyncFunc { x, complete in complete(result(x)) }
    case .queuedCallback:
      return AsyncFunc { x, complete in
        lab.inFlight.add(1, ordering: .relaxed)
        lab.queue.async {
          complete(result(x))
          lab.inFlight.subtract(1, ordering: .releasing)
        }
      }
    case .task:
      return .async { try result($0).get() }
    }
  }
}

/// A random serial chain of one to four stages, and its model.
private struct Chain: CustomStringConvertible {
  let stages: [StageSpec]

  var description: String { "[" + stages.map(\.description).joined(separator: " +> ") + "]" }

  func function(in lab: Lab) -> AsyncFunc<Int, Int> {
    AsyncFunc.serial(stages.map { $0.function(in: lab) })
  }

  func expected(_ x: Int) -> Outcome {
    var value = x
    for stage in stages {
      if stage.fails { return .failed([stage.id]) }
      value = stage.apply(value)
    }
    return .value([value])
  }
}

private struct Generator {
  var random: SplitMix64
  var nextID = 0
  var deliveries: [Delivery] = Delivery.allCases

  mutating func stage() -> StageSpec {
    defer { nextID += 1 }
    return StageSpec(
      id: nextID, factor: Int.random(in: -3...3, using: &random),
      offset: Int.random(in: -9...9, using: &random),
      fails: Int.random(in: 0..<8, using: &random) == 0,
      delivery: deliveries.randomElement(using: &random)!)
  }

  mutating func chain() -> Chain {
    Chain(stages: (0..<Int.random(in: 1...4, using: &random)).map { _ in stage() })
  }
}

private func both(_ first: Outcome, _ second: Outcome) -> Outcome {
  switch (first, second) {
  case (.value(let a), .value(let b)): .value(a + b)
  case (.failed(let a), .failed(let b)): .failed(a.union(b))
  case (.failed(let a), _), (_, .failed(let a)): .failed(a)
  }
}

private func run(_ function: AsyncFunc<Int, [Int]>, _ input: Int) async -> Result<[Int], any Error>
{
  await runToCompletion(function, input)
}

@Suite(.timeLimit(.minutes(1))) struct LawTests {
  @Test func serial_is_associative_and_identity_is_its_unit() async throws {
    let lab = Lab()
    try await forAll("+> associativity and identity", count: 200) { random, _ in
      var generate = Generator(random: random)
      defer { random = generate.random }
      let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
      let input = Int.random(in: -100...100, using: &generate.random)
      let model = Chain(stages: f.stages + g.stages + h.stages).expected(input)
      let (ff, gg, hh) = (f.function(in: lab), g.function(in: lab), h.function(in: lab))
      let id = AsyncFunc<Int, Int>.identity
      let forms: [(String, AsyncFunc<Int, Int>)] = [
        ("(f +> g) +> h", (ff +> gg) +> hh),
        ("f +> (g +> h)", ff +> (gg +> hh)),
        ("identity +> f +> g +> h", id +> ff +> gg +> hh),
        ("f +> g +> h +> identity", ff +> gg +> hh +> id),
      ]
      for (form, function) in forms {
        let result = await run(function.map { [$0] }, input)
        if !model.admits(result) {
          print("counterexample: \(form) with f=\(f) g=\(g) h=\(h) on \(input)")
          print("  expected \(model), got \(result)")
          return false
        }
      }
      return true
    }
  }

  @Test func parallel_commutes_up_to_swapping_and_associates_up_to_nesting() async throws {
    let lab = Lab()
    try await forAll("<> commutativity and associativity", count: 200) { random, _ in
      var generate = Generator(random: random)
      defer { random = generate.random }
      let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
      let input = Int.random(in: -100...100, using: &generate.random)
      let (ff, gg, hh) = (f.function(in: lab), g.function(in: lab), h.function(in: lab))
      let (ef, eg, eh) = (f.expected(input), g.expected(input), h.expected(input))
      let checks: [(String, AsyncFunc<Int, [Int]>, Outcome)] = [
        ("f <> g", (ff <> gg).map { [$0, $1] }, both(ef, eg)),
        ("swap(g <> f)", (gg <> ff).map { [$1, $0] }, both(ef, eg)),
        ("(f <> g) <> h", ((ff <> gg) <> hh).map { [$0.0, $0.1, $1] }, both(both(ef, eg), eh)),
        ("f <> (g <> h)", (ff <> (gg <> hh)).map { [$0, $1.0, $1.1] }, both(both(ef, eg), eh)),
      ]
      for (form, function, model) in checks {
        let result = await run(function, input)
        if !model.admits(result) {
          print("counterexample: \(form) with f=\(f) g=\(g) h=\(h) on \(input)")
          print("  expected \(model), got \(result)")
          return false
        }
      }
      return true
    }
  }

  @Test func no_stage_after_a_failure_runs() async throws {
    try await forAll("short-circuit", count: 300) { random, _ in
      let lab = Lab(recordsStarts: true)
      var generate = Generator(random: random)
      defer { random = generate.random }
      let chain = Chain(stages: (0..<6).map { _ in generate.stage() })
      let result = await run(chain.function(in: lab).map { [$0] }, 1)
      await lab.settle()
      let firstFailure = chain.stages.firstIndex(where: \.fails)
      let ran = lab.started?.all ?? []
      let expectedRan = chain.stages.prefix(firstFailure.map { $0 + 1 } ?? 6).map(\.id)
      guard ran == expectedRan, chain.expected(1).admits(result) else {
        print("counterexample: \(chain): ran \(ran), expected \(expectedRan); got \(result)")
        return false
      }
      return true
    }
  }

  @Test func every_run_completes_exactly_once_whatever_thread_completes_it() async throws {
    let lab = Lab()
    try await forAll("exactly-once completion", count: 40) { random, _ in
      var generate = Generator(random: random)
      generate.deliveries = [.sync, .inlineCallback, .queuedCallback]
      defer { random = generate.random }
      let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
      let pipeline =
        (f.function(in: lab) <> g.function(in: lab)).map { $0 &+ $1 } +> h.function(in: lab)
      let runs = 100
      let counts = (0..<runs).map { _ in Tally() }
      let finished = Countdown(runs)
      for index in 0..<runs {
        pipeline.run(index) { _ in
          counts[index].add()
          finished.tick()
        }
      }
      await finished.wait()
      await lab.settle()
      let tally = counts.map(\.value)
      guard tally.allSatisfy({ $0 == 1 }) else {
        print("counterexample: (f <> g) +> h with f=\(f) g=\(g) h=\(h): completions \(tally)")
        return false
      }
      return true
    }
  }
}
