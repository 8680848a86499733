import Synchronization

/// Runs several programs on one input at once and joins their results exactly once.
///
/// The branches share a child token: the first failure (or the parent's cancellation) marks
/// the join done under the lock, cancels every branch, and completes the stage; whatever the
/// branches deliver afterwards is ignored. Because the join reacts to cancellation itself,
/// the branch runs need no cancellation registration of their own.
final class ForkJoin: Sendable {
  private struct State {
    /// Each branch's value, by branch index, until all have arrived.
    var slots: [AnyValue?]
    var remaining: Int
    /// Set once, by whichever of success, failure or cancellation completes the join.
    var isDone = false
    /// The branches token's handler that fails the join; it holds the join, so success must
    /// remove it or token and join keep each other (and the run's completion) alive.
    var onBranchesCancelled: CancellationToken.Registration?
  }

  private let state: Mutex<State>
  private let branches: CancellationToken
  private let link: CancellationToken.Registration
  private let completion: StageCompletion
  private let assemble: @Sendable ([AnyValue]) -> AnyValue

  private init(
    count: Int, branches: CancellationToken, link: CancellationToken.Registration,
    completion: StageCompletion, assemble: @escaping @Sendable ([AnyValue]) -> AnyValue
  ) {
    state = Mutex(State(slots: Array(repeating: nil, count: count), remaining: count))
    self.branches = branches
    self.link = link
    self.completion = completion
    self.assemble = assemble
  }

  /// A callback stage that forks `programs` and completes with `assemble` of their values,
  /// in branch order.
  static func stage(
    _ programs: [Program], label: Label,
    assemble: @escaping @Sendable ([AnyValue]) -> AnyValue
  ) -> Program {
    .callback(
      CallbackStage(shape: .parallel(programs), label: label) { input, token, completion in
        start(programs, input: input, token: token, completion: completion, assemble: assemble)
      })
  }

  private static func start(
    _ programs: [Program], input: AnyValue, token: CancellationToken,
    completion: StageCompletion, assemble: @escaping @Sendable ([AnyValue]) -> AnyValue
  ) {
    guard !programs.isEmpty else { return completion.complete(.success(assemble([]))) }
    let (branches, link) = token.makeChild()
    let join = ForkJoin(
      count: programs.count, branches: branches, link: link, completion: completion,
      assemble: assemble)
    join.keep(branches.onCancel { join.fail(CancellationError()) })
    for (index, program) in programs.enumerated() {
      if branches.isCancelled { break }  // A branch failed already: start no more.
      Run(token: branches, ownsCancellation: false) { join.deliver(index, $0) }
        .start(program, input)
    }
  }

  private func keep(_ registration: CancellationToken.Registration) {
    let isDone = state.withLock { state in
      if !state.isDone { state.onBranchesCancelled = registration }
      return state.isDone
    }
    if isDone { registration.remove() }
  }

  private func deliver(_ index: Int, _ result: AnyResult) {
    let value: AnyValue
    switch result {
    case .failure(let error): return fail(error)
    case .success(let success): value = success
    }
    let done = state.withLock { state -> ([AnyValue], CancellationToken.Registration?)? in
      guard !state.isDone else { return nil }
      state.slots[index] = value
      state.remaining -= 1
      guard state.remaining == 0 else { return nil }
      state.isDone = true
      defer { state.slots = [] }
      return (state.slots.map { $0! }, state.onBranchesCancelled.take())
    }
    guard let (values, onBranchesCancelled) = done else { return }
    onBranchesCancelled?.remove()
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
