import AsyncCombinatorsKernel

/// When to try again: a sequence of waits that may end. Values; combining them builds new ones.
///
/// A schedule is asked for its next wait each time a run would go on: after a failed attempt
/// (``AsyncFunc/retry(_:budget:if:clock:)``) or after a success that is not yet the one wanted
/// (``AsyncFunc/repeating(_:until:clock:)``). It answers with a wait, or ends. Four schedules
/// start the algebra and six operators combine them:
///
/// | schedule | waits |
/// |---|---|
/// | `.exponential(b, factor: f)` | b, b·f, b·f², … |
/// | `.fibonacci(d)` | d, d, 2d, 3d, 5d, … |
/// | `.spaced(d)` | d, d, d, … |
/// | `.recurs(n)` | n waits of zero, then ends |
/// | `s.capped(at: m)` | each of `s`'s waits, at most `m` |
/// | `s.upTo(t)` | `s`'s waits while they end within `t` of the first try's start |
/// | `s.jittered(j)` | each of `s`'s waits spread at random by `j` |
/// | `s.union(u)` | the shorter of the two waits, while either goes on |
/// | `s.intersection(u)` | the longer of the two waits, while both go on |
/// | `s.andThen(u)` | `s`'s waits, then `u`'s |
///
/// Every run of a function starts the schedule afresh. Waits saturate at about 146 billion
/// years (a wait that long never ends: cancel the run to stop it), so no schedule overflows.
/// Asking for a wait costs one step of each operator the schedule is made of, in a loop: a
/// schedule nested a thousand deep uses no deeper stack than a flat one.
///
/// ```swift
/// let backoff = Schedule.exponential(.milliseconds(100)).capped(at: .seconds(2))
///   .upTo(.seconds(30))
/// print(backoff)
/// // prints Schedule.exponential(0.1 seconds).capped(at: 2.0 seconds).upTo(30.0 seconds)
/// ```
public struct Schedule: Sendable, CustomStringConvertible {
  /// One operator of a schedule. Operands are indices of earlier elements of `steps`.
  enum Step: Sendable {
    case exponential(Duration, factor: Double)
    case fibonacci(Duration)
    case spaced(Duration)
    case recurs(Int)
    case capped(Int, at: Duration)
    case upTo(Int, Duration)
    case jittered(Int, Jitter)
    case union(Int, Int)
    case intersection(Int, Int)
    case andThen(Int, Int)

    /// The same step with its operands moved by `offset`, as when appended after `offset`
    /// other steps.
    func shifted(by offset: Int) -> Step {
      switch self {
      case .exponential, .fibonacci, .spaced, .recurs: self
      case .capped(let inner, let maximum): .capped(inner + offset, at: maximum)
      case .upTo(let inner, let limit): .upTo(inner + offset, limit)
      case .jittered(let inner, let jitter): .jittered(inner + offset, jitter)
      case .union(let left, let right): .union(left + offset, right + offset)
      case .intersection(let left, let right): .intersection(left + offset, right + offset)
      case .andThen(let left, let right): .andThen(left + offset, right + offset)
      }
    }
  }

  /// The operators, each after its operands: the last is the whole schedule. A flat array,
  /// so that stepping a deep schedule is a loop and combining two is a concatenation.
  let steps: [Step]

  /// The schedule as it is written in code: `Schedule.spaced(1.0 seconds).upTo(60.0 seconds)`.
  public let description: String

  private init(steps: [Step], description: String) {
    self.steps = steps
    self.description = description
  }

  private init(_ step: Step, _ call: String) {
    self.init(steps: [step], description: "Schedule." + call)
  }

  /// Whether some step reads the time since the first try: only `upTo` does.
  var readsElapsed: Bool {
    steps.contains { if case .upTo = $0 { true } else { false } }
  }

  // MARK: - Schedules

  /// Waits `base`, then `base × factor`, `base × factor²`, …: the first wait is `base` itself.
  ///
  /// ```swift
  /// print(Schedule.exponential(.milliseconds(100), factor: 3))
  /// // prints Schedule.exponential(0.1 seconds, factor: 3.0)
  /// ```
  ///
  /// - Precondition: `base` is not negative; `factor` is finite and at least 1 (not NaN).
  /// - Parameters:
  ///   - base: The first wait.
  ///   - factor: What each wait is multiplied by for the next; 2 unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A schedule that never ends by itself.
  public static func exponential(
    _ base: Duration, factor: Double = 2, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      base >= .zero, "Schedule.exponential(\(base)): the base wait must not be negative",
      file: file, line: line)
    require(
      factor >= 1 && factor.isFinite,
      "Schedule.exponential(factor: \(factor)): the factor must be finite and at least 1",
      file: file, line: line)
    let call = factor == 2 ? "exponential(\(base))" : "exponential(\(base), factor: \(factor))"
    return Schedule(.exponential(base, factor: factor), call)
  }

  /// Waits `one`, `one`, `2 × one`, `3 × one`, `5 × one`, …: each wait the sum of the two
  /// before.
  ///
  /// - Precondition: `one` is not negative.
  /// - Parameters:
  ///   - one: The first two waits.
  ///   - file: The caller's file, named when the argument is out of range.
  ///   - line: The caller's line, named when the argument is out of range.
  /// - Returns: A schedule that never ends by itself.
  public static func fibonacci(
    _ one: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      one >= .zero, "Schedule.fibonacci(\(one)): the first wait must not be negative", file: file,
      line: line)
    return Schedule(.fibonacci(one), "fibonacci(\(one))")
  }

  /// Waits `interval` every time.
  ///
  /// - Precondition: `interval` is not negative.
  /// - Parameters:
  ///   - interval: Every wait.
  ///   - file: The caller's file, named when the argument is out of range.
  ///   - line: The caller's line, named when the argument is out of range.
  /// - Returns: A schedule that never ends by itself.
  public static func spaced(
    _ interval: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      interval >= .zero, "Schedule.spaced(\(interval)): the interval must not be negative",
      file: file, line: line)
    return Schedule(.spaced(interval), "spaced(\(interval))")
  }

  /// Waits zero `times` times, then ends: with another schedule in an ``intersection(_:)``,
  /// a count of tries.
  ///
  /// - Precondition: `times` is not negative.
  /// - Parameters:
  ///   - times: How many waits; `recurs(0)` ends at once.
  ///   - file: The caller's file, named when the argument is out of range.
  ///   - line: The caller's line, named when the argument is out of range.
  /// - Returns: A schedule of `times` waits.
  public static func recurs(
    _ times: Int, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      times >= 0, "Schedule.recurs(\(times)): the count must not be negative", file: file,
      line: line)
    return Schedule(.recurs(times), "recurs(\(times))")
  }

  // MARK: - Operators

  private func appending(_ step: Step, _ call: String) -> Schedule {
    Schedule(steps: steps + [step], description: "\(description).\(call)")
  }

  private func combined(
    with other: Schedule, _ step: (Int, Int) -> Step, _ name: String
  ) -> Schedule {
    let offset = steps.count
    var all = steps
    all.reserveCapacity(offset + other.steps.count + 1)
    all.append(contentsOf: other.steps.lazy.map { $0.shifted(by: offset) })
    all.append(step(offset - 1, all.count - 1))
    return Schedule(steps: all, description: "\(description).\(name)(\(other.description))")
  }

  /// This schedule with every wait at most `maximum`.
  ///
  /// A ``RetryAfterHint`` still raises a retry's wait above `maximum`: the cap bounds the
  /// schedule's own waits, not a server's request.
  ///
  /// - Precondition: `maximum` is not negative.
  /// - Parameters:
  ///   - maximum: The longest wait.
  ///   - file: The caller's file, named when the argument is out of range.
  ///   - line: The caller's line, named when the argument is out of range.
  /// - Returns: A schedule that ends when this one does.
  public func capped(
    at maximum: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      maximum >= .zero, "Schedule.capped(at: \(maximum)): the maximum must not be negative",
      file: file, line: line)
    return appending(.capped(steps.count - 1, at: maximum), "capped(at: \(maximum))")
  }

  /// This schedule, ending instead of beginning a wait that would end later than `elapsed`
  /// after the first try started.
  ///
  /// The time is measured on the clock of the `retry` or `repeating` that runs the schedule,
  /// and includes the tries themselves. After ``andThen(_:)``, the second schedule's time
  /// starts when it takes over.
  ///
  /// - Precondition: `elapsed` is not negative.
  /// - Parameters:
  ///   - elapsed: The time within which every wait must end.
  ///   - file: The caller's file, named when the argument is out of range.
  ///   - line: The caller's line, named when the argument is out of range.
  /// - Returns: A schedule that ends when this one does, or when time is up.
  public func upTo(
    _ elapsed: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> Schedule {
    require(
      elapsed >= .zero, "Schedule.upTo(\(elapsed)): the time allowed must not be negative",
      file: file, line: line)
    return appending(.upTo(steps.count - 1, elapsed), "upTo(\(elapsed))")
  }

  /// This schedule with each wait spread at random by `jitter`, drawn afresh for every wait
  /// of every run, as the counted
  /// ``AsyncFunc/retry(_:delay:backoff:maxDelay:jitter:budget:if:clock:file:line:)`` draws
  /// them.
  ///
  /// For a wait *w*: `.full` draws in `[0, w]`, `.equal` in `[w/2, w]`, `.decorrelated` in
  /// `[w, 3 × the previous drawn wait]` (the first in `[w, 3w]`). A seeded jitter draws the
  /// same waits in every test run: one generator for each function that runs the schedule.
  ///
  /// - Parameter jitter: How to spread each wait.
  /// - Returns: A schedule that ends when this one does.
  public func jittered(_ jitter: Jitter) -> Schedule {
    appending(.jittered(steps.count - 1, jitter), "jittered(\(jitter))")
  }

  /// Goes on while either schedule does, waiting the shorter of their waits; once one has
  /// ended, the other's waits.
  ///
  /// - Parameter other: The other schedule; both are asked for every wait.
  /// - Returns: A schedule that ends when both have.
  public func union(_ other: Schedule) -> Schedule {
    combined(with: other, Step.union, "union")
  }

  /// Goes on while both schedules do, waiting the longer of their waits.
  ///
  /// - Parameter other: The other schedule; both are asked for every wait.
  /// - Returns: A schedule that ends when either does.
  public func intersection(_ other: Schedule) -> Schedule {
    combined(with: other, Step.intersection, "intersection")
  }

  /// This schedule's waits, then, once it has ended, `other`'s.
  ///
  /// - Parameter other: The schedule that takes over; it starts when this one ends.
  /// - Returns: A schedule that ends when `other` does.
  public func andThen(_ other: Schedule) -> Schedule {
    combined(with: other, Step.andThen, "andThen")
  }
}

/// Where the jittered steps of one schedule draw from, for one function that runs it: a
/// generator per jittered step, shared by the function's runs, as `retry` shares its jitter's.
final class ScheduleDraws: Sendable {
  /// One per step; `nil` for a step that draws nothing.
  private let draws: [JitterDraws?]

  init(_ schedule: Schedule) {
    draws = schedule.steps.map { step in
      guard case .jittered(_, let jitter) = step, jitter.kind != .none else { return nil }
      return JitterDraws(seed: jitter.seed)
    }
  }

  /// A draw uniform in `[0, 1]` for step `index`.
  func unit(_ index: Int) -> Double { draws[index]?.unit() ?? 0 }
}

/// One run of a schedule: where each of its steps stands.
///
/// `next` walks the steps with an explicit stack, each step once per wait at most, so its
/// cost is the schedule's size and its stack depth is constant however deep the nesting.
struct ScheduleRun {
  /// Where one step stands. Each kind of step uses the fields it needs.
  private struct Position {
    /// The step has ended: it is not asked again.
    var ended = false
    /// `recurs`: the waits given; `fibonacci`: whether it has begun.
    var count = 0
    /// `exponential`: the factor of the next wait, `factor^k`; infinite once past the range.
    var power = 1.0
    /// `fibonacci`: the next wait and the one after.
    var current = Duration.zero
    var following = Duration.zero
    /// `jittered` (decorrelated): the last wait drawn.
    var previous: Duration?
    /// `andThen`: when the second schedule took over, from the first try's start.
    var handedOver: Duration?
  }

  /// One step to visit: `phase` 0 asks it, later phases collect its operands' answers.
  private struct Visit {
    let step: Int
    let phase: UInt8
    /// When the enclosing schedule began, from the first try's start: what `upTo` measures from.
    let origin: Duration
  }

  private let steps: [Schedule.Step]
  private let draws: ScheduleDraws
  private var positions: [Position]
  private var visits: [Visit] = []
  private var answers: [Duration?] = []

  init(_ schedule: Schedule, draws: ScheduleDraws) {
    steps = schedule.steps
    self.draws = draws
    positions = Array(repeating: Position(), count: schedule.steps.count)
  }

  /// The next wait, or `nil` once the schedule has ended.
  ///
  /// - Parameters:
  ///   - elapsed: The time since the first try started.
  ///   - floor: The shortest wait, a ``RetryAfterHint``'s: every step's wait is raised to it,
  ///     above any cap, and `upTo` judges the raised wait.
  mutating func next(elapsed: Duration, floor: Duration = .zero) -> Duration? {
    visits.removeAll(keepingCapacity: true)
    answers.removeAll(keepingCapacity: true)
    visits.append(Visit(step: steps.count - 1, phase: 0, origin: .zero))
    while let visit = visits.popLast() {
      let index = visit.step
      if visit.phase == 0 && positions[index].ended {
        answers.append(nil)
        continue
      }
      guard case .answer(let answer) = visitStep(visit, elapsed: elapsed, floor: floor) else {
        continue
      }
      if answer == nil { positions[index].ended = true }
      answers.append(answer)
    }
    return answers.removeLast()
  }

  /// What visiting a step came to.
  private enum Outcome {
    /// The step's wait, or `nil` when it has ended.
    case answer(Duration?)
    /// The visits that answer for its operands are pushed, and its own after them.
    case asking
  }

  /// Moves `visit` on: its answer when it has one, or the visits for its operands.
  private mutating func visitStep(
    _ visit: Visit, elapsed: Duration, floor: Duration
  ) -> Outcome {
    let index = visit.step
    let origin = visit.origin
    func ask(_ operand: Int, then phase: UInt8, from operandOrigin: Duration? = nil) {
      visits.append(Visit(step: index, phase: phase, origin: origin))
      visits.append(Visit(step: operand, phase: 0, origin: operandOrigin ?? origin))
    }
    switch steps[index] {
    case .exponential(let base, let factor):
      let wait = scaled(base, by: positions[index].power)
      positions[index].power *= factor
      return .answer(max(wait, floor))
    case .fibonacci(let one):
      if positions[index].count == 0 {
        positions[index].count = 1
        positions[index].current = one
        positions[index].following = one
      }
      let wait = positions[index].current
      positions[index].current = positions[index].following
      positions[index].following = saturatingSum(wait, positions[index].following)
      return .answer(max(wait, floor))
    case .spaced(let interval):
      return .answer(max(interval, floor))
    case .recurs(let times):
      guard positions[index].count < times else { return .answer(nil) }
      positions[index].count += 1
      return .answer(floor)
    case .capped(let inner, let maximum):
      if visit.phase == 0 {
        ask(inner, then: 1)
        return .asking
      }
      guard let wait = answers.removeLast() else { return .answer(nil) }
      return .answer(max(min(wait, maximum), floor))
    case .upTo(let inner, let limit):
      if visit.phase == 0 {
        ask(inner, then: 1)
        return .asking
      }
      guard let wait = answers.removeLast() else { return .answer(nil) }
      return .answer(saturatingSum(elapsed - origin, wait) <= limit ? wait : nil)
    case .jittered(let inner, let jitter):
      if visit.phase == 0 {
        ask(inner, then: 1)
        return .asking
      }
      guard let wait = answers.removeLast() else { return .answer(nil) }
      return .answer(max(spread(wait, by: jitter, at: index), floor))
    case .union(let left, let right), .intersection(let left, let right):
      if visit.phase == 0 {
        visits.append(Visit(step: index, phase: 1, origin: origin))
        visits.append(Visit(step: right, phase: 0, origin: origin))
        visits.append(Visit(step: left, phase: 0, origin: origin))
        return .asking
      }
      let second = answers.removeLast()
      let first = answers.removeLast()
      if case .union = steps[index] {
        guard let first else { return .answer(second) }
        guard let second else { return .answer(first) }
        return .answer(min(first, second))
      }
      guard let first, let second else { return .answer(nil) }
      return .answer(max(first, second))
    case .andThen(let left, let right):
      switch visit.phase {
      case 0:
        if let handedOver = positions[index].handedOver {
          ask(right, then: 2, from: handedOver)
        } else {
          ask(left, then: 1)
        }
        return .asking
      case 1:
        if let wait = answers.removeLast() { return .answer(wait) }
        positions[index].handedOver = elapsed
        ask(right, then: 2, from: elapsed)
        return .asking
      default:
        return .answer(answers.removeLast())
      }
    }
  }

  /// `wait` spread by `jitter`, drawing from step `index`'s generator.
  private mutating func spread(_ wait: Duration, by jitter: Jitter, at index: Int) -> Duration {
    switch jitter.kind {
    case .none:
      return wait
    case .full:
      return scaled(wait, by: draws.unit(index))
    case .equal:
      let half = scaled(wait, by: 0.5)
      return half + scaled(wait - half, by: draws.unit(index))
    case .decorrelated:
      let upper = max(wait, scaled(positions[index].previous ?? wait, by: 3))
      let drawn = wait + scaled(upper - wait, by: draws.unit(index))
      positions[index].previous = drawn
      return drawn
    }
  }
}

/// `a + b` for waits, saturating at the longest wait.
func saturatingSum(_ a: Duration, _ b: Duration) -> Duration {
  let longest = RetryPolicy.longestWait
  guard a < longest, b < longest - a else { return longest }
  return a + b
}
