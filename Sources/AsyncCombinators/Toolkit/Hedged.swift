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
  /// - Parameters:
  ///   - delay: How long to wait for a result before starting the next attempt; 0 or more.
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
    precondition(
      delay >= .zero, "hedged(after: \(delay)): the delay must not be negative", file: file,
      line: line)
    precondition(
      maxHedges >= 0, "hedged(maxHedges: \(maxHedges)): must not be negative", file: file,
      line: line)
    var call = "hedged(after: \(delay)"
    if maxHedges != 1 { call += ", maxHedges: \(maxHedges)" }
    call += ")"
    let inner = program
    let timers = TimerClock(clock)
    return AsyncFunc(modifying: inner, call: call) { [call] input, token, report in
      HedgedRun(
        inner, call: call, input: input, token: token, delay: delay, maxHedges: maxHedges,
        timers: timers, report: report
      ).start()
    }
  }
}

/// The attempts of one `hedged` run: each on a child token of the run's, so that the winner
/// can cancel the others; the wait for the next hedge on a child token too, so that an early
/// hedge (after a failure) or the end of the run takes the timer back.
private final class HedgedRun: StageSink {
  private struct State {
    /// Attempts started (or being started): the next one's number.
    var started = 0
    var decided = false
    var primaryError: (any Error)?
    /// Each started attempt's token, by number; `nil` once it ended.
    var attempts: [Child?] = []
    /// The pending wait for the next hedge.
    var timer: Child?
  }

  /// A child of the run's token, and its link to it.
  private struct Child {
    let token: CancellationToken
    let link: CancellationToken.Registration

    init(of parent: CancellationToken) {
      (token, link) = parent.makeChild()
    }
  }

  private let inner: Program
  private let call: String
  private let input: AnyValue
  private let token: CancellationToken
  private let delay: Duration
  private let maxHedges: Int
  private let timers: TimerClock
  private let report: StageReport
  private let state = Locked(State())

  init(
    _ inner: Program, call: String, input: AnyValue, token: CancellationToken,
    delay: Duration, maxHedges: Int, timers: TimerClock, report: StageReport
  ) {
    self.inner = inner
    self.call = call
    self.input = input
    self.token = token
    self.delay = delay
    self.maxHedges = maxHedges
    self.timers = timers
    self.report = report
  }

  func start() {
    if delay == .zero {
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
    let timer = delay > .zero ? Child(of: token) : nil
    // The wait for the next hedge replaces any pending one (after a failure, this hedge came
    // early), unless this is the last attempt; claimed in the same step as the number, so
    // that the latest attempt's wait is the one kept.
    let claimed = state.withLock { state -> (number: Int, next: Child?, superseded: Child?)? in
      guard !state.decided, state.started <= maxHedges else { return nil }
      if let expected, expected != state.started { return nil }
      let number = state.started
      state.started += 1
      state.attempts.append(attempt)
      let next = number < maxHedges ? timer : nil
      defer { state.timer = next }
      return (number, next, state.timer)
    }
    guard let (number, next, superseded) = claimed else {
      attempt.link.remove()
      timer?.link.remove()
      return false
    }
    if next == nil { timer?.link.remove() }
    // Its own fire, now or at its end, removes its link.
    superseded?.token.cancel()
    if number > 0, let observer = token.observer {
      observer.hedgeStarted(Program.modified(inner, call), hedge: number)
    }
    if let next {
      timers.after(delay, next.token) { expired in
        next.link.remove()
        if expired { self.launch(ifNext: number + 1) }
      }
    }
    inner.start(input, token: attempt.token, sink: self, branch: number)
    return true
  }

  func stageSucceeded(_ value: consuming AnyValue, branch: Int) {
    guard let losers = decide(ended: branch) else { return }
    for loser in losers { loser.cancel() }
    report.succeed(value)
  }

  func stageFailed(_ error: any Error, branch: Int) {
    if error is CancellationError || token.isCancelled {
      guard let others = decide(ended: branch) else { return }
      for other in others { other.cancel() }
      return report.fail(CancellationError())
    }
    enum Next {
      case nothing
      case hedge
      case fail(any Error)
    }
    let (ended, next) = state.withLock { state -> (Child?, Next) in
      if branch == 0 { state.primaryError = error }
      let ended = state.attempts[branch]
      state.attempts[branch] = nil
      guard !state.decided else { return (ended, .nothing) }
      if state.started <= maxHedges { return (ended, .hedge) }
      guard state.attempts.allSatisfy({ $0 == nil }), let primary = state.primaryError else {
        return (ended, .nothing)
      }
      state.decided = true
      return (ended, .fail(primary))
    }
    ended?.link.remove()
    switch next {
    case .nothing: return
    case .hedge: launch(ifNext: nil)
    case .fail(let primary): report.fail(primary)
    }
  }

  /// Ends attempt `branch` and decides the run, unless it was decided already. Returns the
  /// tokens to cancel: the other attempts' and the pending timer's; `nil` when already decided.
  private func decide(ended branch: Int) -> [CancellationToken]? {
    let (ended, others) = state.withLock { state -> (Child?, [CancellationToken]?) in
      let ended = state.attempts[branch]
      state.attempts[branch] = nil
      guard !state.decided else { return (ended, nil) }
      state.decided = true
      var others = state.attempts.compactMap { $0?.token }
      if let timer = state.timer { others.append(timer.token) }
      state.timer = nil
      return (ended, others)
    }
    ended?.link.remove()
    return others
  }
}
