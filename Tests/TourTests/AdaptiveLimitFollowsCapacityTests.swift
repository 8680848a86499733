import AsyncCombinators
import Testing
import TourScenarios

@Suite struct AdaptiveLimitFollowsCapacityTests {
  @Test func vegas_settles_near_the_capacity_then_follows_it_down_when_it_halves() {
    let run = CapacityHalving.simulate()
    let before = Double(CapacityHalving.capacity.before)
    let after = Double(CapacityHalving.capacity.after)
    let settled = run.meanLimit(from: .seconds(1), to: CapacityHalving.halvesAt)
    #expect(settled >= 0.6 * before && settled <= 1.5 * before, "mean limit \(settled)")
    #expect(run.highestLimit(from: .seconds(1), to: CapacityHalving.halvesAt) <= Int(1.5 * before))
    // Within 2 s of the halving, and from then on, the limit is under 1.6 times the new
    // capacity: a limiter that stopped adapting would stay near the old one.
    let late = run.highestLimit(
      from: CapacityHalving.halvesAt + .seconds(2), to: CapacityHalving.duration)
    #expect(Double(late) < 1.6 * after, "highest limit from 2 s after the halving: \(late)")
    #expect(run.verdict == CapacityHalving.followed)
    // The moves were seen as limitChanged events: a probe first, then latency, not drops,
    // moved the limit, as the story tells.
    #expect(run.moves.first?.change.reason == .probe)
    let reasons = Set(run.moves.map(\.change.reason))
    #expect(reasons.isSuperset(of: [.headroom, .queueing]), "\(reasons)")
    #expect(!reasons.contains(.drop))
    #expect(run.drops.allSatisfy { $0 == 0 }, "\(run.drops)")
    // Throughput halves with the capacity: each 0.5 s serves about capacity / 10 ms calls.
    #expect(run.successes.first! > 0)
    #expect(run.successes[4] >= 900 && run.successes[4] <= 1050, "\(run.successes)")
    #expect(run.successes.last! >= 450 && run.successes.last! <= 525, "\(run.successes)")
  }

  @Test func the_tour_prints_the_same_chart_every_time() async {
    let first = await Tour.adaptiveLimitFollowsCapacity.play()
    let second = await Tour.adaptiveLimitFollowsCapacity.play()
    #expect(first[0].log == second[0].log)
    #expect(first[0].log.last == CapacityHalving.followed)
    #expect(first[0].unmetExpectations == [])
  }
}
