import Synchronization

/// Runs several programs on one input at once and joins their results exactly once.
///
/// The branches share a child token: the first failure (or the parent's cancellation) marks
/// the join done under the lock, cancels every branch, and completes the stage; whatever the
/// branches deliver afterwards is ignored. Because the join reacts to cancellation itself,
/// the branch runs need no cancellation registration of their own. A branch that is a single
/// callback stage (the common case) is started directly, without a `Run` around it.
final class ForkJoin: StageSink {
  private struct State {
    /// Each branch's value, by branch index, until all have arrived.
    var slots: [AnyValue?]
    var remaining: Int
    /// Set once, by whichever of success, failure or cancellation completes the join.
    var isDone = false
  }

  private let state: Locked<State>
  private let branches: CancellationToken
  private let link: CancellationToken.Registration
  private let completion: StageCompletion
  private let assemble: @Sendable ([AnyValue?]) -> AnyValue

  private init(
    count: Int, branches: CancellationToken, link: CancellationToken.Registration,
    completion: StageCompletion, assemble: @escaping @Sendable ([AnyValue?]) -> AnyValue
  ) {
    state = Locked(State(slots: Array(repeating: nil, count: count), remaining: count))
    self.branches = branches
    self.link = link
    self.completion = completion
    self.assemble = assemble
  }

  /// A callback stage that forks `programs` and completes with `assemble` of their values,
  /// in branch order (every element is non-`nil` by then).
  static func stage(
    _ programs: [Program], label: Label,
    assemble: @escaping @Sendable ([AnyValue?]) -> AnyValue
  ) -> Program {
    .callback(
      CallbackStage(shape: .parallel(programs), label: label) { input, token, completion in
        start(programs, input: input, token: token, completion: completion, assemble: assemble)
      })
  }

  private static func start(
    _ programs: [Program], input: AnyValue, token: CancellationToken,
    completion: StageCompletion, assemble: @escaping @Sendable ([AnyValue?]) -> AnyValue
  ) {
    guard !programs.isEmpty else { return completion.complete(.success(assemble([]))) }
    let (branches, link) = token.makeChild()
    let join = ForkJoin(
      count: programs.count, branches: branches, link: link, completion: completion,
      assemble: assemble)
    branches.onCancel { join.fail(CancellationError()) }
    for (index, program) in programs.enumerated() {
      if branches.isCancelled { break }  // A branch failed already: start no more.
      if case .callback(let stage) = program {
        let completion = StageCompletion(
          sink: join, branch: index, stage: stage, observer: branches.observer)
        stage.body(input, branches, completion)
      } else {
        Run(token: branches, ownsCancellation: false) { result in
          switch result {
          case .success(let value): join.stageSucceeded(value, branch: index)
          case .failure(let error): join.stageFailed(error, branch: index)
          }
        }.start(program, input)
      }
    }
  }

  func stageFailed(_ error: any Error, branch _: Int) {
    fail(error)
  }

  func stageSucceeded(_ value: AnyValue, branch index: Int) {
    let values = state.withLock { state -> [AnyValue?]? in
      guard !state.isDone else { return nil }
      state.slots[index] = value
      state.remaining -= 1
      guard state.remaining == 0 else { return nil }
      state.isDone = true
      defer { state.slots = [] }
      return state.slots
    }
    guard let values else { return }
    link.remove()
    completion.complete(.success(assemble(values)))
  }

  private func fail(_ error: any Error) {
    let isFirst = state.withLock { state in
      defer { state.isDone = true }
      return !state.isDone
    }
    guard isFirst else { return }
    link.remove()
    branches.cancel()
    completion.complete(.failure(error))
  }
}
