import Synchronization

/// What an adaptive limit learns from the runs it admits: each run's start, and its end with
/// its latency and error, from the run itself (``LimitedRun``). The limit that learns lives a
/// layer up; the kernel reports to it through this.
package protocol RunSampler: AnyObject, Sendable {
  /// A run of `weight` was admitted: when, and the weight in flight with it.
  func started(weight: Int) -> (at: Duration, inFlight: Int)
  /// A run admitted at `startedAt` with `inFlight` ended with `error` (`nil`: it succeeded), on
  /// `token`.
  func ended(
    weight: Int, startedAt: Duration, inFlight: Int, error: (any Error)?, cancelled: Bool,
    token: CancellationToken)
  /// A run's weight is back without a sample.
  func left(weight: Int)
}

/// What every run through one gate shares: the gate, the function it gates, and how a run
/// takes its slot.
package final class LimitedFunction: Sendable {
  package let gate: Admission<LimitedRun>
  package let inner: Program
  package let weight: Int
  package let priority: Int
  /// Deliver a run's result before its slot goes to the next run, as a line does; a limit
  /// frees the slot first, so that it limits this function, not what runs after it.
  package let deliversFirst: Bool
  /// Count each run's outcome in the gate as its slot is given back, as a work queue does.
  package let countsOutcomes: Bool
  /// An adaptive limiter's sampling, which each run reports its start and end to.
  package let sampler: (any RunSampler)?

  package init(
    _ gate: Admission<LimitedRun>, _ inner: Program, weight: Int = 1, priority: Int = 0,
    deliversFirst: Bool = false, countsOutcomes: Bool = false, sampler: (any RunSampler)? = nil
  ) {
    self.gate = gate
    self.inner = inner
    self.weight = weight
    self.priority = priority
    self.deliversFirst = deliversFirst
    self.countsOutcomes = countsOutcomes
    self.sampler = sampler
  }
  /// One run enters the gate. A gate whose queue limit can turn a run away at once is asked
  /// first, so that a rejected run builds nothing but its error; any other gate takes the
  /// run's waiter in one step.
  package func enter(_ input: AnyValue, token: CancellationToken, report: ModifierReport) {
    if gate.queueLimit.rejectsAtOnce {
      switch gate.attempt(weight: weight, priority: priority) {
      case .admitted: return LimitedRun(self, token, report).admitted(input)
      case .rejected(let retryAfter): return report.fail(LimitExceeded(retryAfter: retryAfter))
      case .waits: break
      }
    }
    gate.enter(LimitedRun(self, token, report), input: input, weight: weight, priority: priority)
  }
}

/// One run through a gate (`limit`, `serialized`, a `Limiter`, a `WorkQueue`), from the gate
/// to the end of its bodies: the waiter in the gate's queue, the count of its bodies in flight
/// (which frees its slot when quiet), and where its inner function reports: one object plays all
/// three parts, and lives in this module, beside the admission core
/// (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// `@unchecked Sendable`: `place` is guarded by the gate's lock. Admission and turning away
/// happen once and exclusively (the gate decides under its lock); `holdsSlot` is written only
/// there, before the inner run starts, and read once its bodies are done. `succeeded` is
/// written once, when the inner function reports and before this run's own hold leaves the
/// count, and read once the count is quiet (the count's atomic orders the two). `inner` is set
/// at `init` and let go once the count is quiet, after which nothing reads it. `sampled` is
/// written at admission, before the inner run starts, and taken when it reports or when the
/// count is quiet, which come after; the two do not overlap, as for `succeeded`.
package final class LimitedRun: InFlightWork, StageParent, AdmissionWaiter, @unchecked Sendable {
  private let count: InFlightCount
  private let function: LimitedFunction
  private let report: ModifierReport
  package let waitsOn: CancellationToken
  package var place = AdmissionPlace<LimitedRun>()
  private var holdsSlot = false
  /// How the inner function ended; written once, before the count can go quiet.
  private var succeeded: Bool?
  /// The token the inner function runs on, a child of the run's that counts in this run, and
  /// its link to the run's token. Let go when quiet: the token holds this run as its count.
  private var inner: (child: CancellationToken, link: CancellationToken.Registration)?
  /// For an adaptive limiter: when the run started and the weight then in flight; `nil` once
  /// its end is reported.
  private var sampled: (at: Duration, inFlight: Int)?

  package init(_ function: LimitedFunction, _ token: CancellationToken, _ report: ModifierReport) {
    self.function = function
    self.report = report
    waitsOn = token
    // The slot is held until every body this run started has called back, even when the
    // run itself is over sooner: cancelled, timed out, beaten in a race.
    count = InFlightCount(within: token.inFlight)
    inner = token.makeChild(countingIn: self)
  }

  package func admitted(_ input: AnyValue) {
    holdsSlot = true
    if let sampler = function.sampler { sampled = sampler.started(weight: function.weight) }
    function.inner.start(input, token: inner!.child, parent: self)
  }

  /// Reports the cancellation, so that whatever counts this run (an enclosing limit's slot, a
  /// nested run) hears of its end; the run itself has ended with it already.
  package func turnedAway() {
    report.fail(CancellationError())
    leave()
  }

  /// The queue limit sent it away: it fails with the rejection and started nothing.
  package func rejected(_ error: LimitExceeded) {
    inner?.link.remove()
    report.fail(error)
    leave()
  }

  package func enter() -> Bool { count.enter() }

  package func leave() {
    guard count.leave() else { return }
    becameQuiet()
    count.leaveEnclosing()
  }

  /// Called once, on the thread whose ``leave()`` brings the count to zero.
  private func becameQuiet() {
    inner = nil
    guard holdsSlot else { return }
    // Its body gave no result: its weight is back all the same.
    if let sampler = function.sampler, sampled.take() != nil {
      sampler.left(weight: function.weight)
    }
    function.gate.leave(
      weight: function.weight, succeeded: function.countsOutcomes ? succeeded : nil)
  }

  package func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    succeeded = true
    if let sampler = function.sampler { sample(sampler, error: nil) }
    guard function.deliversFirst else {
      release()
      return report.succeed(value)
    }
    inner?.link.remove()
    report.succeed(value)
    leave()
  }

  package func childFailed(_ error: any Error, tag _: Int) {
    succeeded = false
    if let sampler = function.sampler { sample(sampler, error: error) }
    guard function.deliversFirst else {
      release()
      return report.fail(error)
    }
    inner?.link.remove()
    report.fail(error)
    leave()
  }

  /// Reports the run's end to its adaptive limiter, before its slot goes to the next run, so
  /// that a limit it lowers holds for that run.
  private func sample(_ sampler: any RunSampler, error: (any Error)?) {
    guard let (at, inFlight) = sampled.take() else { return }
    sampler.ended(
      weight: function.weight, startedAt: at, inFlight: inFlight, error: error,
      cancelled: error is CancellationError || waitsOn.isCancelled, token: waitsOn)
  }

  /// First, so that the slot limits this function, not what runs after it. The run's token
  /// forwards its cancellation here no more: that handler held this object, and this object
  /// the token, until now.
  private func release() {
    inner?.link.remove()
    leave()
  }
}
