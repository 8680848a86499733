import AsyncCombinatorsKernel

/// One gate that many functions share: at most so much work in flight at once, or at most so
/// many starts per period, across every function limited by it.
///
/// Make one limiter per backend and limit each function that calls that backend with
/// ``AsyncFunc/limited(by:weight:priority:file:line:)``. Runs wait highest priority first, in
/// arrival order within a priority; a run whose weight does not fit waits, and the runs behind
/// it wait too, so a large weight is never starved. No thread is blocked while a run waits,
/// and cancelling a waiting run takes it out of the queue at once. The ``QueueLimit`` decides
/// when a run is rejected with ``LimitExceeded`` instead of waiting, and which: the lowest
/// priority first.
/// A limiter made with ``init(adaptive:queue:isDrop:clock:)`` finds its concurrency itself,
/// from the latency and the drops of its runs (<doc:AdaptiveLimits>).
///
/// ```swift
/// let backend = Limiter(concurrency: 2)
/// let search = AsyncFunc<String, String>.sync(name: "search") { "found \($0)" }
/// let lookup = AsyncFunc<String, String>.sync(name: "lookup") { "saw \($0)" }
/// print(search.limited(by: backend))
/// print(try await lookup.limited(by: backend, weight: 2)("x"))
/// // prints search.limited(by: Limiter(concurrency: 2, queue: unbounded))
/// // prints saw x
/// ```
public final class Limiter: Sendable, CustomStringConvertible {
  let gate: Admission<LimitedRun>
  /// The most weight one run may take.
  let largestWeight: Int
  /// For an adaptive limiter, what its runs report their starts and ends to; `nil` otherwise.
  let sampler: AdaptiveSampler?
  /// `Limiter(concurrency: 8, queue: unbounded)`.
  public let description: String

  /// The concurrency a run is admitted under now: fixed for
  /// ``init(concurrency:queue:clock:file:line:)``, moving for
  /// ``init(adaptive:queue:isDrop:clock:)``; `Int.max` for a limiter of starts per period; the
  /// lowest of its limiters' for a chain, ``init(all:file:line:)``.
  ///
  /// ```swift
  /// print(Limiter(concurrency: 3).limit)
  /// print(Limiter(adaptive: .aimd(initial: 5)).limit)
  /// // prints 3
  /// // prints 5
  /// ```
  public var limit: Int {
    gate.members.isEmpty ? gate.capacity : gate.members.lazy.map(\.capacity).min()!
  }

  /// A limiter of work in flight: at most `concurrency` weight at once.
  ///
  /// - Precondition: `concurrency` is at least 1; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - concurrency: The most weight in flight at once; at least 1.
  ///   - queue: How many runs may wait, and for how long.
  ///   - clock: The clock a ``QueueLimit/wait(_:file:line:)`` limit counts on.
  ///   - file: The caller's file, named when `concurrency` is out of range.
  ///   - line: The caller's line, named when `concurrency` is out of range.
  public init<C: Clock>(
    concurrency: Int, queue: QueueLimit = .unbounded, clock: C = ContinuousClock(),
    file: StaticString = #fileID, line: UInt = #line
  ) where C.Duration == Duration {
    require(
      concurrency >= 1, "Limiter(concurrency: \(concurrency)): the concurrency must be at least 1",
      file: file, line: line)
    var timed: AdmissionClock?
    if queue.needsClock { timed = AdmissionClock(clock) }
    gate = Admission(capacity: concurrency, queue: queue, clock: timed)
    largestWeight = concurrency
    sampler = nil
    description = "Limiter(concurrency: \(concurrency), queue: \(queue))"
  }

  /// A limiter of starts per period: a run takes its weight in permits when it starts.
  ///
  /// - Parameters:
  ///   - rate: How many permits per period, and how they come back.
  ///   - queue: How many runs may wait, and for how long.
  ///   - clock: The clock the rate and a ``QueueLimit/wait(_:file:line:)`` limit count on.
  public init<C: Clock>(
    rate: RateLimit, queue: QueueLimit = .unbounded, clock: C = ContinuousClock()
  ) where C.Duration == Duration {
    gate = Admission(
      capacity: .max, queue: queue, rate: RateBudget(rate), clock: AdmissionClock(clock))
    largestWeight = rate.largestWeight
    sampler = nil
    description = "Limiter(rate: \(rate), queue: \(queue))"
  }

  /// A limiter of work in flight whose limit follows the latency and the drops of its runs.
  ///
  /// Each run that reaches a function limited by it is a sample (see ``AdaptiveLimit``): its
  /// latency from start to result on `clock`, whether `isDrop` holds for its error, and the
  /// weight in flight when it started. A cancelled run is no sample. When the limit falls, the
  /// runs in flight go on and nobody starts until they are under it. A ``RunObserver`` of the
  /// run whose sample moved the limit sees the move,
  /// ``RunEvent/Kind/limitChanged``.
  ///
  /// Put a `timeout` inside the limited function, not around it: a run that times out inside
  /// is a drop; one cancelled from outside is no sample.
  ///
  /// ```swift
  /// let backend = Limiter(adaptive: .vegas(initial: 10, min: 2, max: 50))
  /// let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 * 2 }
  /// print(try await fetch.limited(by: backend)(21))
  /// print(backend.limit)
  /// // prints 42
  /// // prints 3
  /// ```
  ///
  /// (The first sample starts a probe of the latency without load: the limit is pinned low
  /// until a few runs have come back under it.)
  ///
  /// - Parameters:
  ///   - adaptive: The algorithm and the bounds of the limit. A run's weight must not be above
  ///     the limit's `min`.
  ///   - queue: How many runs may wait, and for how long.
  ///   - isDrop: Whether a run's error says the service is overloaded: by default a
  ///     ``TimeoutError`` or a ``LimitExceeded``.
  ///   - clock: The clock latencies and a ``QueueLimit/wait(_:file:line:)`` limit count on.
  public convenience init<C: Clock>(
    adaptive: AdaptiveLimit, queue: QueueLimit = .unbounded,
    isDrop: @escaping @Sendable (any Error) -> Bool = {
      $0 is TimeoutError || $0 is LimitExceeded
    },
    clock: C = ContinuousClock()
  ) where C.Duration == Duration {
    let timed = AdmissionClock(clock)
    var waits: AdmissionClock?
    if case .wait = queue.kind { waits = timed }
    let gate = Admission<LimitedRun>(capacity: adaptive.initial, queue: queue, clock: waits)
    let sampler = AdaptiveSampler(adaptive, gate: gate, isDrop: isDrop, elapsed: timed.elapsed)
    self.init(
      gate: gate, largestWeight: adaptive.min,
      description: "Limiter(adaptive: \(adaptive), queue: \(queue))", sampler: sampler)
    sampler.limiter = self
  }

  init(
    gate: Admission<LimitedRun>, largestWeight: Int, description: String,
    sampler: AdaptiveSampler? = nil
  ) {
    self.gate = gate
    self.largestWeight = largestWeight
    self.sampler = sampler
    self.description = description
  }
}

extension AsyncFunc {
  /// Runs this function through `limiter`, which every function limited by it shares.
  ///
  /// A run takes `weight` of the limiter's concurrency, or `weight` permits of its rate, when
  /// it starts. A concurrency slot is held until every callback body the run started has
  /// called back, as with ``limit(_:file:line:)``, even when the run was cancelled or timed
  /// out sooner. A run the limiter's queue limit rejects fails with ``LimitExceeded`` and
  /// starts nothing; a run cancelled while it waits fails with `CancellationError` at once.
  ///
  /// `priority` orders the waiting runs of one limiter and decides which are turned away first.
  /// Waiting runs start highest priority first, in arrival order within a priority. A
  /// ``QueueLimit`` turns away the lowest priority: past ``QueueLimit/count(_:file:line:)``,
  /// a newcomer of a higher priority than some waiter takes the place of the newest waiter of
  /// the lowest priority, which fails with ``LimitExceeded``, and a newcomer whose priority is
  /// no higher than any waiter's is the one turned away; ``QueueLimit/codel(target:interval:file:line:)``
  /// keeps one state per priority, so the lowest wait longest and are shed first.
  ///
  /// ```swift
  /// let backend = Limiter(concurrency: 4)
  /// let small = AsyncFunc<Int, Int>.sync(name: "small") { $0 + 1 }.limited(by: backend)
  /// let health = AsyncFunc<Int, Int>.sync(name: "health") { $0 }
  ///   .limited(by: backend, priority: .high)
  /// print(try await small(1))
  /// print(health)
  /// // prints 2
  /// // prints health.limited(by: Limiter(concurrency: 4, queue: unbounded), priority: high)
  /// ```
  ///
  /// - Precondition: `weight` is from 1 to the limiter's largest weight: its concurrency, or its
  ///   rate's burst (a token bucket) or permits (a window); otherwise the program stops with a
  ///   message naming the caller's line.
  /// - Parameters:
  ///   - limiter: The shared limiter.
  ///   - weight: How much of the limiter a run takes; from 1 to the limiter's concurrency
  ///     (or its burst, for a rate).
  ///   - priority: Where its runs wait among the limiter's waiting runs, and which are turned
  ///     away first.
  ///   - file: The caller's file, named when `weight` is out of range.
  ///   - line: The caller's line, named when `weight` is out of range.
  /// - Returns: A function with the same input and output, limited.
  /// - Complexity: O(1) amortized per run to enter and leave the limiter; O(*p*) in the
  ///   priorities waiting for a run that waits.
  public func limited(
    by limiter: Limiter, weight: Int = 1, priority: WorkQueue.Priority = .normal,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc {
    require(
      weight >= 1 && weight <= limiter.largestWeight,
      "limited(by:weight: \(weight)): the weight must be from 1 to \(limiter.largestWeight)",
      file: file, line: line)
    var call = "limited(by: \(limiter)"
    if weight != 1 { call += ", weight: \(weight)" }
    if priority != .normal { call += ", priority: \(priority)" }
    call += ")"
    let function = LimitedFunction(
      limiter.gate, program, weight: weight, priority: priority.value,
      sampler: limiter.sampler)
    return limitedStage(function, call: call)
  }
}
