import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Outcomes of runs, by input, recorded by their completions.
private final class Outcomes: Sendable {
  private let results = Locked<[Int: Result<Int, any Error>]>([:])

  func record(_ input: Int) -> @Sendable (Result<Int, any Error>) -> Void {
    { result in self.results.withLock { $0[input] = result } }
  }

  subscript(input: Int) -> Result<Int, any Error>? { results.withLock { $0[input] } }
  var count: Int { results.withLock { $0.count } }
}

/// Priorities and the runs a queue limit turns away, with parked runs.
@Suite struct LimiterPriorityTests {
  @Test func waiting_runs_start_highest_priority_first_in_arrival_order_within_one() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1)
    let priorities: [WorkQueue.Priority] = [.normal, .low, .normal, .high, .low, .high, .normal]
    for (input, priority) in priorities.enumerated() {
      parking.function.limited(by: limiter, priority: priority).run(input) { _ in }
    }
    var order: [Int] = []
    while let next = parking.takeAll().first {
      order.append(next.input)
      next.complete(.success(0))
    }
    #expect(order == [0, 3, 5, 2, 6, 1, 4])
  }

  @Test func a_newcomer_of_higher_priority_takes_the_place_of_the_newest_lowest_waiter() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1, queue: .count(2))
    let low = parking.function.limited(by: limiter, priority: .low)
    let normal = parking.function.limited(by: limiter)
    let high = parking.function.limited(by: limiter, priority: .high)
    let outcomes = Outcomes()
    normal.run(0, completion: outcomes.record(0))  // holds the slot
    low.run(1, completion: outcomes.record(1))
    low.run(2, completion: outcomes.record(2))
    high.run(3, completion: outcomes.record(3))
    #expect(outcomes[2]?.failure is LimitExceeded)  // the newest of the lowest
    #expect(outcomes[1] == nil)
    normal.run(4, completion: outcomes.record(4))
    #expect(outcomes[1]?.failure is LimitExceeded)  // low is still below normal
    #expect(limiter.gate.counts.waiting == 2)
    var order: [Int] = []
    while let next = parking.takeAll().first {
      order.append(next.input)
      next.complete(.success(next.input))
    }
    #expect(order == [0, 3, 4])  // the evicted never started
    #expect((try? outcomes[4]?.get()) == 4)
  }

  @Test func a_newcomer_of_no_higher_priority_than_every_waiter_is_the_one_turned_away() {
    let parking = Parking<Int, Int>()
    let limiter = Limiter(concurrency: 1, queue: .count(2))
    let low = parking.function.limited(by: limiter, priority: .low)
    let normal = parking.function.limited(by: limiter)
    let high = parking.function.limited(by: limiter, priority: .high)
    let outcomes = Outcomes()
    high.run(0, completion: outcomes.record(0))
    normal.run(1, completion: outcomes.record(1))
    high.run(2, completion: outcomes.record(2))
    normal.run(3, completion: outcomes.record(3))  // ties with the lowest waiting
    low.run(4, completion: outcomes.record(4))
    #expect(outcomes[3]?.failure is LimitExceeded)
    #expect(outcomes[4]?.failure is LimitExceeded)
    #expect(outcomes[1] == nil && outcomes[2] == nil)
    var order: [Int] = []
    while let next = parking.takeAll().first {
      order.append(next.input)
      next.complete(.success(next.input))
    }
    #expect(order == [0, 2, 1])
  }

  @Test func an_evicted_waiter_of_a_rate_limiter_gets_a_hint_behind_the_newcomer() {
    let clock = TestClock()
    let limiter = Limiter(
      rate: .tokenBucket(1, per: .seconds(1)), queue: .count(1), clock: clock)
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 }
    let outcomes = Outcomes()
    f.limited(by: limiter).run(0, completion: outcomes.record(0))  // takes the one permit
    f.limited(by: limiter, priority: .low).run(1, completion: outcomes.record(1))
    f.limited(by: limiter, priority: .high).run(2, completion: outcomes.record(2))
    let evicted = outcomes[1]?.failure as? LimitExceeded
    #expect(evicted?.retryAfter == .seconds(2))  // behind the newcomer's permit
    clock.advance(by: .seconds(1))
    #expect((try? outcomes[2]?.get()) == 2)
  }

  @Test func a_work_queue_with_a_count_sheds_its_lowest_priority_too() {
    let parking = Parking<Int, Int>()
    let queue = WorkQueue(limit: 1, capacity: .count(1))
    let outcomes = Outcomes()
    parking.function.queued(on: queue).run(0, completion: outcomes.record(0))
    parking.function.queued(on: queue, priority: .low).run(1, completion: outcomes.record(1))
    parking.function.queued(on: queue, priority: .high).run(2, completion: outcomes.record(2))
    #expect(outcomes[1]?.failure is LimitExceeded)
    #expect(queue.progress == BatchProgress(completed: 0, failed: 0, inFlight: 1, total: 2))
    parking.function.queued(on: queue).run(3, completion: outcomes.record(3))
    #expect(outcomes[3]?.failure is LimitExceeded)
    var order: [Int] = []
    while let next = parking.takeAll().first {
      order.append(next.input)
      next.complete(.success(next.input))
    }
    #expect(order == [0, 2])
  }

  @Test func a_work_queue_with_codel_measures_waits_on_its_clock() {
    let queue = WorkQueue(limit: 1, capacity: .codel())
    #expect(queue.gate.clock != nil)
    #expect(
      "\(queue)"
        == "WorkQueue(limit: 1, capacity: codel(target: 0.005 seconds, interval: 0.1 seconds))")
  }

  @Test func a_fixed_limiter_without_priorities_keeps_arrival_order_and_its_count() {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limited(by: Limiter(concurrency: 1, queue: .count(2)))
    let outcomes = Outcomes()
    for input in 0...3 { limited.run(input, completion: outcomes.record(input)) }
    #expect(outcomes[3]?.failure is LimitExceeded)  // the newcomer, not a waiter
    var order: [Int] = []
    while let next = parking.takeAll().first {
      order.append(next.input)
      next.complete(.success(next.input))
    }
    #expect(order == [0, 1, 2])
  }

  @Test func describes_a_priority_and_a_codel_limit() {
    let f = AsyncFunc<Int, Int>.sync(name: "f") { $0 }
    let limiter = Limiter(concurrency: 2, queue: .codel())
    #expect(
      "\(f.limited(by: limiter, weight: 2, priority: .low))"
        == "f.limited(by: Limiter(concurrency: 2, queue: codel(target: 0.005 seconds, interval: 0.1 seconds)), weight: 2, priority: low)"
    )
    #expect(
      "\(QueueLimit.codel(target: .milliseconds(10), interval: .seconds(1)))"
        == "codel(target: 0.01 seconds, interval: 1.0 seconds)")
  }

  @Test func a_chain_takes_the_codel_of_the_shortest_target_below_a_wait() {
    let short = QueueLimit.codel(target: .milliseconds(1))
    let long = QueueLimit.codel(target: .milliseconds(9))
    #expect(QueueLimit.strictest(of: [long, .unbounded, short]) == short)
    #expect(QueueLimit.strictest(of: [short, .wait(.seconds(1))]) == .wait(.seconds(1)))
  }

  @Test func a_codel_target_of_zero_is_a_precondition_failure_naming_the_callers_line()
    async throws
  {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = QueueLimit.codel(target: .zero)
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(
      message.contains("QueueLimit.codel(target: 0.0 seconds): the target must be above zero"))
    #expect(message.contains("LimiterSheddingTests.swift"))
  }

  @Test func a_codel_interval_of_zero_is_a_precondition_failure() async throws {
    let result = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = QueueLimit.codel(interval: .zero)
      })
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("the interval must be above zero"))
  }
}

/// A service simulated on a `TestClock` behind a CoDel limiter: each call takes `latency`,
/// arrivals come at a fixed pace, and each run's wait in the queue is measured.
private final class CoDelSimulation: Sendable {
  struct Report {
    /// The queue waits of the admitted runs, sorted.
    var waits: [Duration]
    var succeeded: [WorkQueue.Priority: Int]
    var rejected: [WorkQueue.Priority: Int]
    var started: [WorkQueue.Priority: Int]
    /// Failures other than ``LimitExceeded``: none expected.
    var otherFailures: Int

    func percentile(_ p: Double) -> Duration {
      waits.isEmpty ? .zero : waits[min(waits.count - 1, Int(Double(waits.count) * p))]
    }
  }

  private struct State {
    var arrivals: [Int: TestClock.Instant] = [:]
    var waits: [Duration] = []
    var succeeded: [WorkQueue.Priority: Int] = [:]
    var rejected: [WorkQueue.Priority: Int] = [:]
    var started: [WorkQueue.Priority: Int] = [:]
    var otherFailures = 0
  }

  let clock = TestClock()
  let limiter: Limiter
  private let state = Locked(State())
  private let latency: Duration

  init(concurrency: Int, latency: Duration, queue: QueueLimit) {
    limiter = Limiter(concurrency: concurrency, queue: queue, clock: clock)
    self.latency = latency
  }

  /// Runs `arrivals` runs, one every `every`, of the priority `priority(n)` for the `n`th;
  /// then lets the last of them end.
  func run(
    arrivals: Int, every: Duration, priority: (Int) -> WorkQueue.Priority
  ) -> Report {
    let levels: [WorkQueue.Priority] = [.low, .normal, .high]
    let functions = levels.map { service($0).limited(by: limiter, priority: $0) }
    for n in 0..<arrivals {
      let level = priority(n)
      state.withLock { $0.arrivals[n] = clock.now }
      functions[level.value + 1].run(n) { result in
        self.state.withLock { state in
          switch result {
          case .success: state.succeeded[level, default: 0] += 1
          case .failure(let error) where error is LimitExceeded:
            state.rejected[level, default: 0] += 1
          case .failure: state.otherFailures += 1
          }
        }
      }
      clock.advance(by: every)
    }
    clock.advance(by: .seconds(10))
    return state.withLock { state in
      Report(
        waits: state.waits.sorted(), succeeded: state.succeeded, rejected: state.rejected,
        started: state.started, otherFailures: state.otherFailures)
    }
  }

  private func service(_ level: WorkQueue.Priority) -> AsyncFunc<Int, Int> {
    AsyncFunc(name: "service") { n, _, complete in
      let now = self.clock.now
      self.state.withLock { state in
        state.waits.append(state.arrivals[n]!.duration(to: now))
        state.started[level, default: 0] += 1
      }
      _ = self.clock.scheduleTimer(at: now + self.latency) { complete(.success(n)) }
    }
  }
}

/// CoDel on a simulated service: capacity 20 calls of 10 ms each, 2,000 calls a second.
@Suite struct CoDelTests {
  static let target = Duration.milliseconds(5)
  static let interval = Duration.milliseconds(100)

  private func simulation() -> CoDelSimulation {
    CoDelSimulation(
      concurrency: 20, latency: .milliseconds(10),
      queue: .codel(target: Self.target, interval: Self.interval))
  }

  @Test func below_capacity_nothing_is_turned_away_and_nobody_waits() {
    let simulation = simulation()
    // Half the capacity, evenly: ten in flight at most.
    let report = simulation.run(arrivals: 4_000, every: .milliseconds(1)) { _ in .normal }
    #expect(report.rejected.isEmpty && report.otherFailures == 0)
    #expect(report.waits.count == 4_000)
    #expect(report.waits.last == .zero)
    #expect(simulation.limiter.gate.counts.admitted == 0)
  }

  @Test func bursts_below_capacity_wait_their_turn_and_none_is_turned_away() {
    // Forty at once every 40 ms: half the capacity, in bursts of twice the concurrency. Half
    // of each burst waits a whole call, longer than twice the target, but the queue empties.
    let clock = TestClock()
    let limiter = Limiter(
      concurrency: 20, queue: .codel(target: Self.target, interval: Self.interval), clock: clock)
    let call = AsyncFunc<Int, Int>(name: "call") { n, _, complete in
      _ = clock.scheduleTimer(at: clock.now + .milliseconds(10)) { complete(.success(n)) }
    }.limited(by: limiter)
    let outcomes = Recorder<Result<Int, any Error>>()
    for burst in 0..<100 {
      for n in 0..<40 { call.run(burst * 40 + n) { outcomes.record($0) } }
      clock.advance(by: .milliseconds(40))
    }
    #expect(outcomes.count == 4_000)
    #expect(outcomes.all.allSatisfy { (try? $0.get()) != nil })
  }

  @Test func at_twice_the_capacity_waits_stay_near_the_target() {
    let simulation = simulation()
    // 4,000 calls a second for 5 seconds, all of one priority.
    let report = simulation.run(arrivals: 20_000, every: .microseconds(250)) { _ in .normal }
    let p50 = report.percentile(0.5)
    let p99 = report.percentile(0.99)
    print("codel, one priority at 2x: p50 \(p50), p99 \(p99), admitted \(report.waits.count)")
    #expect(report.otherFailures == 0)
    #expect(p99 <= Self.target + Self.interval)
    #expect(p50 <= Self.target * 2)
    // The service is kept busy: about its capacity is admitted.
    #expect(report.waits.count >= 9_000)
    #expect((report.rejected[.normal] ?? 0) >= 9_000)
    #expect(simulation.limiter.gate.counts.admitted == 0)
    #expect(simulation.limiter.gate.counts.waiting == 0)
  }

  @Test func at_twice_the_capacity_high_runs_succeed_and_low_runs_are_shed_first() {
    let simulation = simulation()
    // One in five is `.high`: 0.4 of the capacity; the rest `.low`: 1.6 of it.
    let report = simulation.run(arrivals: 20_000, every: .microseconds(250)) { n in
      n % 5 == 0 ? .high : .low
    }
    let high = 4_000
    let highSucceeded = report.succeeded[.high] ?? 0
    let lowRejected = report.rejected[.low] ?? 0
    let p99 = report.percentile(0.99)
    print(
      "codel, high and low at 2x: high \(highSucceeded)/\(high) succeeded, low \(lowRejected) "
        + "shed, p50 \(report.percentile(0.5)), p99 \(p99)")
    #expect(report.otherFailures == 0)
    #expect(Double(highSucceeded) >= 0.99 * Double(high))
    #expect(lowRejected >= 8_000)
    #expect((report.rejected[.high] ?? 0) * 100 <= lowRejected)
    #expect(p99 <= Self.target + Self.interval)
    #expect(simulation.limiter.gate.counts.admitted == 0)
  }
}

/// Cancellations racing hand-overs and evictions, on many threads.
@Suite struct LimiterSheddingStressTests {
  @Test(
    .timeLimit(.minutes(1)),
    arguments: [
      QueueLimit.unbounded, .count(40),
      .codel(target: .milliseconds(1), interval: .milliseconds(5)),
    ]
  )
  func cancelled_waiters_never_run_and_no_slot_is_leaked(queue: QueueLimit) async {
    let limit = 3
    let runs = 3_000
    let limiter = Limiter(concurrency: limit, queue: queue)
    let holding = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    let lateStarts = Tally()
    let settled = Countdown(runs)
    let settlements = Locked<[Int: Int]>([:])
    let kinds = Locked<[String: Int]>([:])
    let cancelReturned = Locked<Set<Int>>([])
    let completer = DispatchQueue(label: "completer")
    let canceller = DispatchQueue(label: "canceller")
    let body = AsyncFunc<Int, Int>(name: "body") { n, token, complete in
      // A start decided before the cancel began may come after it; none may after it
      // returned and see its own token uncancelled.
      if cancelReturned.withLock({ $0.contains(n) }) && !token.isCancelled { lateStarts.add() }
      let now = holding.add(1, ordering: .relaxed).newValue
      peak.max(now, ordering: .relaxed)
      // Half end in place, handing their slot over on the thread that starts runs; half end
      // on a thread of their own (a serial queue is not starved by the starting threads).
      guard n.isMultiple(of: 2) else {
        return completer.async {
          holding.subtract(1, ordering: .relaxed)
          complete(.success(n))
        }
      }
      holding.subtract(1, ordering: .relaxed)
      complete(.success(n))
    }
    let priorities: [WorkQueue.Priority] = [.low, .normal, .high]
    let functions = priorities.map { body.limited(by: limiter, priority: $0) }
    let tokens = Locked<[CancellationToken]>([])
    // Off the cooperative pool: `concurrentPerform` waits for its workers.
    DispatchQueue.global().async {
      DispatchQueue.concurrentPerform(iterations: runs) { n in
        let token = functions[n % 3].run(n) { result in
          let kind =
            switch result {
            case .success: "succeeded"
            case .failure(let error) where error is LimitExceeded: "turned away"
            case .failure: "cancelled"
            }
          kinds.withLock { $0[kind, default: 0] += 1 }
          settlements.withLock { $0[n, default: 0] += 1 }
          settled.tick()
        }
        tokens.withLock { $0.append(token) }
        // Every other run is cancelled from another thread, racing the slots handed over.
        guard n % 2 == 1 else { return }
        canceller.async {
          token.cancel()
          cancelReturned.withLock { _ = $0.insert(n) }
        }
      }
    }
    await settled.wait()
    await withCheckedContinuation { continuation in
      limiter.gate.whenIdle { continuation.resume() }
    }
    print("\(queue): \(kinds.withLock { $0 })")
    let counts = settlements.withLock { $0 }
    #expect(counts.count == runs && counts.values.allSatisfy { $0 == 1 })
    #expect(lateStarts.value == 0)
    #expect(peak.load(ordering: .relaxed) <= limit)
    let (admitted, waiting, _, _) = limiter.gate.counts
    #expect(admitted == 0 && waiting == 0)
    #expect(tokens.withLock { $0.allSatisfy { $0.registrationCount == 0 } })
  }
}

/// The CoDel rule on a gate with no run around it, on a `TestClock`.
@Suite struct CoDelRuleTests {
  typealias Waiter = LimitTests.TestWaiter

  @Test func a_priority_sheds_once_its_last_short_wait_is_an_interval_ago() {
    let clock = TestClock()
    let gate = Admission<Waiter>(
      capacity: 1, queue: .codel(target: .milliseconds(5), interval: .milliseconds(100)),
      clock: AdmissionClock(clock))
    let rejected = Recorder<Int>()
    let started = Recorder<Int>()
    func enter(_ index: Int, priority: Int = 0) {
      let waiter = Waiter(
        on: CancellationToken(), rejected: { _ in rejected.record(index) },
        admitted: { started.record(index) })
      gate.enter(waiter, input: (), priority: priority)
    }
    enter(0)  // holds the slot
    enter(1)  // makes the lane: its queue was empty until now
    clock.advance(by: .milliseconds(99))
    enter(2)
    #expect(rejected.all.isEmpty)  // 1 has waited long, but not an interval of long waits
    clock.advance(by: .milliseconds(1))
    enter(3)
    #expect(rejected.all == [1])  // 2 has waited 1 ms: within twice the target, it stays
    enter(4, priority: 1)  // another priority, with its own state
    clock.advance(by: .milliseconds(11))
    enter(5)
    // 2 and 3 have waited longer than twice the target: shed. 4 has too, but its priority
    // last saw a short wait as it came, 11 ms ago.
    #expect(rejected.all == [1, 2, 3])
    gate.leave()
    #expect(started.all == [0, 4])
    gate.leave()
    #expect(started.all == [0, 4, 5])
    gate.leave()
    #expect(gate.counts.admitted == 0 && gate.counts.waiting == 0)
  }
}
