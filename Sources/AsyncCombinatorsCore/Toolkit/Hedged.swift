import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Starts this function again on the same input when it is slow to answer, and takes the
  /// first success: a hedged request.
  ///
  /// The first attempt (the primary) starts at once; if no attempt has succeeded after
  /// `delay`, another starts, up to `maxHedges` more, each `delay` after the previous. An
  /// attempt that fails starts the next hedge at once, if any is left. The first success wins
  /// and every other attempt is cancelled; if all fail, the whole fails with the primary's
  /// error, whichever attempt failed first. `after: .zero` starts them all at once: a race of
  /// the function against itself. Cancellation is not a failure: an attempt that ends with
  /// `CancellationError`, or the run's cancellation, ends the whole with it at once and
  /// cancels the other attempts.
  ///
  /// Hedges spend the run's budget: no hedge starts at or after the deadline on `clock` set
  /// around the run (by a `timeout` or ``withTimeout(_:clock:file:line:operation:)``), and no wait for one
  /// begins that would end there. The attempts that lose are cancelled with a
  /// ``LostRaceError`` as their token's ``CancellationToken/cause``.
  ///
  /// Hedge only what is safe to do twice (a read, an idempotent write): a slow attempt is
  /// cancelled, not undone.
  ///
  /// ```swift
  /// let clock = TestClock()  // from AsyncCombinatorsTesting: time moves when the test says
  /// let stuck = ParkedCompletion<String>()  // holds a completion until the test calls it
  /// let calls = Counter()
  /// let lookup = AsyncFunc<String, String>(name: "lookup") { key, complete in
  ///   if calls.next() == 0 { return stuck.park(complete) }  // the primary hangs
  ///   complete(.success("\(key) from attempt \(calls.value)"))
  /// }
  /// let hedged = lookup.hedged(after: .milliseconds(50), clock: clock)
  /// print(hedged)
  /// hedged.run("user:7") { print($0) }
  /// clock.advance(by: .milliseconds(50))
  /// // prints lookup.hedged(after: 0.05 seconds)
  /// // prints success("user:7 from attempt 2")
  /// ```
  ///
  /// - Precondition: `delay` and `maxHedges` are not negative; otherwise the program stops with a
  ///   message naming the caller's line.
  /// - Parameters:
  ///   - delay: How long to wait for a result before starting the next attempt; 0 or more. A
  ///     century or more never comes: no hedge starts.
  ///   - maxHedges: How many attempts may start after the primary; 0 or more.
  ///   - clock: The clock the delay is measured on; `ContinuousClock()` unless given.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A function with the same input and output.
  /// - Complexity: At most `maxHedges + 1` runs of this function, and one timer at a time.
  public func hedged<C: Clock>(
    after delay: Duration, maxHedges: Int = 1, clock: C = ContinuousClock(),
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      delay >= .zero, "hedged(after: \(delay)): the delay must not be negative", file: file,
      line: line)
    require(
      maxHedges >= 0, "hedged(maxHedges: \(maxHedges)): must not be negative", file: file,
      line: line)
    var call = "hedged(after: \(delay)"
    if maxHedges != 1 { call += ", maxHedges: \(maxHedges)" }
    call += ")"
    let plan = HedgePlan(
      program, call: call, delay: delay, maxHedges: maxHedges, timers: TimerClock(clock))
    return AsyncFunc(modifying: program, call: call) { input, token, report in
      HedgedRun(plan, input: input, token: token, report: report).start()
    }
  }
}

/// What every run of one `hedged` function shares, in one object that each run holds, rather than
/// each of its fields (Performance.md, "What the code's shape buys, and the check that holds it").
private final class HedgePlan: Sendable {
  let inner: Program
  let call: String
  let delay: Duration
  let maxHedges: Int
  let timers: TimerClock

  init(_ inner: Program, call: String, delay: Duration, maxHedges: Int, timers: TimerClock) {
    self.inner = inner
    self.call = call
    self.delay = delay
    self.maxHedges = maxHedges
    self.timers = timers
  }
}

/// The attempts of one `hedged` run, each on a child token of the run's, so that the winner
/// can cancel the others; and the wait for the next hedge.
///
/// The wait is a ``HedgeWait``: a timer and a registration on the run's token, whose ends
/// race: the timer firing starts the next hedge, the run's cancellation takes the timer back,
/// and an early hedge (after a failure) or the end of the run takes both back. The first to
/// end the wait acts; the others find it ended.
private final class HedgedRun: StageParent {
  private struct State {
    /// Attempts started (or being started): the next one's number.
    var started = 0
    var primaryError: (any Error)?
    /// The run's deadline has come: no more hedges start.
    var pastDeadline = false
    /// The primary's token while it runs.
    var primary: Child?
    /// The hedges' tokens, by number from 1, each while it runs; empty until a hedge starts.
    var hedges: [Child?] = []
    /// The pending wait for the next hedge.
    var wait: HedgeWait?

    mutating func add(_ attempt: Child, number: Int) {
      if number == 0 { primary = attempt } else { hedges.append(attempt) }
    }

    /// Takes attempt `number` out: it has ended.
    mutating func end(_ number: Int) -> Child? {
      if number == 0 { return primary.take() }
      return hedges[number - 1].take()
    }

    var allEnded: Bool { primary == nil && hedges.allSatisfy { $0 == nil } }
  }

  /// A child of the run's token, and its link to it.
  private struct Child {
    let token: CancellationToken
    let link: CancellationToken.Registration

    init(of parent: CancellationToken) {
      (token, link) = parent.makeChild()
    }
  }

  private let plan: HedgePlan
  private let input: AnyValue
  private let token: CancellationToken
  private let report: ModifierReport
  private let state = Locked(State())
  /// Won by whichever of a success, a cancellation and the last failure decides the run;
  /// claimed and read under `state`'s lock, with the attempts it decides on.
  private let decided = Claim()

  init(_ plan: HedgePlan, input: AnyValue, token: CancellationToken, report: ModifierReport) {
    self.plan = plan
    self.input = input
    self.token = token
    self.report = report
  }

  func start() {
    if plan.delay == .zero {
      while launch(ifNext: nil) {}
    } else {
      launch(ifNext: 0)
    }
  }

  /// Starts the next attempt, if the run is undecided, attempts are left, and (when given) it
  /// is attempt number `expected`. Returns whether it started one.
  @discardableResult
  private func launch(ifNext expected: Int?) -> Bool {
    let attempt = Child(of: token)
    // No hedge at or after the run's deadline, and no wait for one that would end there.
    let left = plan.timers.timeLeft(on: token)
    let pastDeadline = left.map { $0 <= .zero } ?? false
    let waits = plan.delay > .zero && left.map { plan.delay < $0 } ?? true
    // The wait for the next hedge replaces any pending one (after a failure, this hedge came
    // early), unless this is the last attempt; claimed in the same step as the number, so
    // that the latest attempt's wait is the one kept.
    let claimed = state.withLock {
      state -> (number: Int, superseded: HedgeWait?, wait: HedgeWait?)? in
      guard !decided.isClaimed, state.started <= plan.maxHedges else { return nil }
      if let expected, expected != state.started { return nil }
      if pastDeadline { state.pastDeadline = true }
      guard state.started == 0 || !state.pastDeadline else { return nil }
      let number = state.started
      state.started += 1
      state.add(attempt, number: number)
      let superseded = state.wait
      state.wait = waits && number < plan.maxHedges ? HedgeWait(self, before: number + 1) : nil
      return (number, superseded, state.wait)
    }
    guard let (number, superseded, wait) = claimed else {
      attempt.link.remove()
      return false
    }
    superseded?.endAndRevoke()
    if number > 0, let observer = token.runObserver {
      observer.observe(.hedgeStarted(Program.modified(plan.inner, plan.call), hedge: number))
    }
    if let wait { arm(wait) }
    plan.inner.start(input, token: attempt.token, parent: self, tag: number)
    return true
  }

  /// Arms `wait`, which `launch` has just put in `state`; an end that came meanwhile (the
  /// run's cancellation, a newer wait, the run decided) takes back what is armed.
  private func arm(_ wait: HedgeWait) {
    let deadline = plan.timers.deadline(after: plan.delay)
    // Runs at once if the run is cancelled already. Each closure captures the wait alone.
    let registration = token.onCancel { wait.ended() }
    let timer = deadline.schedule { wait.ended() }
    wait.keep(ArmedTimer(timer: timer, registration: registration))
  }

  /// `wait` ended: its timer fired, or the run was cancelled. Acts only if it ended it first.
  fileprivate func waitEnded(_ wait: HedgeWait) {
    let ended = state.withLock { state -> ArmedTimer?? in
      guard let kept = wait.end() else { return nil }
      if state.wait === wait { state.wait = nil }
      return kept
    }
    guard let kept = ended else { return }
    if token.isCancelled {
      kept?.revoke()
      return
    }
    kept?.registration.remove()
    launch(ifNext: wait.next)
  }

  func childSucceeded(_ value: consuming AnyValue, tag number: Int) {
    guard decide(ended: number) else { return }
    report.succeed(value)
  }

  func childFailed(_ error: any Error, tag number: Int) {
    if error is CancellationError || token.isCancelled {
      guard decide(ended: number) else { return }
      return report.fail(CancellationError())
    }
    enum Next {
      case nothing
      case hedge
      case fail(any Error)
    }
    let pastDeadline = plan.timers.timeLeft(on: token).map { $0 <= .zero } ?? false
    let (ended, next) = state.withLock { state -> (Child?, Next) in
      if number == 0 { state.primaryError = error }
      if pastDeadline { state.pastDeadline = true }
      let ended = state.end(number)
      guard !decided.isClaimed else { return (ended, .nothing) }
      if state.started <= plan.maxHedges && !state.pastDeadline { return (ended, .hedge) }
      guard state.allEnded, let primary = state.primaryError, decided.claim() else {
        return (ended, .nothing)
      }
      return (ended, .fail(primary))
    }
    ended?.link.remove()
    switch next {
    case .nothing: return
    case .hedge: if !launch(ifNext: nil) { failIfAllEnded() }
    case .fail(let primary): report.fail(primary)
    }
  }

  /// The hedge after a failure did not start (the deadline came meanwhile): if every attempt
  /// has ended, the run fails with the primary's error.
  private func failIfAllEnded() {
    let ended = state.withLock { state -> (primary: any Error, wait: HedgeWait?)? in
      guard state.allEnded, let primary = state.primaryError, decided.claim() else { return nil }
      return (primary, state.wait.take())
    }
    guard let ended else { return }
    ended.wait?.endAndRevoke()
    report.fail(ended.primary)
  }

  /// Ends attempt `number` and decides the run, unless it was decided already: cancels the
  /// other attempts and takes the pending wait back. Returns whether it decided the run.
  private func decide(ended number: Int) -> Bool {
    let (ended, decided) = state.withLock { state -> (Child?, Decided?) in
      let ended = state.end(number)
      guard self.decided.claim() else { return (ended, nil) }
      // The others stay in `state` until they end, as each still reports.
      return (
        ended, Decided(primary: state.primary?.token, hedges: state.hedges, wait: state.wait.take())
      )
    }
    ended?.link.remove()
    guard let decided else { return false }
    decided.primary?.cancel(cause: LostRaceError())
    for hedge in decided.hedges { hedge?.token.cancel(cause: LostRaceError()) }
    decided.wait?.endAndRevoke()
    return true
  }

  /// What deciding the run leaves to do outside the lock.
  private struct Decided {
    let primary: CancellationToken?
    let hedges: [Child?]
    let wait: HedgeWait?
  }
}

/// The wait before hedge `next`: its timer and its registration on the run's token, kept once
/// both are made. Its first end acts (see ``HedgedRun/waitEnded(_:)``); the closures that the timer
/// and the token hold capture the wait alone: keep them so
/// (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// `@unchecked Sendable`: its fields are `let`s, and its ``Keeper`` is safe to share.
private final class HedgeWait: @unchecked Sendable {
  let next: Int
  private let run: HedgedRun
  private let keeper = Keeper<ArmedTimer>()

  init(_ run: HedgedRun, before next: Int) {
    self.run = run
    self.next = next
  }

  func ended() { run.waitEnded(self) }

  func keep(_ armed: ArmedTimer) { keeper.keep(armed) }
  func end() -> ArmedTimer?? { keeper.end() }
  @discardableResult func endAndRevoke() -> Bool { keeper.endAndRevoke() }
}
