import AsyncCombinatorsKernel

/// How an adaptive ``Limiter`` finds its concurrency limit from the runs it admits.
///
/// Each run that reaches the limited function is one sample: its latency from start to result
/// on the limiter's clock, whether it was a drop (the limiter's `isDrop` of its error), and how
/// much was in flight when it started. A cancelled run is no sample. The limit stays within
/// `[min, max]`; a lowered limit admits nobody until the work in flight falls under it, and
/// cancels nothing.
///
/// - ``aimd(initial:min:max:backoff:file:line:)`` reacts to drops only: for a service that
///   fails fast when overloaded, or rejects with a status.
/// - ``vegas(initial:min:max:alpha:beta:file:line:)`` and
///   ``gradient(initial:min:max:tolerance:smoothing:file:line:)`` react to latency as well,
///   before anything fails: for a service that queues when overloaded. Both re-measure the
///   service's latency without load from time to time, pinning the limit low for a moment, so
///   that neither a quiet moment nor a slow drift of latency holds the limit down or pushes it
///   up for long.
///
/// ```swift
/// print(AdaptiveLimit.vegas())
/// print(AdaptiveLimit.aimd(initial: 10, max: 50))
/// // prints vegas(initial: 20, min: 1, max: 1000, alpha: 3, beta: 6)
/// // prints aimd(initial: 10, min: 1, max: 50, backoff: 0.9)
/// ```
public struct AdaptiveLimit: Sendable, CustomStringConvertible {
  /// The rule that moves the limit.
  enum Algorithm: Sendable, Equatable {
    case aimd(backoff: Double)
    case vegas(alpha: Int, beta: Int)
    case gradient(tolerance: Double, smoothing: Double)
  }

  let initial: Int
  let min: Int
  let max: Int
  let algorithm: Algorithm
  /// `vegas(initial: 20, min: 1, max: 1000, alpha: 3, beta: 6)`.
  public let description: String

  /// Why an adaptive limit moved, as a ``RunObserver`` sees it.
  public enum Reason: Sendable, Hashable, CustomStringConvertible {
    /// The runs used enough of the limit and latency showed room for more.
    case headroom
    /// A run was a drop.
    case drop
    /// Latency rose above the service's latency without load: work queues downstream.
    case queueing
    /// The limit was pinned low to re-measure latency without load, or restored after.
    case probe

    /// `headroom`, `drop`, `queueing` or `probe`.
    public var description: String {
      switch self {
      case .headroom: "headroom"
      case .drop: "drop"
      case .queueing: "queueing"
      case .probe: "probe"
      }
    }
  }

  /// Additive increase, multiplicative decrease: +1 after a successful run while at least half
  /// the limit was in use; × `backoff` after a drop. Reaching `max` does nothing more.
  ///
  /// - Precondition: `1 <= min <= initial <= max` and `backoff` is in (0, 1); otherwise the
  ///   program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - initial: The limit before any sample.
  ///   - min: The lowest limit; at least 1.
  ///   - max: The highest limit.
  ///   - backoff: What a drop multiplies the limit by, rounding down.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The configuration for ``Limiter/init(adaptive:queue:isDrop:clock:)``.
  public static func aimd(
    initial: Int = 20, min: Int = 1, max: Int = 1000, backoff: Double = 0.9,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AdaptiveLimit {
    let call = "aimd(initial: \(initial), min: \(min), max: \(max), backoff: \(backoff))"
    require(
      backoff > 0 && backoff < 1, "\(call): the backoff must be between 0 and 1, both excluded",
      file: file, line: line)
    return AdaptiveLimit(
      call, initial: initial, min: min, max: max, .aimd(backoff: backoff), file: file, line: line)
  }

  /// TCP Vegas: estimates how many runs queue downstream from the latency without load,
  /// `limit × (1 − noLoad / latency)`, once per round trip: +1 below `alpha` queued (while at
  /// least half the limit is in use); above `beta`, down by the excess over the middle of
  /// `alpha` and `beta`; −1 after a drop.
  ///
  /// - Precondition: `1 <= min <= initial <= max` and `0 <= alpha < beta`; otherwise the
  ///   program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - initial: The limit before any sample.
  ///   - min: The lowest limit; at least 1.
  ///   - max: The highest limit.
  ///   - alpha: Below this many queued, the limit grows.
  ///   - beta: Above this many queued, the limit shrinks.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The configuration for ``Limiter/init(adaptive:queue:isDrop:clock:)``.
  public static func vegas(
    initial: Int = 20, min: Int = 1, max: Int = 1000, alpha: Int = 3, beta: Int = 6,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AdaptiveLimit {
    let call =
      "vegas(initial: \(initial), min: \(min), max: \(max), alpha: \(alpha), beta: \(beta))"
    require(
      alpha >= 0 && alpha < beta, "\(call): alpha must be at least 0 and below beta",
      file: file, line: line)
    return AdaptiveLimit(
      call, initial: initial, min: min, max: max, .vegas(alpha: alpha, beta: beta),
      file: file, line: line)
  }

  /// A gradient of the latency without load over the recent latency, times `tolerance` and
  /// clamped to [0.5, 1], times the limit, plus a queue allowance of √limit while latency is
  /// still in the lower half of the tolerance; each round trip moves the limit `smoothing` of
  /// the way there.
  ///
  /// - Precondition: `1 <= min <= initial <= max`, `tolerance` at least 1 and `smoothing` in
  ///   (0, 1]; otherwise the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - initial: The limit before any sample.
  ///   - min: The lowest limit; at least 1.
  ///   - max: The highest limit.
  ///   - tolerance: How many times the latency without load is tolerated before the limit
  ///     shrinks.
  ///   - smoothing: How far each round trip moves the limit towards its target.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The configuration for ``Limiter/init(adaptive:queue:isDrop:clock:)``.
  public static func gradient(
    initial: Int = 20, min: Int = 1, max: Int = 1000, tolerance: Double = 1.5,
    smoothing: Double = 0.2, file: StaticString = #fileID, line: UInt = #line
  ) -> AdaptiveLimit {
    let call =
      "gradient(initial: \(initial), min: \(min), max: \(max), tolerance: \(tolerance), "
      + "smoothing: \(smoothing))"
    require(tolerance >= 1, "\(call): the tolerance must be at least 1", file: file, line: line)
    require(
      smoothing > 0 && smoothing <= 1, "\(call): the smoothing must be above 0 and at most 1",
      file: file, line: line)
    return AdaptiveLimit(
      call, initial: initial, min: min, max: max,
      .gradient(tolerance: tolerance, smoothing: smoothing), file: file, line: line)
  }

  private init(
    _ call: String, initial: Int, min: Int, max: Int, _ algorithm: Algorithm,
    file: StaticString, line: UInt
  ) {
    require(min >= 1, "\(call): min must be at least 1", file: file, line: line)
    require(min <= max, "\(call): min must be at most max", file: file, line: line)
    require(
      initial >= min && initial <= max, "\(call): initial must be from min to max",
      file: file, line: line)
    self.initial = initial
    self.min = min
    self.max = max
    self.algorithm = algorithm
    description = call
  }
}

/// One run's sample: what an adaptive limit learns from it.
struct AdaptiveSample {
  /// From the run's start to its result, in seconds on the limiter's clock.
  var latency: Double
  /// Whether the limiter's `isDrop` holds for the run's error.
  var isDrop: Bool
  /// The weight in flight when the run started, its own included.
  var inFlight: Int
}

/// A move of an adaptive limit, as an observer sees it in a ``RunEvent`` of kind
/// ``RunEvent/Kind/limitChanged``: `from 20 to 18 (drop)`.
public struct AdaptiveLimitChange: Sendable, Hashable, CustomStringConvertible {
  /// The limit before.
  public var old: Int
  /// The limit now.
  public var new: Int
  /// Why it moved.
  public var reason: AdaptiveLimit.Reason

  init(old: Int, new: Int, reason: AdaptiveLimit.Reason) {
    self.old = old
    self.new = new
    self.reason = reason
  }

  /// `from 20 to 18 (drop)`.
  public var description: String { "from \(old) to \(new) (\(reason))" }
}

extension RunEvent.Kind {
  /// An adaptive ``Limiter`` moved its limit: the event's ``RunEvent/subject`` is the limiter,
  /// and ``RunEvent/limitChange`` says from what to what, and why. Sent to the observer of the
  /// run whose sample moved it, on the thread where that run ended.
  public static let limitChanged = RunEvent.Kind("limit changed")
}

extension RunEvent {
  /// The move of an adaptive limit, for an event of kind ``Kind/limitChanged``; `nil` for
  /// the others.
  public var limitChange: AdaptiveLimitChange? { payload(as: AdaptiveLimitChange.self) }
}

/// The state machine of an adaptive limit: fed one sample at a time, it says when the limit
/// moves. A value owned by its limiter, under the limiter's lock; O(1) per sample.
///
/// Vegas and Gradient decide once per round trip, over a window of samples that ends when the
/// quickest of them could have gone round once more: deciding per sample would react many
/// times to one congestion. Both anchor on the latency without load, which a probe measures:
/// the limit is pinned low until the runs that start under it have come back, then restored.
/// A probe is due at the first sample and then every ``probeInterval``.
struct AdaptiveLimitState {
  /// How often Vegas and Gradient re-measure the latency without load.
  static let probeInterval = 30.0
  /// How many samples under a pinned limit a probe averages.
  static let probeSamples = 5
  /// The highest limit a probe pins, if the limit and `min` are not lower.
  static let probeConcurrency = 3

  /// The samples of one round trip.
  private struct Window {
    var start = 0.0
    var count = 0
    var total = 0.0
    var shortest = Double.infinity
    var mostInFlight = 0
    var dropped = false
  }

  /// Where the re-measuring of the latency without load stands.
  private enum Probe {
    /// Not measuring; the next probe starts with the first sample at or after `at`.
    case due(at: Double)
    /// The limit is pinned at `pinned`; the samples that started under it are averaged, and
    /// the limit goes back to `restore` once there are enough.
    case measuring(pinned: Int, restore: Double, count: Int, total: Double)
  }

  let configuration: AdaptiveLimit
  /// The limit in force.
  private(set) var limit: Int
  /// The weight admitted and not yet back, kept by the limiter.
  var inFlight = 0
  /// How many samples moved the state: cancelled runs are none.
  private(set) var samples = 0
  /// The limit before rounding down: Gradient moves it by fractions.
  private var estimate: Double
  /// The latency without load, in seconds, once measured.
  private(set) var noLoad: Double?
  private var window = Window()
  private var probe = Probe.due(at: 0)

  init(_ configuration: AdaptiveLimit) {
    self.configuration = configuration
    limit = configuration.initial
    estimate = Double(configuration.initial)
  }

  /// Learns from one sample at `now` (seconds on the limiter's clock); returns the move of the
  /// limit it causes, if any.
  mutating func record(_ sample: AdaptiveSample, at now: Double) -> AdaptiveLimitChange? {
    samples += 1
    switch configuration.algorithm {
    case .aimd(let backoff):
      if sample.isDrop {
        return set(Double(limit) * backoff, .drop)
      }
      guard sample.inFlight * 2 >= limit, limit < configuration.max else { return nil }
      return set(Double(limit + 1), .headroom)
    case .vegas(let alpha, let beta):
      if let change = probing(sample, at: now) { return change }
      guard case .due = probe, let noLoad, let window = closeWindow(sample, at: now) else {
        return nil
      }
      if window.dropped { return set(Double(limit - 1), .drop) }
      let queued = Double(limit) * (1 - Self.ratio(noLoad, to: window.shortest))
      // Down to the middle of the band at once: −1 at a time stops on its upper edge.
      let middle = Double(alpha + beta) / 2
      if queued > Double(beta) { return set(Double(limit) - (queued - middle), .queueing) }
      if queued < Double(alpha), window.mostInFlight * 2 >= limit {
        return set(Double(limit + 1), .headroom)
      }
      return nil
    case .gradient(let tolerance, let smoothing):
      if let change = probing(sample, at: now) { return change }
      guard case .due = probe, let noLoad, let window = closeWindow(sample, at: now) else {
        return nil
      }
      let latency = window.total / Double(window.count)
      let gradient =
        window.dropped
        ? 0.5 : Swift.max(0.5, Swift.min(1, tolerance * Self.ratio(noLoad, to: latency)))
      // The allowance only while latency is in the lower half of the tolerance and the runs
      // use the limit: else it would push the limit to where latency is `tolerance` times the
      // latency without load, and keep it there.
      let hasHeadroom =
        !window.dropped && latency <= noLoad * (1 + (tolerance - 1) / 2)
        && window.mostInFlight * 2 >= limit
      let target = estimate * gradient + (hasHeadroom ? estimate.squareRoot() : 0)
      let next = estimate * (1 - smoothing) + target * smoothing
      return set(next, next < estimate ? (window.dropped ? .drop : .queueing) : .headroom)
    }
  }

  /// `noLoad / latency`, at most 1: a latency under the one without load means no queue.
  private static func ratio(_ noLoad: Double, to latency: Double) -> Double {
    latency > noLoad ? noLoad / latency : 1
  }

  /// Sets the estimate, within bounds, and the limit to it rounded down.
  private mutating func set(_ value: Double, _ reason: AdaptiveLimit.Reason)
    -> AdaptiveLimitChange?
  {
    estimate = Swift.max(Double(configuration.min), Swift.min(Double(configuration.max), value))
    return pin(Int(estimate), reason)
  }

  private mutating func pin(_ value: Int, _ reason: AdaptiveLimit.Reason) -> AdaptiveLimitChange? {
    let old = limit
    limit = value
    return old == value ? nil : AdaptiveLimitChange(old: old, new: value, reason: reason)
  }

  /// Starts a probe that is due, or feeds the one under way: the change it makes, if any. While
  /// a probe measures, nothing else moves the limit.
  private mutating func probing(_ sample: AdaptiveSample, at now: Double) -> AdaptiveLimitChange? {
    switch probe {
    case .due(let at):
      guard now >= at else { return nil }
      let pinned = Swift.max(configuration.min, Swift.min(limit, Self.probeConcurrency))
      probe = .measuring(pinned: pinned, restore: estimate, count: 0, total: 0)
      let change = pin(pinned, .probe)
      _ = probing(sample, at: now)
      return change
    case .measuring(let pinned, let restore, var count, var total):
      guard sample.inFlight <= pinned, !sample.isDrop else { return nil }
      count += 1
      total += sample.latency
      guard count >= Self.probeSamples else {
        probe = .measuring(pinned: pinned, restore: restore, count: count, total: total)
        return nil
      }
      noLoad = total / Double(count)
      probe = .due(at: now + Self.probeInterval)
      window = Window(start: now)
      estimate = restore
      return pin(Int(restore), .probe)
    }
  }

  /// Adds `sample` to the window; once the window spans a round trip of its quickest sample,
  /// returns it and starts the next.
  private mutating func closeWindow(_ sample: AdaptiveSample, at now: Double) -> Window? {
    window.count += 1
    window.total += sample.latency
    window.shortest = Swift.min(window.shortest, sample.latency)
    window.mostInFlight = Swift.max(window.mostInFlight, sample.inFlight)
    window.dropped = window.dropped || sample.isDrop
    guard now - window.start >= window.shortest else { return nil }
    defer { window = Window(start: now) }
    return window
  }
}

extension Duration {
  /// The duration in seconds, as a `Double`.
  var inSeconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) + Double(attoseconds) * 1e-18
  }
}

/// An adaptive limiter's sampling: its state machine under a lock, the work in flight, and the
/// gate whose capacity follows the limit. Every run of the limiter reports its start and its
/// end here; a fixed limiter has none and does no sampling work.
///
/// `@unchecked Sendable`: `state` is a lock; `limiter` is written once, in the limiter's
/// `init`, before the limiter can be shared, and only read after.
final class AdaptiveSampler: RunSampler, @unchecked Sendable {
  private struct Shared {
    var machine: AdaptiveLimitState
    /// A thread is setting the gate's capacity to the limit; `dirty` if the limit moved since
    /// it read it, for it to set again.
    var applying = false
    var dirty = false
  }

  private let state: Locked<Shared>
  let gate: Admission<LimitedRun>
  let isDrop: @Sendable (any Error) -> Bool
  let elapsed: @Sendable () -> Duration
  /// The limiter, named to an observer; weak, for the limiter holds this.
  weak var limiter: Limiter?

  init(
    _ configuration: AdaptiveLimit, gate: Admission<LimitedRun>,
    isDrop: @escaping @Sendable (any Error) -> Bool, elapsed: @escaping @Sendable () -> Duration
  ) {
    state = Locked(Shared(machine: AdaptiveLimitState(configuration)))
    self.gate = gate
    self.isDrop = isDrop
    self.elapsed = elapsed
  }

  /// The state machine as it is now, for tests.
  var machine: AdaptiveLimitState { state.withLock { $0.machine } }

  /// A run of `weight` was admitted: when, and the weight in flight with it.
  package func started(weight: Int) -> (at: Duration, inFlight: Int) {
    let now = elapsed()
    let inFlight = state.withLock {
      $0.machine.inFlight += weight
      return $0.machine.inFlight
    }
    return (now, inFlight)
  }

  /// A run admitted at `startedAt` with `inFlight` ended with `error` (`nil`: it succeeded):
  /// its weight is back, and unless it was cancelled it is a sample.
  package func ended(
    weight: Int, startedAt: Duration, inFlight: Int, error: (any Error)?, cancelled: Bool,
    token: CancellationToken
  ) {
    guard !cancelled else { return left(weight: weight) }
    let now = elapsed()
    let sample = AdaptiveSample(
      latency: (now - startedAt).inSeconds, isDrop: error.map(isDrop) ?? false,
      inFlight: inFlight)
    let change = state.withLock {
      $0.machine.inFlight -= weight
      return $0.machine.record(sample, at: now.inSeconds)
    }
    guard let change else { return }
    apply()
    if let observer = token.runObserver, let limiter {
      observer.observe(
        RunEvent(.limitChanged, subject: limiter.description, payload: change))
    }
  }

  /// A run's weight is back without a sample: it was cancelled, or gave no result.
  package func left(weight: Int) {
    state.withLock { $0.machine.inFlight -= weight }
  }

  /// Sets the gate's capacity to the limit. One thread at a time, and again while the limit
  /// moved meanwhile, so that the last capacity set is the last limit; a thread that finds
  /// another setting leaves it to that one (also when the gate admits, inside `setCapacity`,
  /// a run that ends at once and moves the limit again).
  private func apply() {
    var target = state.withLock { shared -> Int? in
      guard !shared.applying else {
        shared.dirty = true
        return nil
      }
      shared.applying = true
      return shared.machine.limit
    }
    while let limit = target {
      gate.setCapacity(limit)
      target = state.withLock { shared -> Int? in
        guard shared.dirty else {
          shared.applying = false
          return nil
        }
        shared.dirty = false
        return shared.machine.limit
      }
    }
  }
}
