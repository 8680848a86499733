/// One iteration of a ``ConcurrentMapSequence``: the state machine behind a lock, and the
/// code that carries out its effects outside the lock.
///
/// One task owns the source's iterator and pulls only when the machine grants room, so the
/// iterator never crosses threads and need not be `Sendable`. Elements run as interpreter
/// runs on one token, cancelled as a whole when the stream ends early; no task per element,
/// and no thread ever waits.
final class ConcurrentMapStorage<Base: AsyncSequence & Sendable>: Sendable
where Base.Element: Sendable {
  private let base: Base
  private let program: Program
  private let machine: Locked<ConcurrentMapStateMachine>
  /// Every element's run; cancelled when the stream ends before its source does.
  private let elements = CancellationToken()
  private let progress: (@Sendable (BatchProgress) -> Void)?

  init(
    base: Base, program: Program, limit: Int, ordered: Bool, tolerance: FailureTolerance,
    progress: (@Sendable (BatchProgress) -> Void)?
  ) {
    self.base = base
    self.program = program
    self.progress = progress
    machine = Locked(
      ConcurrentMapStateMachine(
        limit: limit, ordered: ordered, tolerance: tolerance, reportsProgress: progress != nil))
  }

  // MARK: The consumer

  func next() async throws -> AnyValue? {
    let (ready, effects) = machine.withLock { $0.takeReady() }
    if let ready {
      execute(effects)
      return try ready.get()
    }
    return try await withTaskCancellationHandler {
      try await withUnsafeThrowingContinuation { continuation in
        execute(machine.withLock { $0.consumerWaits(continuation) })
      }
    } onCancel: {
      consumerGone()
    }
  }

  /// The consumer's task was cancelled, or its iterator released.
  func consumerGone() {
    execute(machine.withLock { $0.consumerGone() })
  }

  // MARK: The pull task

  private func startPulling() {
    let task = Task { await self.pullLoop() }
    execute(machine.withLock { $0.pullTaskStarted(task) })
  }

  private func pullLoop() async {
    var iterator = base.makeAsyncIterator()
    while await mayPull() {
      let input: Base.Element?
      do {
        input = try await iterator.next()
      } catch {
        return execute(machine.withLock { $0.sourceFailed(error) })
      }
      guard let input else { return execute(machine.withLock { $0.sourceFinished() }) }
      guard let index = machine.withLock({ $0.pulledElement() }) else { continue }
      // The stream reacts to cancellation itself, so the runs need no registration.
      Run(token: elements, ownsCancellation: false) { result in
        self.execute(self.machine.withLock { $0.elementFinished(index, result) })
      }
      .start(program, input)
    }
  }

  private func mayPull() async -> Bool {
    if let decision = machine.withLock({ $0.requestPull() }) { return decision }
    return await withUnsafeContinuation { continuation in
      execute(machine.withLock { $0.pullWaits(continuation) })
    }
  }

  // MARK: Effects

  private func execute(_ effects: ConcurrentMapStateMachine.Effects) {
    if effects.cancelsElements { elements.cancel() }
    effects.cancelsPullTask?.cancel()
    if let (continuation, decision) = effects.resumesPull {
      continuation.resume(returning: decision)
    }
    if let (continuation, result) = effects.resumesConsumer { continuation.resume(with: result) }
    if effects.drainsReports { drainReports() }
    if effects.startsPullTask { startPulling() }
  }

  /// Delivers the queued reports one at a time, then whatever waited for the last of them.
  private func drainReports() {
    guard let progress else { return }
    while true {
      let (report, effects) = machine.withLock { $0.nextReport() }
      guard let report else { return execute(effects) }
      progress(report)
    }
  }
}
