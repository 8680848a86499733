/// A synchronous step that a modifier adds to the end of a callback stage, in place of a
/// stage of its own: it sees the stage's outcome before the stage's sink does.
///
/// `f.recover { … }`, `f.settled()`, `f.tap { … }`, `f.finally { … }` and `f.retry(n)` of a
/// single callback stage are that stage with a step more, so a run of them costs the stage's
/// own completion and nothing else: no sink object per run, no second count of work in flight,
/// no second report. The steps are built once, with the function; running them allocates
/// nothing. (`f.on(q)` is fused too, as the stage's `performer`: its completion makes the hop.)
@usableFromInline
enum OutcomeStep: Sendable {
  /// `recover`: a failure other than cancellation goes through the transform.
  case recover(@Sendable (any Error) throws -> AnyValue)
  /// `settled`: every outcome but cancellation becomes a value, boxed as a typed `Result` by
  /// closures made where the output type is known.
  case settle(
    success: @Sendable (AnyValue) -> AnyValue, failure: @Sendable (any Error) -> AnyValue)
  /// `tap`: the body sees the input and the outcome on its way through.
  case tap(@Sendable (AnyValue, AnyResult) -> Void)
  /// `finally` with a synchronous cleanup: it runs with the input unless the run is cancelled.
  case finally(DirectStage)
  /// `retry`: a failure worth another attempt hands the rest of the run to a `RetryLoop`.
  /// The first attempt, the one that usually succeeds, costs nothing more.
  case retry(FusedRetry)

  /// Whether the step needs the stage's input and token, which its completion then keeps.
  var needsContext: Bool {
    switch self {
    case .recover, .settle: false
    case .tap, .finally, .retry: true
    }
  }
}

/// What a fused `retry` step holds: its policy, and `attempt`, the stage with the steps before
/// this one, which the `RetryLoop` runs until an attempt succeeds or the policy gives up. A
/// class, so that the step is one reference: a policy inline made every step as large as it,
/// and every step's copy a call into the runtime.
@usableFromInline
final class FusedRetry: Sendable {
  let policy: RetryPolicy
  let attempt: CallbackStage

  @usableFromInline
  init(_ policy: RetryPolicy, attempt: CallbackStage) {
    self.policy = policy
    self.attempt = attempt
  }
}

/// A stage's outcome on its way through the steps: one of `value` and `error` is set. Apart
/// rather than as a `Result`, whose tag the runtime would be asked for at every step.
struct StepOutcome {
  var value: AnyValue?
  var error: (any Error)?

  mutating func report(to sink: any StageSink, branch: Int) {
    if let error { return sink.stageFailed(error, branch: branch) }
    sink.stageSucceeded(value.take()!, branch: branch)
  }

  /// Failed with `error`, unless it failed already: the first failure is the outcome.
  mutating func failUnlessFailed(_ error: any Error) {
    guard self.error == nil else { return }
    value = nil
    self.error = error
  }
}

extension CallbackStage {
  /// This stage with `step` after the ones it has, described as `shape` (the modifier's call
  /// on this stage). Its label, and so its timeline event and its contract reports, stay the
  /// stage's own.
  @usableFromInline
  func adding(_ step: OutcomeStep, shape: Shape) -> CallbackStage {
    CallbackStage(
      shape: self.shape, label: label, steps: steps + [step], performer: performer,
      described: shape, body: body)
  }

  /// This stage started on `performer`, described as `shape`; `nil` if it has a performer
  /// already (the outer hop would come first, which one field cannot say).
  func starting(on performer: some BlockPerformer, shape: Shape) -> CallbackStage? {
    guard self.performer == nil else { return nil }
    return CallbackStage(
      shape: self.shape, label: label, steps: steps, performer: performer, described: shape,
      body: body)
  }
}

extension [OutcomeStep] {
  /// Takes `outcome` through the steps, in the order the modifiers were applied.
  ///
  /// - Parameters:
  ///   - input: The stage's input, read only by a step that needs it (the completion keeps it
  ///     whenever one does): behind a pointer, so that the steps that need nothing copy nothing.
  ///   - token: The stage's token, kept whenever a step needs it.
  /// - Returns: What a `retry` step hands over instead of an outcome to report, if it does.
  func apply(
    to outcome: inout StepOutcome, input: UnsafePointer<AnyValue>, token: CancellationToken?
  ) -> RetryHandOver? {
    // By index: `enumerated()` copied each step through the runtime's value witnesses.
    for index in indices {
      switch self[index] {
      case .recover(let transform):
        guard let failure = outcome.error, !(failure is CancellationError) else { continue }
        do {
          outcome.value = try transform(failure)
          outcome.error = nil
        } catch {
          outcome.error = error
        }
      case .settle(let success, let failure):
        if let error = outcome.error {
          guard !(error is CancellationError) else { continue }
          outcome.value = failure(error)
          outcome.error = nil
        } else {
          outcome.value = success(outcome.value.take()!)
        }
      case .tap(let observe):
        if let error = outcome.error {
          observe(input.pointee, .failure(error))
        } else {
          observe(input.pointee, .success(outcome.value!))
        }
      case .finally(let cleanup):
        let token = token!
        // A cancelled run is over: the cleanup does not start.
        guard !token.isCancelled else {
          outcome.failUnlessFailed(CancellationError())
          continue
        }
        var event: StageEvent?
        if let observer = token.observer { event = StageEvent.begin(cleanup.shape, observer) }
        do {
          _ = try cleanup.body(input.pointee)
          event?.end(.succeeded)
        } catch {
          event?.end(StageOutcome(error))
          // The stage's own failure wins over the cleanup's.
          outcome.failUnlessFailed(error)
        }
      case .retry(let retry):
        guard let error = outcome.error else { continue }
        let failure = Result<AnyValue, any Error>.failure(error)
        switch retry.policy.step(after: failure, attempt: 1, isCancelled: token!.isCancelled) {
        case .finish(let result):
          if case .failure(let error) = result { outcome.error = error }
        case .retry(after: let wait):
          return RetryHandOver(
            policy: retry.policy, attempt: retry.attempt, after: Array(self[(index + 1)...]),
            wait: wait)
        }
      }
    }
    return nil
  }
}

extension [OutcomeStep] {
  /// Takes `outcome` through the steps, gives back the count the stage was in (the steps run
  /// within it, as the modifiers' own stages did), then reports where the steps led, or starts
  /// the retries a `retry` step handed the run to.
  ///
  /// - Parameters:
  ///   - input: As for ``apply(to:input:token:)``; set whenever a step needs it.
  ///   - token: Set whenever a step needs it.
  func finish(
    _ outcome: consuming StepOutcome, input: UnsafePointer<AnyValue>, token: CancellationToken?,
    counted: InFlightWork?, sink: any StageSink, branch: Int
  ) {
    var outcome = outcome
    let handOver = apply(to: &outcome, input: input, token: token)
    counted?.leave()
    if let handOver {
      return handOver.start(input: input.pointee, token: token!, sink: sink, branch: branch)
    }
    outcome.report(to: sink, branch: branch)
  }
}

/// The rest of a run whose first attempt failed in a fused `retry` step: the attempts left,
/// then the steps after the retry.
struct RetryHandOver {
  let policy: RetryPolicy
  let attempt: CallbackStage
  let after: [OutcomeStep]
  let wait: Duration

  /// Starts the retries, which report to `sink` as the first attempt's completion would have.
  func start(input: AnyValue, token: CancellationToken, sink: any StageSink, branch: Int) {
    RetryLoop(
      .callback(attempt), input: input, token: token, policy: policy,
      report: StageReport(sink: sink, branch: branch, counted: nil), after: after,
      attemptsMade: 1
    ).retry(after: wait)
  }
}
