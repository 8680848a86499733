import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The bars, on a simulated service of capacity C = 20 (see `AdaptiveSimulation`):
/// each algorithm through the real `Limiter(adaptive:)`, on a `TestClock`.
@Suite struct AdaptiveLimitSimulationTests {
  static let capacity = 20

  /// The best throughput a fixed limit gets against the same service and clients over the same
  /// stretch: the bar each algorithm is held to.
  static func bestFixedThroughput(clients: Int) -> Double {
    var best = 0.0
    for fixed in [5, 10, 15, 20, 25, 30, 40, 60, 100] {
      let simulation = AdaptiveSimulation(nil, fixed: fixed, clients: clients)
      _ = simulation.run(for: .seconds(2))
      best = max(best, simulation.run(for: .seconds(8)).throughput)
      simulation.stop()
    }
    return best
  }

  /// Warm-up, steady state, then the capacity halves.
  static func checkHoldsAndFollows(_ adaptive: AdaptiveLimit) {
    let c = Double(capacity)
    let simulation = AdaptiveSimulation(adaptive, clients: 100, capacity: capacity)
    defer { simulation.stop() }
    _ = simulation.run(for: .seconds(2))
    let steady = simulation.run(for: .seconds(8))
    let best = bestFixedThroughput(clients: 100)
    print(
      "\(adaptive): mean limit \(steady.meanLimit), range \(steady.limits.min()!)...\(steady.limits.max()!),"
        + " below 0.6 C \(steady.shareBelow(0.6 * c)), throughput \(steady.throughput)"
        + " = \(steady.throughput / best) of the best fixed \(best)")
    #expect(steady.limits.max()! <= Int(1.5 * c))
    #expect(steady.shareBelow(0.6 * c) <= 0.05)
    // Steady: deciding once per round trip, not per sample, it does not swing.
    #expect(steady.limits.max()! - steady.limits.min()! <= 6)
    #expect(steady.throughput >= 0.8 * best)
    simulation.capacity = capacity / 2
    let halved = simulation.run(for: .seconds(2))
    print("\(adaptive): capacity halved, limit after 2 s \(halved.limits.last!)")
    #expect(halved.limits.last! < 16)
  }

  /// 40 clients, twice the capacity, for a minute: the limit does not creep up.
  static func checkNoUpwardDrift(_ adaptive: AdaptiveLimit) {
    let simulation = AdaptiveSimulation(adaptive, clients: 2 * capacity, capacity: capacity)
    defer { simulation.stop() }
    _ = simulation.run(for: .seconds(59))
    let last = simulation.run(for: .seconds(1))
    print(
      "\(adaptive): 40 clients, limit over the 60th second \(last.limits.min()!)...\(last.limits.max()!)"
    )
    #expect(last.limits.max()! <= 3 * capacity / 2)
  }

  @Test func vegas_holds_the_limit_near_capacity_and_follows_it_down() {
    Self.checkHoldsAndFollows(.vegas())
  }

  @Test func gradient_holds_the_limit_near_capacity_and_follows_it_down() {
    Self.checkHoldsAndFollows(.gradient())
  }

  @Test func vegas_does_not_drift_up_under_mild_overload() {
    Self.checkNoUpwardDrift(.vegas())
  }

  @Test func gradient_does_not_drift_up_under_mild_overload() {
    Self.checkNoUpwardDrift(.gradient())
  }

  /// concurrency-limits #165 and #125: a deploy that doubles the latency without load must not
  /// hold the limit down, nor one that halves it hold the limit up, for longer than the next
  /// probe.
  @Test(arguments: [
    (AdaptiveLimit.vegas(), 2.0), (AdaptiveLimit.vegas(), 0.5), (AdaptiveLimit.gradient(), 2.0),
    (AdaptiveLimit.gradient(), 0.5),
  ])
  func a_deploy_that_changes_latency_moves_the_limit_only_until_the_next_probe(
    _ adaptive: AdaptiveLimit, _ factor: Double
  ) {
    let c = Double(Self.capacity)
    let simulation = AdaptiveSimulation(adaptive, clients: 100, capacity: Self.capacity)
    defer { simulation.stop() }
    _ = simulation.run(for: .seconds(5))
    simulation.latency = .milliseconds(10) * factor
    _ = simulation.run(for: .seconds(AdaptiveLimitState.probeInterval))
    let after = simulation.run(for: .seconds(1))
    print(
      "\(adaptive), latency × \(factor): limit a probe later \(after.limits.min()!)...\(after.limits.max()!)"
    )
    #expect(after.limits.min()! >= Int(0.6 * c))
    #expect(after.limits.max()! <= Int(1.5 * c))
  }

  /// The service drops nothing at 100 clients, so AIMD only grows: it must stay within its
  /// bounds and lose no throughput.
  @Test func aimd_stays_in_bounds_and_keeps_the_throughput() {
    let simulation = AdaptiveSimulation(.aimd(max: 150), clients: 100, capacity: Self.capacity)
    defer { simulation.stop() }
    _ = simulation.run(for: .seconds(2))
    let steady = simulation.run(for: .seconds(8))
    let best = Self.bestFixedThroughput(clients: 100)
    print(
      "aimd: mean limit \(steady.meanLimit), throughput \(steady.throughput)"
        + " = \(steady.throughput / best) of the best fixed \(best)")
    #expect(steady.limits.allSatisfy { (1...150).contains($0) })
    #expect(steady.throughput >= 0.8 * best)
  }
}
