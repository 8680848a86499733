/// A synchronous step that a modifier adds to the end of a callback stage, in place of a
/// stage of its own: it sees the stage's outcome before the stage's sink does.
///
/// `f.recover { … }` and `f.settled()` of a single callback stage are that stage with a step
/// more, so a run of them costs the stage's own completion and nothing else: no sink object
/// per run, no second count of work in flight, no second report. The steps are built once,
/// with the function; running them allocates nothing.
@usableFromInline
enum OutcomeStep: Sendable {
  /// `recover`: a failure other than cancellation goes through the transform.
  case recover(@Sendable (any Error) throws -> AnyValue)
  /// `settled`: every outcome but cancellation becomes a value, boxed as a typed `Result` by
  /// closures made where the output type is known.
  case settle(
    success: @Sendable (AnyValue) -> AnyValue, failure: @Sendable (any Error) -> AnyValue)
}

extension CallbackStage {
  /// This stage with `step` after the ones it has, described as `shape` (the modifier's call
  /// on this stage). Its label, and so its timeline event and its contract reports, stay the
  /// stage's own.
  @usableFromInline
  func adding(_ step: OutcomeStep, shape: Shape) -> CallbackStage {
    CallbackStage(
      shape: self.shape, label: label, steps: steps + [step], described: shape, body: body)
  }
}

extension [OutcomeStep] {
  /// Takes a success through the steps and reports where they lead.
  func deliver(_ value: consuming AnyValue, to sink: any StageSink, branch: Int) {
    deliver(value: value, error: nil, to: sink, branch: branch)
  }

  /// Takes a failure through the steps and reports where they lead.
  func deliver(_ error: any Error, to sink: any StageSink, branch: Int) {
    deliver(value: nil, error: error, to: sink, branch: branch)
  }

  /// One of `value` and `error` is set. Apart rather than as a `Result`, whose tag the
  /// runtime would be asked for at every step.
  private func deliver(
    value: consuming AnyValue?, error: (any Error)?, to sink: any StageSink, branch: Int
  ) {
    var value = value
    var error = error
    for step in self {
      switch step {
      case .recover(let transform):
        guard let failure = error, !(failure is CancellationError) else { continue }
        do {
          value = try transform(failure)
          error = nil
        } catch let thrown {
          error = thrown
        }
      case .settle(let success, let failure):
        if let thrown = error {
          guard !(thrown is CancellationError) else { continue }
          value = failure(thrown)
          error = nil
        } else {
          value = success(value.take()!)
        }
      }
    }
    if let error { return sink.stageFailed(error, branch: branch) }
    sink.stageSucceeded(value.take()!, branch: branch)
  }
}
