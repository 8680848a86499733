import AsyncCombinators
import AsyncCombinatorsTesting
import Foundation
import Synchronization

/// A Vegas-limited fake service whose capacity halves mid-run, simulated on a `TestClock`: the
/// run the Tour charts, and its tests check.
///
/// The service's latency is 10 ms × max(1, in flight / capacity), and a call that would take
/// more than 100 ms fails with `TimeoutError` at 100 ms, a drop. ``clients`` callers call again
/// as soon as their call ends. Everything runs on the thread that advances the clock, so a
/// run is the same every time.
public struct CapacityHalving: Sendable {
  /// The limit before any sample: well under the capacity, so that the chart shows Vegas
  /// finding it.
  public static let initial = 5
  /// How many callers call back to back.
  public static let clients = 100
  /// The service's capacity before and after it halves.
  public static let capacity = (before: 20, after: 10)
  /// When the capacity halves, and how long the run lasts, in virtual time.
  public static let halvesAt = Duration.seconds(3)
  public static let duration = Duration.seconds(7)
  /// How often the run notes the limit; one step of the simulation.
  public static let step = Duration.milliseconds(1)
  /// How much virtual time one row of the chart covers.
  public static let bucket = Duration.milliseconds(500)

  /// The limiter's limit after each ``step``.
  public var limits: [Int] = []
  /// The service's capacity during each ``step``.
  public var capacities: [Int] = []
  /// How many calls succeeded, and how many were drops, in each ``bucket``.
  public var successes: [Int] = []
  public var drops: [Int] = []
  /// Each move of the limit, as a `RunObserver` saw it, with its virtual time.
  public var moves: [(at: Duration, change: AdaptiveLimitChange)] = []

  /// Runs the simulation.
  public static func simulate() -> CapacityHalving {
    let clock = TestClock()
    let limiter = Limiter(adaptive: .vegas(initial: initial), clock: clock)
    let service = SimulatedService(capacity: capacity.before, clock: clock)
    let moves = MoveRecorder(clock: clock)
    let call = service.call.limited(by: limiter)
    for client in 0..<clients { service.keepCalling(client, call, observer: moves) }

    var run = CapacityHalving()
    let steps = Int(duration / step)
    let stepsPerBucket = Int(bucket / step)
    var counted = (successes: 0, drops: 0)
    for index in 0..<steps {
      if index == Int(halvesAt / step) { service.capacity = capacity.after }
      run.capacities.append(service.capacity)
      clock.advance(by: step)
      run.limits.append(limiter.limit)
      if (index + 1) % stepsPerBucket == 0 {
        let now = service.counts
        run.successes.append(now.successes - counted.successes)
        run.drops.append(now.drops - counted.drops)
        counted = now
      }
    }
    run.moves = moves.moves
    // Lets the calls in flight and the waiting callers finish, so that nothing is left on the
    // clock holding the limiter.
    service.stop()
    while let next = clock.nextDeadline { clock.advance(to: next) }
    return run
  }

  /// The mean limit over the steps from `start` to `end` of virtual time.
  public func meanLimit(from start: Duration, to end: Duration) -> Double {
    let range = Int(start / Self.step)..<Int(end / Self.step)
    return Double(limits[range].reduce(0, +)) / Double(range.count)
  }

  /// The highest limit over the steps from `start` to `end` of virtual time.
  public func highestLimit(from start: Duration, to end: Duration) -> Int {
    limits[Int(start / Self.step)..<Int(end / Self.step)].max() ?? 0
  }

  /// One row a bucket: when it starts, the capacity, the mean limit, the successful calls a
  /// second, and the limit drawn as a bar with a `│` after the capacity's cell.
  public var chart: [String] {
    let stepsPerBucket = Int(Self.bucket / Self.step)
    let perSecond = Int(Duration.seconds(1) / Self.bucket)
    var rows = ["   time  capacity  limit  calls/s"]
    for (row, start) in stride(from: 0, to: limits.count, by: stepsPerBucket).enumerated() {
      let steps = limits[start..<min(limits.count, start + stepsPerBucket)]
      let limit = Int((Double(steps.reduce(0, +)) / Double(steps.count)).rounded())
      let capacity = capacities[start]
      let seconds = Double(row) * Self.bucket.inSeconds
      let bar =
        (1...max(limit, capacity)).map { $0 <= limit ? "█" : "·" }.joined()
      let marked = bar.prefix(capacity) + "│" + bar.dropFirst(capacity)
      rows.append(
        "\(pad(seconds.formatted1, 5)) s  \(pad(capacity, 8))  \(pad(limit, 5))  "
          + "\(pad(successes[row] * perSecond, 7))  \(marked)")
    }
    return rows
  }

  /// The moves of the limit, one line for each run of moves of one reason: when, the limits
  /// it went through (the first and last only, for a long run), why, and how many moves.
  public var movesSummary: [String] {
    var lines: [String] = []
    var index = moves.startIndex
    while index < moves.endIndex {
      let reason = moves[index].change.reason
      var end = index + 1
      while end < moves.endIndex, moves[end].change.reason == reason { end += 1 }
      let group = moves[index..<end]
      let (first, last) = (group.first!, group.last!)
      let time =
        group.count == 1
        ? "\(first.at.milliseconds) ms" : "\(first.at.milliseconds)–\(last.at.milliseconds) ms"
      let limits =
        group.count <= 2
        ? ([first.change.old] + group.map(\.change.new)) : [first.change.old, last.change.new]
      let path = limits.map(String.init).joined(separator: " → ")
      let count = group.count <= 2 ? "" : " (\(group.count) moves)"
      lines.append("\(pad(time, 13))  \(path)  \(reason)\(count)")
      index = end
    }
    return lines
  }

  /// Whether the limit followed the capacity: near it before the halving, and under 1.6 times
  /// the new capacity from 2 s after the halving to the end; a sentence that says so, or what
  /// went wrong.
  public var verdict: String {
    let settled = meanLimit(from: .seconds(1), to: Self.halvesAt)
    let highest = highestLimit(from: Self.halvesAt + .seconds(2), to: Self.duration)
    let before = Double(Self.capacity.before)
    guard settled >= 0.6 * before, settled <= 1.5 * before else {
      return "the limit did not settle near \(Self.capacity.before): its mean was \(settled)"
    }
    guard Double(highest) < 1.6 * Double(Self.capacity.after) else {
      return "the limit did not follow the capacity down: it reached \(highest)"
    }
    return Self.followed
  }

  /// The ``verdict`` when the limit followed.
  public static let followed =
    "the limit followed: near \(capacity.before) before the halving, under "
    + "\(Int(1.6 * Double(capacity.after))) from 2 s after it"
}

extension Tour {
  /// An adaptive limiter following a fake service whose capacity halves mid-run.
  public static let adaptiveLimitFollowsCapacity = Scenario(
    title: "an adaptive limit following the capacity",
    story: """
      100 callers call a fake service back to back through \
      Limiter(adaptive: .vegas(initial: 5)). The service serves 20 calls at once in 10 ms; more \
      in flight make every call slower, and a call past 100 ms times out. Starting at 5, Vegas \
      measures the latency without load (a probe), then climbs while latency shows no queue. \
      It keeps a few calls queued at the service, so it settles a little above the capacity. \
      At 3 s the capacity halves to 10: Vegas never sees a timeout, it reads the rising \
      latency as calls queueing and brings the limit down within a few round trips, and the \
      calls a second halve with the capacity. Virtual time: the run is simulated on a \
      TestClock, 7 s in a blink, the same every time.
      """
  ) {
    let run = await onAThreadOfItsOwn { CapacityHalving.simulate() }
    let chart =
      run.chart + ["the moves of the limit, as a RunObserver saw them:"] + run.movesSummary
    return [
      Traced(
        label: "Vegas, capacity 20 then 10 (one row per 0.5 s, the mean limit over it)",
        structure: "service.limited(by: Limiter(adaptive: .vegas(initial: 5), clock: testClock))",
        result: "\(run.limits.last ?? 0) at 7 s", timeline: Timeline(), log: chart + [run.verdict],
        expectations: [.logged(chart + [CapacityHalving.followed])])
    ]
  }
}

/// The fake service on a `TestClock`: each call completes from a timer of the clock.
private final class SimulatedService: Sendable {
  struct Counts {
    var capacity: Int
    var inFlight = 0
    var successes = 0
    var drops = 0
    var calling = true
  }

  private let state: Mutex<Counts>
  private let clock: TestClock

  init(capacity: Int, clock: TestClock) {
    state = Mutex(Counts(capacity: capacity))
    self.clock = clock
  }

  /// The capacity; a change applies to the calls that start after it.
  var capacity: Int {
    get { state.withLock { $0.capacity } }
    set { state.withLock { $0.capacity = newValue } }
  }

  var counts: (successes: Int, drops: Int) { state.withLock { ($0.successes, $0.drops) } }

  /// Stops the callers calling again.
  func stop() { state.withLock { $0.calling = false } }

  /// One call: its latency from the calls in flight when it starts, itself included.
  var call: AsyncFunc<Int, Int> {
    AsyncFunc(name: "service") { [self] input, complete in
      let latency = state.withLock { counts -> Duration in
        counts.inFlight += 1
        return .milliseconds(10) * max(1, Double(counts.inFlight) / Double(counts.capacity))
      }
      let timeout = Duration.milliseconds(100)
      _ = clock.scheduleTimer(at: clock.now.advanced(by: min(latency, timeout))) { [self] in
        let dropped = latency > timeout
        state.withLock { counts in
          counts.inFlight -= 1
          if dropped { counts.drops += 1 } else { counts.successes += 1 }
        }
        complete(dropped ? .failure(TimeoutError(duration: timeout)) : .success(input))
      }
    }
  }

  /// Calls `call` for `client`, and again each time a call ends, until ``stop()``.
  func keepCalling(_ client: Int, _ call: AsyncFunc<Int, Int>, observer: MoveRecorder) {
    call.run(client, observer: observer) { [self] _ in
      guard state.withLock({ $0.calling }) else { return }
      keepCalling(client, call, observer: observer)
    }
  }
}

/// Notes each move of the limit, from the runs' `limitChanged` events, with its time.
private final class MoveRecorder: RunObserver {
  private let clock: TestClock
  private let noted = Mutex<[(at: Duration, change: AdaptiveLimitChange)]>([])

  init(clock: TestClock) { self.clock = clock }

  func observe(_ event: RunEvent) {
    guard let change = event.limitChange else { return }
    let now = clock.now.sinceStart
    noted.withLock { $0.append((now, change)) }
  }

  var moves: [(at: Duration, change: AdaptiveLimitChange)] { noted.withLock { $0 } }
}

private func pad(_ value: some CustomStringConvertible, _ width: Int) -> String {
  let text = value.description
  return String(repeating: " ", count: max(0, width - text.count)) + text
}

extension Double {
  /// The value with one decimal, such as `2.5`.
  fileprivate var formatted1: String { "\((self * 10).rounded() / 10)" }
}

extension Duration {
  fileprivate var milliseconds: Int { Int(self / .milliseconds(1)) }

  fileprivate var inSeconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }
}

/// Runs `work` on a thread of its own and resumes with its result: a simulation is seconds of
/// synchronous work, which must not hold one of the few threads that every task shares.
private func onAThreadOfItsOwn<Result: Sendable>(
  _ work: @escaping @Sendable () -> Result
) async -> Result {
  await withCheckedContinuation { continuation in
    Thread { continuation.resume(returning: work()) }.start()
  }
}
