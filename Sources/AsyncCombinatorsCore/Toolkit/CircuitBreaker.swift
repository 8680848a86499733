import AsyncCombinatorsKernel
import Synchronization

/// Stops calling a service that keeps failing, for a while, so that it can recover and its
/// callers fail fast instead of waiting on it.
///
/// A breaker counts the outcomes of the functions it guards (``AsyncFunc/guarded(by:)``) and
/// moves between four states:
///
/// - ``State/closed``: runs pass. Outcomes of the last `samplingDuration` are counted; once
///   at least `minimumThroughput` have finished in that window and failures / finished is at
///   least `failureRatio`, the breaker opens. `CancellationError`, and errors for which
///   `isFailure` is false, count as nothing.
/// - ``State/open``: runs fail at once with ``BrokenCircuitError``, whose `retryAfter` is the
///   time left; the function is not called. After `breakDuration` the breaker is half-open.
/// - ``State/halfOpen``: exactly one run, the probe, reaches the function; the others fail
///   with ``BrokenCircuitError``, whose `retryAfter` is how long the probe has been out (at
///   least a twentieth of `breakDuration`, at most the time until a new probe may go), so
///   that they come back about when the probe ends. The probe's success closes the breaker with a fresh window;
///   its failure opens it for another `breakDuration`. A probe that is cancelled, or never
///   calls back, lets a new probe through one `breakDuration` after it started; a probe that
///   fails with an error that is not a failure lets the next run probe at once.
/// - ``State/isolated``: held open by ``isolate()`` until ``reset()``.
///
/// One breaker may guard many functions, from any thread: however many runs arrive at once,
/// no more than one probe is let through.
///
/// ```swift
/// let clock = TestClock()  // from AsyncCombinatorsTesting: time moves when the test says
/// let payments = CircuitBreaker(
///   name: "payments", failureRatio: 0.5, minimumThroughput: 2, breakDuration: .seconds(30),
///   clock: clock)
/// let charge = AsyncFunc<Int, Int>(name: "charge") { _, complete in
///   complete(.failure(NetworkError.offline))
/// }.guarded(by: payments)
/// for amount in [10, 20, 30] {
///   do { _ = try await charge(amount) } catch { print(error) }
/// }
/// print(payments.state)
/// // prints NetworkError.offline
/// // prints NetworkError.offline
/// // prints circuit breaker payments is open: retry after 30.0 seconds
/// // prints open
/// ```
public final class CircuitBreaker: Sendable, CustomStringConvertible {
  /// Where a breaker is in its cycle.
  public enum State: Sendable, Hashable {
    /// Runs pass, and their outcomes are counted.
    case closed
    /// Runs fail fast until the break is over.
    case open
    /// One run, the probe, tries the function; the others fail fast.
    case halfOpen
    /// Held open by ``CircuitBreaker/isolate()`` until ``CircuitBreaker/reset()``.
    case isolated
  }

  /// The breaker's name, for errors and descriptions.
  let name: String?
  let isFailure: @Sendable (any Error) -> Bool
  /// The time elapsed on the breaker's clock since it was made.
  private let now: @Sendable () -> Duration
  private let controller: Locked<BreakerController>
  /// The controller's generation while it is closed, ``notClosed`` otherwise: stored under
  /// the controller's lock whenever it may have changed, read without it, so that a closed
  /// breaker admits a run with one atomic load, and drops an outcome from an earlier window
  /// without the lock or the clock.
  private let closedGeneration = Atomic<UInt64>(0)
  private static let notClosed = UInt64.max

  /// Creates a closed breaker.
  ///
  /// - Precondition: `failureRatio` is in `(0, 1]`, `minimumThroughput` is 1 or more, and both
  ///   durations are more than zero; otherwise the program stops with a message naming the
  ///   argument and the caller's line.
  /// - Parameters:
  ///   - name: What errors and descriptions call the breaker.
  ///   - failureRatio: The share of failures, in `(0, 1]`, at which the breaker opens.
  ///   - minimumThroughput: How many outcomes the window must hold before the breaker may
  ///     open; 1 or more.
  ///   - samplingDuration: How far back outcomes are counted; more than zero. The window
  ///     moves in tenths of it: an outcome is forgotten between nine tenths of
  ///     `samplingDuration` and all of it after it was counted.
  ///   - breakDuration: How long the breaker stays open; more than zero.
  ///   - isFailure: Whether an error counts as a failure; an error it declines counts as
  ///     nothing.
  ///   - clock: The clock the durations are measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  public init<C: Clock>(
    name: String? = nil, failureRatio: Double = 0.1, minimumThroughput: Int = 100,
    samplingDuration: Duration = .seconds(30), breakDuration: Duration = .seconds(5),
    isFailure: @escaping @Sendable (any Error) -> Bool = { _ in true },
    clock: C = ContinuousClock(), file: StaticString = #fileID, line: UInt = #line
  ) where C.Duration == Duration {
    require(
      failureRatio > 0 && failureRatio <= 1,
      "CircuitBreaker(failureRatio: \(failureRatio)): must be in (0, 1]", file: file, line: line)
    require(
      minimumThroughput >= 1,
      "CircuitBreaker(minimumThroughput: \(minimumThroughput)): must be at least 1", file: file,
      line: line)
    require(
      samplingDuration > .zero,
      "CircuitBreaker(samplingDuration: \(samplingDuration)): must be more than zero", file: file,
      line: line)
    require(
      breakDuration > .zero,
      "CircuitBreaker(breakDuration: \(breakDuration)): must be more than zero", file: file,
      line: line)
    self.name = name
    self.isFailure = isFailure
    // The default clock read directly, not through the generic one, as every outcome reads it
    // (Performance.md, "What the code's shape buys, and the check that holds it").
    if let continuous = clock as? ContinuousClock {
      let origin = continuous.now
      now = { origin.duration(to: .now) }
    } else {
      let origin = clock.now
      now = { origin.duration(to: clock.now) }
    }
    controller = Locked(
      BreakerController(
        failureRatio: failureRatio, minimumThroughput: minimumThroughput,
        samplingDuration: samplingDuration, breakDuration: breakDuration))
  }

  /// The state now: an open breaker whose break is over reads as half-open.
  public var state: State {
    let time = now()
    return controller.withLock { $0.state(at: time) }
  }

  /// Holds the breaker open, whatever the outcomes, until ``reset()``.
  public func isolate() {
    changing { $0.isolate() }
  }

  /// Closes the breaker with a fresh window, whatever its state.
  public func reset() {
    changing { $0.reset() }
  }

  /// Runs `body` on the controller under its lock, then publishes whether it is closed.
  private func changing<Result>(_ body: (inout BreakerController) -> Result) -> Result {
    controller.withLock { controller in
      let result = body(&controller)
      closedGeneration.store(
        controller.closedGeneration ?? Self.notClosed, ordering: .releasing)
      return result
    }
  }

  /// `CircuitBreaker(payments, closed)`.
  public var description: String {
    "CircuitBreaker(\(name.map { "\($0), " } ?? "")\(state))"
  }

  /// What a guarded function's description calls the breaker.
  var label: String { name ?? "breaker" }

  /// Lets a run through, or turns it away with the error it fails with.
  func admit(observer: (any RunObserver)?) -> Result<BreakerTicket, BrokenCircuitError> {
    // Closed: nothing to decide, so neither the lock nor the clock.
    let generation = closedGeneration.load(ordering: .acquiring)
    if generation != Self.notClosed { return .success(.closed(generation: generation)) }
    let time = now()
    let (decision, change) = changing { $0.admit(at: time) }
    let admission = decision.mapError {
      BrokenCircuitError(breaker: name, retryAfter: $0.retryAfter, probing: $0.probing)
    }
    if let observer {
      if let change {
        observer.observe(.circuitBreakerChanged(self, from: change.from, to: change.to))
      }
      if case .failure(let error) = admission {
        observer.observe(.runRejected(by: self, error: error))
      }
    }
    return admission
  }

  /// Counts the outcome of a run it let through.
  func record(_ ticket: BreakerTicket, _ outcome: BreakerOutcome, observer: (any RunObserver)?) {
    if case .closed(let admitted) = ticket {
      // An outcome that counts as nothing, or belongs to a window since replaced (generations
      // only grow), changes nothing: it needs neither the lock nor the clock.
      guard outcome == .success || outcome == .failure,
        admitted == closedGeneration.load(ordering: .relaxed)
      else { return }
    }
    let time = now()
    let change = changing { $0.record(ticket, outcome, at: time) }
    if let observer, let change {
      observer.observe(.circuitBreakerChanged(self, from: change.from, to: change.to))
    }
  }
}

/// The error of a run that a ``CircuitBreaker`` turned away without calling its function.
///
/// Its ``retryAfter`` says when to try again, for a `retry` outside the guard: while the
/// breaker is open, the time left until it lets a probe through; while a probe is out, how
/// long that probe has been out (at least a twentieth of the break, at most the time until a
/// new probe may go), about when its outcome will be known; `nil` while the breaker is
/// isolated.
public struct BrokenCircuitError: RetryAfterHint, Sendable, CustomStringConvertible {
  /// The name of the breaker that turned the run away.
  public let breaker: String?
  /// When to try again: the break's time left while open, how long the probe has been out
  /// while half-open; `nil` while the breaker is isolated.
  public let retryAfter: Duration?
  /// Turned away while half-open, its probe out.
  var probing = false

  /// `circuit breaker payments is open: retry after 30.0 seconds`; `is half-open, probing:`
  /// while a probe is out.
  public var description: String {
    let who = breaker.map { "circuit breaker \($0)" } ?? "circuit breaker"
    guard let retryAfter else { return "\(who) is isolated" }
    return "\(who) is \(probing ? "half-open, probing" : "open"): retry after \(retryAfter)"
  }
}

extension AsyncFunc {
  /// Runs this function through `breaker`: while the breaker is open, runs fail at once with
  /// ``BrokenCircuitError`` and the function is not called; the outcomes of the runs it lets
  /// through are what it counts.
  ///
  /// ```swift
  /// let payments = CircuitBreaker(name: "payments")
  /// let charge = AsyncFunc<Int, Int>.sync(name: "charge") { $0 }
  /// print(charge.guarded(by: payments))
  /// // prints charge.guarded(by: payments)
  /// ```
  ///
  /// - Parameter breaker: The breaker; it may guard other functions too.
  /// - Returns: A function with the same input and output.
  /// - Complexity: O(1) per run: while the breaker is closed, one atomic load to admit it
  ///   and one update under the breaker's lock to count its outcome.
  public func guarded(by breaker: CircuitBreaker) -> AsyncFunc {
    let inner = program
    return AsyncFunc(modifying: inner, call: "guarded(by: \(breaker.label))") {
      input, token, report in
      switch breaker.admit(observer: token.runObserver) {
      case .failure(let error):
        report.fail(error)
      case .success(let ticket):
        inner.start(
          input, token: token,
          parent: BreakerSink(breaker: breaker, ticket: ticket, token: token, report: report))
      }
    }
  }
}

/// One guarded run: tells the breaker how it ended, then its stage.
private final class BreakerSink: StageParent {
  private let breaker: CircuitBreaker
  private let ticket: BreakerTicket
  private let token: CancellationToken
  private let report: ModifierReport

  init(
    breaker: CircuitBreaker, ticket: BreakerTicket, token: CancellationToken,
    report: ModifierReport
  ) {
    self.breaker = breaker
    self.ticket = ticket
    self.token = token
    self.report = report
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    breaker.record(ticket, .success, observer: token.runObserver)
    report.succeed(value)
  }

  func childFailed(_ error: any Error, tag _: Int) {
    let outcome: BreakerOutcome =
      if error is CancellationError || token.isCancelled {
        .cancelled
      } else if breaker.isFailure(error) {
        .failure
      } else {
        .notFailure
      }
    breaker.record(ticket, outcome, observer: token.runObserver)
    report.fail(error)
  }
}

/// How a guarded run ended, for its breaker.
enum BreakerOutcome {
  case success
  case failure
  /// An error the breaker's `isFailure` declines.
  case notFailure
  /// The run was cancelled: it says nothing about the service.
  case cancelled
}

/// Which admission a run's outcome belongs to: a run let through while closed, in one
/// window, or a probe. An outcome whose admission is no longer current counts as nothing.
enum BreakerTicket {
  case closed(generation: UInt64)
  case probe(UInt64)
}

/// Every state and transition of a ``CircuitBreaker``, kept under its lock. Times are
/// durations since the breaker was made, on its clock.
struct BreakerController {
  private enum Phase {
    /// Runs pass; their outcomes fill `window`.
    case closed
    /// Runs fail fast until `until`; the first run after it is the probe.
    case open(until: Duration)
    /// Probe `probe` is out (none when `nil`); if it has not called back by `nextProbe`, the
    /// next run is a new probe.
    case halfOpen(probe: UInt64?, nextProbe: Duration)
    /// Held open until `reset()`.
    case isolated
  }

  struct Change {
    let from: CircuitBreaker.State
    let to: CircuitBreaker.State
  }

  /// Why a run was turned away.
  struct Rejection: Error {
    let retryAfter: Duration?
    var probing = false
  }

  let failureRatio: Double
  let minimumThroughput: Int
  let samplingDuration: Duration
  let breakDuration: Duration
  private var phase = Phase.closed
  /// The outcomes counted while closed; replaced whenever the breaker closes.
  private var window: HealthWindow
  /// Changes at every close and every probe, so that late outcomes of earlier admissions
  /// count as nothing.
  private var generation: UInt64 = 0

  init(
    failureRatio: Double, minimumThroughput: Int, samplingDuration: Duration,
    breakDuration: Duration
  ) {
    self.failureRatio = failureRatio
    self.minimumThroughput = minimumThroughput
    self.samplingDuration = samplingDuration
    self.breakDuration = breakDuration
    window = HealthWindow(sampling: samplingDuration)
  }

  /// The generation while closed; `nil` in any other phase.
  var closedGeneration: UInt64? {
    guard case .closed = phase else { return nil }
    return generation
  }

  func state(at now: Duration) -> CircuitBreaker.State {
    switch phase {
    case .closed: .closed
    case .open(let until): now < until ? .open : .halfOpen
    case .halfOpen: .halfOpen
    case .isolated: .isolated
    }
  }

  /// Lets a run through, or says how long until one may pass.
  mutating func admit(at now: Duration) -> (Result<BreakerTicket, Rejection>, Change?) {
    switch phase {
    case .closed:
      return (.success(.closed(generation: generation)), nil)
    case .isolated:
      return (.failure(Rejection(retryAfter: nil)), nil)
    case .open(let until):
      guard now >= until else { return (.failure(Rejection(retryAfter: until - now)), nil) }
      return (.success(probe(at: now)), Change(from: .open, to: .halfOpen))
    case .halfOpen(let probe, let nextProbe):
      guard probe == nil || now >= nextProbe else {
        let wait = probeWait(at: now, nextProbe: nextProbe)
        return (.failure(Rejection(retryAfter: wait, probing: true)), nil)
      }
      return (.success(self.probe(at: now)), nil)
    }
  }

  /// How long a run turned away while a probe is out should wait: as long as the probe has
  /// been out, at least a twentieth of the break, at most until a new probe may go.
  ///
  /// A probe out for *t* is expected to take about *t* more, so callers come back about when
  /// it ends (within twice its time), checking at doubling intervals, a few times however
  /// long it takes; waiting for `nextProbe` would keep them away a whole break after a probe
  /// that closed the breaker at once.
  private func probeWait(at now: Duration, nextProbe: Duration) -> Duration {
    let out = now - (nextProbe - breakDuration)
    return min(max(out, breakDuration / 20), nextProbe - now)
  }

  private mutating func probe(at now: Duration) -> BreakerTicket {
    generation &+= 1
    phase = .halfOpen(probe: generation, nextProbe: now + breakDuration)
    return .probe(generation)
  }

  /// Counts how an admitted run ended.
  mutating func record(_ ticket: BreakerTicket, _ outcome: BreakerOutcome, at now: Duration)
    -> Change?
  {
    switch (ticket, phase) {
    case (.closed(let admitted), .closed) where admitted == generation:
      switch outcome {
      case .success: window.add(failed: false, at: now)
      case .failure: window.add(failed: true, at: now)
      case .notFailure, .cancelled: return nil
      }
      let (finished, failures) = window.totals
      guard finished >= minimumThroughput,
        Double(failures) >= failureRatio * Double(finished)
      else { return nil }
      open(at: now)
      return Change(from: .closed, to: .open)
    case (.probe(let admitted), .halfOpen(let probe?, let nextProbe)) where admitted == probe:
      switch outcome {
      case .success:
        reset()
        return Change(from: .halfOpen, to: .closed)
      case .failure:
        open(at: now)
        return Change(from: .halfOpen, to: .open)
      case .notFailure:
        phase = .halfOpen(probe: nil, nextProbe: nextProbe)
        return nil
      case .cancelled:
        return nil
      }
    default:
      return nil
    }
  }

  private mutating func open(at now: Duration) {
    generation &+= 1
    phase = .open(until: now + breakDuration)
  }

  mutating func isolate() {
    generation &+= 1
    phase = .isolated
  }

  mutating func reset() {
    generation &+= 1
    phase = .closed
    window = HealthWindow(sampling: samplingDuration)
  }
}

/// The outcomes of the last `samplingDuration`, in slices a tenth of it wide: a slice is
/// forgotten whole once `samplingDuration` has passed since it began.
struct HealthWindow {
  private struct Slice {
    let start: Duration
    var finished = 0
    var failures = 0
  }

  private let sampling: Duration
  private let sliceWidth: Duration
  /// Oldest first; at most eleven.
  private var slices: [Slice] = []
  /// The sums over `slices`.
  private(set) var totals = (finished: 0, failures: 0)

  init(sampling: Duration) {
    self.sampling = sampling
    sliceWidth = sampling / 10
  }

  mutating func add(failed: Bool, at now: Duration) {
    while let oldest = slices.first, now - oldest.start >= sampling {
      totals.finished -= oldest.finished
      totals.failures -= oldest.failures
      slices.removeFirst()
    }
    let failures = failed ? 1 : 0
    totals.finished += 1
    totals.failures += failures
    if let last = slices.indices.last, now - slices[last].start < sliceWidth {
      slices[last].finished += 1
      slices[last].failures += failures
    } else {
      slices.append(Slice(start: now, finished: 1, failures: failures))
    }
  }
}
