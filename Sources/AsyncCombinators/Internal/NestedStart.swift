/// How a modifier runs the function it wraps: as part of its own stage, without a run of its
/// own when it can.
///
/// A wrapped function that is one callback stage (the common case: `fetch.retry(2)`) is
/// started directly, with a completion that reports to `sink`; a synchronous stage is called
/// in place. Anything larger gets a nested `Run`, which registers nothing on the token: the
/// run or join that started the modifier's stage delivers the cancellation itself. Either
/// way the modifier costs one small object per run, not a run, a registration and closures.
extension Program {
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
    case .direct(let stage):
      if token.isCancelled { return sink.stageFailed(CancellationError(), branch: branch) }
      var event: StageEvent?
      if let observer = token.observer { event = StageEvent.begin(stage.shape, observer) }
      let value: AnyValue
      do {
        value = try stage.body(input)
      } catch {
        event?.end(StageOutcome(error))
        return sink.stageFailed(error, branch: branch)
      }
      event?.end(.succeeded)
      sink.stageSucceeded(value, branch: branch)
    case .serial, .sequence, .hop:
      Run(token: token, ownsCancellation: false) { result in
        switch result {
        case .success(let value): sink.stageSucceeded(value, branch: branch)
        case .failure(let error): sink.stageFailed(error, branch: branch)
        }
      }.start(self, input)
    }
  }
}

/// A modifier that passes the wrapped function's result straight on can use the modifier
/// stage's own completion as the sink.
extension StageCompletion: StageSink {
  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) { succeed(value) }
  func stageFailed(_ error: any Error, branch _: Int) { fail(error) }
}

extension AsyncFunc {
  /// A modifier's stage: `body` works on erased values and the stage's own completion, which
  /// spares the typed closures a public initializer wraps around every run.
  init(
    modifying inner: Program, call: String,
    body: @escaping @Sendable (AnyValue, CancellationToken, StageCompletion) -> Void
  ) {
    let label = Label(name: nil, fileID: #fileID, line: #line)
    self.init(
      program: .callback(CallbackStage(shape: .modified(inner, call), label: label, body: body)))
  }
}
