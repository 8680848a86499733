import AsyncCombinators
import AsyncCombinatorsTesting

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A simulated service behind a limiter, on a `TestClock`, for the adaptive limits' tests and
/// charts: a service of `capacity` whose latency is 10 ms (``latency``) × max(1, in flight /
/// capacity), and
/// whose calls beyond 100 ms fail with `TimeoutError` at 100 ms (a drop); `clients` callers that
/// call again as soon as their call ends.
///
/// Everything runs on the thread that advances the clock: each call completes from a timer of
/// the clock, and its client calls again inside that completion. ``run(for:step:)`` advances
/// the clock and returns what happened meanwhile.
///
/// ```
/// let simulation = AdaptiveSimulation(.vegas(), clients: 100, capacity: 20)
/// let warmUp = simulation.run(for: .seconds(2))
/// let steady = simulation.run(for: .seconds(8))
/// print(steady.meanLimit, steady.throughput)
/// ```
final class AdaptiveSimulation: Sendable {
  /// What one stretch of a simulation saw.
  struct Segment {
    /// The limiter's limit after each step.
    var limits: [Int] = []
    /// How many calls succeeded, and how many were drops.
    var successes = 0
    var drops = 0
    /// The stretch's length.
    var duration: Duration = .zero

    /// Successful calls per second.
    var throughput: Double { Double(successes) / duration.inSeconds }
    var meanLimit: Double { Double(limits.reduce(0, +)) / Double(max(1, limits.count)) }
    /// The share of steps whose limit was below `value`.
    func shareBelow(_ value: Double) -> Double {
      Double(limits.count { Double($0) < value }) / Double(max(1, limits.count))
    }
  }

  private struct Counts {
    var capacity: Int
    var latency = Duration.milliseconds(10)
    var inFlight = 0
    var successes = 0
    var drops = 0
    var calling = true
  }

  /// The counts, apart so that the service's timers hold them and not the simulation.
  private final class Shared: Sendable {
    let counts: Locked<Counts>
    init(capacity: Int) { counts = Locked(Counts(capacity: capacity)) }
  }

  let clock: TestClock
  let limiter: Limiter
  private let shared: Shared
  private let limited: Locked<AsyncFunc<Int, Int>?> = Locked(nil)

  /// - Parameters:
  ///   - adaptive: The adaptive limit to simulate; `nil` for `fixed`.
  ///   - fixed: The fixed concurrency to simulate when `adaptive` is `nil`.
  ///   - clients: How many callers call back to back.
  ///   - capacity: The service's capacity.
  init(_ adaptive: AdaptiveLimit?, fixed: Int = 20, clients: Int, capacity: Int = 20) {
    let clock = TestClock()
    self.clock = clock
    limiter =
      adaptive.map { Limiter(adaptive: $0, clock: clock) }
      ?? Limiter(concurrency: fixed, clock: clock)
    shared = Shared(capacity: capacity)
    let function = service.limited(by: limiter)
    limited.withLock { $0 = function }
    for client in 0..<clients { call(client, function) }
  }

  /// The service's capacity; setting it changes the latency of the calls that start after.
  var capacity: Int {
    get { shared.counts.withLock { $0.capacity } }
    set { shared.counts.withLock { $0.capacity = newValue } }
  }

  /// The service's latency without load, 10 ms at first; setting it changes the latency of the
  /// calls that start after, as a deploy would.
  var latency: Duration {
    get { shared.counts.withLock { $0.latency } }
    set { shared.counts.withLock { $0.latency = newValue } }
  }

  /// Stops the clients calling again, so that the simulation's objects can go.
  func stop() {
    shared.counts.withLock { $0.calling = false }
    limited.withLock { $0 = nil }
  }

  /// Advances the clock by `duration`, `step` at a time, noting the limit after each step.
  func run(for duration: Duration, step: Duration = .milliseconds(1)) -> Segment {
    let before = shared.counts.withLock { ($0.successes, $0.drops) }
    var segment = Segment(duration: duration)
    var elapsed = Duration.zero
    while elapsed < duration {
      clock.advance(by: step)
      elapsed += step
      segment.limits.append(limiter.limit)
    }
    let after = shared.counts.withLock { ($0.successes, $0.drops) }
    segment.successes = after.0 - before.0
    segment.drops = after.1 - before.1
    return segment
  }

  private func call(_ client: Int, _ function: AsyncFunc<Int, Int>) {
    function.run(client) { [weak self] _ in
      guard let self, self.shared.counts.withLock({ $0.calling }) else { return }
      self.call(client, function)
    }
  }

  /// The service: its latency from the calls in flight when a call starts, itself included.
  private var service: AsyncFunc<Int, Int> {
    let clock = clock
    let shared = shared
    return AsyncFunc(name: "service") { input, complete in
      let latency = shared.counts.withLock { counts -> Duration in
        counts.inFlight += 1
        let load = Double(counts.inFlight) / Double(counts.capacity)
        return counts.latency * Swift.max(1, load)
      }
      let limit = Duration.milliseconds(100)
      let ends = clock.now.advanced(by: min(latency, limit))
      _ = clock.scheduleTimer(at: ends) {
        let dropped = latency > limit
        shared.counts.withLock { counts in
          counts.inFlight -= 1
          if dropped { counts.drops += 1 } else { counts.successes += 1 }
        }
        complete(dropped ? .failure(TimeoutError(duration: limit)) : .success(input))
      }
    }
  }
}
