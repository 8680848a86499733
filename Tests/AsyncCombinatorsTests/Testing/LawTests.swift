import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private func run(_ function: AsyncFunc<Int, [Int]>, _ input: Int) async -> Result<[Int], any Error>
{
  await runToCompletion(function, input)
}

@Suite(.timeLimit(.minutes(1))) struct LawTests {
  @Test func serial_is_associative_and_identity_is_its_unit() async throws {
    let lab = PipelineLab()
    try await forAll("+> associativity and identity", count: 200) { random, _ in
      var generate = PipelineGenerator(random: random)
      defer { random = generate.random }
      let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
      let input = Int.random(in: -100...100, using: &generate.random)
      let model = RandomChain(stages: f.stages + g.stages + h.stages).expected(input)
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
    let lab = PipelineLab()
    try await forAll("<> commutativity and associativity", count: 200) { random, _ in
      var generate = PipelineGenerator(random: random)
      defer { random = generate.random }
      let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
      let input = Int.random(in: -100...100, using: &generate.random)
      let (ff, gg, hh) = (f.function(in: lab), g.function(in: lab), h.function(in: lab))
      let (ef, eg, eh) = (f.expected(input), g.expected(input), h.expected(input))
      let checks: [(String, AsyncFunc<Int, [Int]>, PipelineOutcome)] = [
        ("f <> g", (ff <> gg).map { [$0, $1] }, .both(ef, eg)),
        ("swap(g <> f)", (gg <> ff).map { [$1, $0] }, .both(ef, eg)),
        ("(f <> g) <> h", ((ff <> gg) <> hh).map { [$0.0, $0.1, $1] }, .both(.both(ef, eg), eh)),
        ("f <> (g <> h)", (ff <> (gg <> hh)).map { [$0, $1.0, $1.1] }, .both(.both(ef, eg), eh)),
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
      let lab = PipelineLab(recordsStarts: true)
      var generate = PipelineGenerator(random: random)
      defer { random = generate.random }
      let chain = RandomChain(stages: (0..<6).map { _ in generate.stage() })
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
    let lab = PipelineLab()
    try await forAll("exactly-once completion", count: 40) { random, _ in
      var generate = PipelineGenerator(random: random)
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
