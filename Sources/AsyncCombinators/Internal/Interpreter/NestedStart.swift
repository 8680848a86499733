/// How a modifier runs the function it wraps: as part of its own stage, without a run of its
/// own when it can.
///
/// A wrapped function that is one callback stage (the common case: `fetch.retry(2)`) is
/// started directly, with a completion that reports to `sink`; a synchronous stage is called
/// in place. Anything larger gets a nested `Run`, which registers nothing on the token: the
/// run or join that started the modifier's stage delivers the cancellation itself. Either
/// way the modifier costs one small object per run, not a run, a registration and closures.
extension Program {
  @usableFromInline
  func start(_ input: AnyValue, token: CancellationToken, sink: some StageSink, branch: Int = 0) {
    switch self {
    case .callback(let stage):
      // Counted before the check, as `Run` does.
      let counted = token.inFlight.flatMap { $0.enter() ? $0 : nil }
      if token.isCancelled {
        counted?.leave()
        return sink.stageFailed(CancellationError(), branch: branch)
      }
      let completion = StageCompletion(
        sink: sink, branch: branch, stage: stage, token: token, counted: counted)
      stage.body(input, token, completion)
    case .modifier(let stage):
      let counted = token.inFlight.flatMap { $0.enter() ? $0 : nil }
      if token.isCancelled {
        counted?.leave()
        return sink.stageFailed(CancellationError(), branch: branch)
      }
      stage.body(input, token, StageReport(sink: sink, branch: branch, counted: counted))
    case .direct, .serial, .sequence:
      start(input, token: token, report: StageReport(sink: sink, branch: branch, counted: nil))
    }
  }

  /// Starts this program as the rest of a modifier's stage: it reports through `report`, and
  /// takes over the stage's count of work in flight rather than adding one of its own. A
  /// single callback stage then needs only its own completion, and a modifier inside it none.
  func start(_ input: AnyValue, token: CancellationToken, report: StageReport) {
    switch self {
    case .callback(let stage):
      if token.isCancelled { return report.fail(CancellationError()) }
      let completion = StageCompletion(
        sink: report.sink, branch: report.branch, stage: stage, token: token,
        counted: report.counted)
      stage.body(input, token, completion)
    case .modifier(let stage):
      if token.isCancelled { return report.fail(CancellationError()) }
      stage.body(input, token, report)
    case .direct(let stage):
      if token.isCancelled { return report.fail(CancellationError()) }
      var event: StageEvent?
      if let observer = token.observer { event = StageEvent.begin(stage.shape, observer) }
      let value: AnyValue
      do {
        value = try stage.body(input)
      } catch {
        event?.end(StageOutcome(error))
        return report.fail(error)
      }
      event?.end(.succeeded)
      report.succeed(value)
    case .serial, .sequence:
      Run(token: token, ownsCancellation: false) { result in report.complete(result) }
        .start(self, input)
    }
  }
}

/// How a library modifier's stage completes: it tells the run or join that started it
/// directly, and gives back the stage's count of work in flight.
///
/// A value, kept by the modifier's own sink object, in place of a `StageCompletion`: the
/// library's modifiers complete exactly once by construction, so they need no object to
/// enforce it, and a modifier inside a fold then costs one object per element, not two. A
/// modifier calls exactly one of these, exactly once.
@usableFromInline
struct StageReport: Sendable {
  let sink: any StageSink
  let branch: Int
  /// The count this stage entered when it started, if it runs within one.
  let counted: InFlightWork?

  @usableFromInline
  func succeed(_ value: consuming AnyValue) {
    counted?.leave()
    sink.stageSucceeded(value, branch: branch)
  }

  @usableFromInline
  func fail(_ error: any Error) {
    counted?.leave()
    sink.stageFailed(error, branch: branch)
  }

  func complete(_ result: AnyResult) {
    switch result {
    case .success(let value): succeed(value)
    case .failure(let error): fail(error)
    }
  }
}

extension StageCompletion: StageSink {
  @usableFromInline func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    succeed(value)
  }
  @usableFromInline func stageFailed(_ error: any Error, branch _: Int) { fail(error) }
}
