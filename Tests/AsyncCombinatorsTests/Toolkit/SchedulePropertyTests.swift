import AsyncCombinators
import AsyncCombinatorsTesting
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The rules of a schedule written the plainest way: a tree of objects, each asked in turn by
/// its parent, leaves computing their *k*-th wait with a loop from the start. The library's
/// schedule must give the same waits.
private final class Reference {
  enum Kind {
    case exponential(Duration, Double)
    case fibonacci(Duration)
    case spaced(Duration)
    case recurs(Int)
    case capped(Reference, Duration)
    case upTo(Reference, Duration)
    case jittered(Reference, Jitter)
    case union(Reference, Reference)
    case intersection(Reference, Reference)
    case andThen(Reference, Reference)
  }

  let kind: Kind
  private var ended = false
  /// The waits asked of a leaf so far.
  private var asked = 0
  private var previous: Duration?
  private var handedOver: Duration?
  private var generator: JitterGenerator

  init(_ kind: Kind) {
    self.kind = kind
    if case .jittered(_, let jitter) = kind {
      generator = JitterGenerator(seed: jitter.seed)
    } else {
      generator = JitterGenerator(seed: 0)
    }
  }

  func next(elapsed: Duration, floor: Duration, origin: Duration = .zero) -> Duration? {
    guard !ended else { return nil }
    let wait = answer(elapsed: elapsed, floor: floor, origin: origin)
    if wait == nil { ended = true }
    return wait
  }

  private func answer(elapsed: Duration, floor: Duration, origin: Duration) -> Duration? {
    func ask(_ child: Reference, from start: Duration = origin) -> Duration? {
      child.next(elapsed: elapsed, floor: floor, origin: start)
    }
    defer { asked += 1 }
    switch kind {
    case .exponential(let base, let factor):
      var power = 1.0
      for _ in 0..<asked { power *= factor }
      return max(scaled(base, by: power), floor)
    case .fibonacci(let one):
      var (wait, following) = (one, one)
      for _ in 0..<asked { (wait, following) = (following, saturatingSum(wait, following)) }
      return max(wait, floor)
    case .spaced(let interval):
      return max(interval, floor)
    case .recurs(let times):
      return asked < times ? floor : nil
    case .capped(let inner, let maximum):
      return ask(inner).map { max(min($0, maximum), floor) }
    case .upTo(let inner, let limit):
      return ask(inner).flatMap { saturatingSum(elapsed - origin, $0) <= limit ? $0 : nil }
    case .jittered(let inner, let jitter):
      guard let wait = ask(inner) else { return nil }
      let unit = { Double.random(in: 0...1, using: &self.generator) }
      let spread: Duration
      switch jitter.kind {
      case .none: spread = wait
      case .full: spread = scaled(wait, by: unit())
      case .equal:
        let half = scaled(wait, by: 0.5)
        spread = half + scaled(wait - half, by: unit())
      case .decorrelated:
        let upper = max(wait, scaled(previous ?? wait, by: 3))
        spread = wait + scaled(upper - wait, by: unit())
        previous = spread
      }
      return max(spread, floor)
    case .union(let left, let right):
      let (first, second) = (ask(left), ask(right))
      guard let first else { return second }
      guard let second else { return first }
      return min(first, second)
    case .intersection(let left, let right):
      let (first, second) = (ask(left), ask(right))
      guard let first, let second else { return nil }
      return max(first, second)
    case .andThen(let left, let right):
      if handedOver == nil {
        if let wait = ask(left) { return wait }
        handedOver = elapsed
      }
      return ask(right, from: handedOver!)
    }
  }
}

/// A random schedule and its reference, built by the same calls.
private struct Pair {
  var schedule: Schedule
  var reference: Reference

  static func leaf(_ random: inout SplitMix64) -> Pair {
    let duration = Duration.milliseconds(Int.random(in: 0...500, using: &random))
    switch Int.random(in: 0..<4, using: &random) {
    case 0:
      let factor = [1, 1.5, 2, 3][Int.random(in: 0..<4, using: &random)]
      return Pair(
        schedule: .exponential(duration, factor: factor),
        reference: Reference(.exponential(duration, factor)))
    case 1:
      return Pair(schedule: .fibonacci(duration), reference: Reference(.fibonacci(duration)))
    case 2:
      return Pair(schedule: .spaced(duration), reference: Reference(.spaced(duration)))
    default:
      let times = Int.random(in: 0...60, using: &random)
      return Pair(schedule: .recurs(times), reference: Reference(.recurs(times)))
    }
  }

  /// `depth` operators around a leaf, each applied to what the ones before built.
  static func nested(_ depth: Int, _ random: inout SplitMix64) -> Pair {
    var pair = leaf(&random)
    for _ in 0..<depth {
      pair = pair.wrapped(&random)
    }
    return pair
  }

  func wrapped(_ random: inout SplitMix64) -> Pair {
    switch Int.random(in: 0..<6, using: &random) {
    case 0:
      let maximum = Duration.milliseconds(Int.random(in: 0...2000, using: &random))
      return Pair(
        schedule: schedule.capped(at: maximum), reference: Reference(.capped(reference, maximum)))
    case 1:
      let limit = Duration.seconds(Int.random(in: 0...120, using: &random))
      return Pair(schedule: schedule.upTo(limit), reference: Reference(.upTo(reference, limit)))
    case 2:
      let kinds = [Jitter.none, .full, .equal, .decorrelated]
      let jitter = kinds[Int.random(in: 0..<4, using: &random)].seeded(random.next())
      return Pair(
        schedule: schedule.jittered(jitter), reference: Reference(.jittered(reference, jitter)))
    default:
      let other = Pair.nested(Int.random(in: 0...2, using: &random), &random)
      let (left, right) = Bool.random(using: &random) ? (self, other) : (other, self)
      switch Int.random(in: 0..<3, using: &random) {
      case 0:
        return Pair(
          schedule: left.schedule.union(right.schedule),
          reference: Reference(.union(left.reference, right.reference)))
      case 1:
        return Pair(
          schedule: left.schedule.intersection(right.schedule),
          reference: Reference(.intersection(left.reference, right.reference)))
      default:
        return Pair(
          schedule: left.schedule.andThen(right.schedule),
          reference: Reference(.andThen(left.reference, right.reference)))
      }
    }
  }
}

/// Runs `body` on a thread of its own with a large stack, for the recursive reference.
private func onLargeStack(_ body: @escaping @Sendable () -> Bool) async -> Bool {
  await withCheckedContinuation { continuation in
    let thread = Thread { continuation.resume(returning: body()) }
    thread.stackSize = 1 << 26
    thread.start()
  }
}

@Suite struct SchedulePropertyTests {
  @Test func any_combination_nested_up_to_a_thousand_deep_waits_as_the_reference_does()
    async throws
  {
    try await forAll("schedules wait as the reference loop", count: 60) { random, index in
      let seed = random.next()
      let depth = index % 3 == 0 ? 1000 : Int.random(in: 0...30, using: &random)
      return await onLargeStack {
        var random = SplitMix64(seed: seed)
        let pair = Pair.nested(depth, &random)
        var run = ScheduleRun(pair.schedule, draws: ScheduleDraws(pair.schedule))
        var elapsed = Duration.zero
        for step in 0..<40 {
          // A try's time, and now and then a server's hint.
          elapsed = saturatingSum(elapsed, .milliseconds(Int.random(in: 0...300, using: &random)))
          let floor =
            Int.random(in: 0..<5, using: &random) == 0
            ? Duration.milliseconds(Int.random(in: 0...3000, using: &random)) : .zero
          let expected = pair.reference.next(elapsed: elapsed, floor: floor)
          let actual = run.next(elapsed: elapsed, floor: floor)
          guard actual == expected else {
            print(
              "depth \(depth), wait \(step): \(String(describing: actual)), reference",
              "\(String(describing: expected)); \(pair.schedule.description.prefix(400))")
            return false
          }
          guard let wait = actual else { break }
          elapsed = saturatingSum(elapsed, wait)
        }
        return true
      }
    }
  }

  @Test func a_schedule_nested_a_thousand_deep_steps_thousands_of_waits_on_a_small_stack() {
    var schedule = Schedule.exponential(.seconds(1))
    for index in 0..<1000 {
      schedule =
        index.isMultiple(of: 2)
        ? schedule.capped(at: .seconds(5)) : schedule.union(.spaced(.seconds(9)))
    }
    let all = waits(of: schedule, count: 2000)
    #expect(all.count == 2000)
    #expect(all.last == .seconds(5))
  }
}
