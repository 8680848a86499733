import Synchronization

/// Runs several programs on one input at once and joins their results exactly once.
///
/// The branches share a child token: the first failure (or the parent's cancellation) wins the
/// `isDone` flag, cancels every branch, and completes the stage; whatever the branches deliver
/// afterwards is ignored. Because the join reacts to cancellation itself, the branch runs need
/// no cancellation registration of their own. Each branch starts through `Program.start`, as a
/// modifier starts the function it wraps: a single stage directly, anything larger in a
/// nested `Run`.
///
/// The join takes no lock: each branch writes only its own slot, then counts down with a
/// releasing decrement; the branch that reaches zero has acquired every other branch's write.
/// That, the slots' own discipline (``WriteOnceSlots``), and `completion` being taken only by
/// the winner of `isDone`, are what make the `@unchecked Sendable` safe. `onBranchesCancelled`
/// is written once, before any branch starts, and read only by the success path, which happens
/// after every branch started.
@usableFromInline
package final class ForkJoin: StageParent, @unchecked Sendable {
  /// Each branch's value, by branch index, written when its branch delivers.
  private let slots: WriteOnceSlots<AnyValue>
  private let remaining: Atomic<Int>
  /// Won once, by whichever of success, failure or cancellation completes the join.
  private let isDone = Claim()
  private let branches: CancellationToken
  private let link: CancellationToken.Registration
  /// Taken by whichever of success, failure or cancellation wins `isDone`: a finished join
  /// then no longer holds the stage that enclosed it, so a deep nesting of joins finishing
  /// later is not freed one level inside the next.
  private var completion: CallbackCompletion?
  private let assemble: @Sendable (UnsafeBufferPointer<AnyValue>) -> AnyValue
  /// The join's own handler on `branches`, removed on success: it holds the join, and the
  /// join holds `branches`, so leaving it would keep both alive.
  private var onBranchesCancelled: CancellationToken.Registration?

  private init(
    count: Int, branches: CancellationToken, link: CancellationToken.Registration,
    completion: CallbackCompletion,
    assemble: @escaping @Sendable (UnsafeBufferPointer<AnyValue>) -> AnyValue
  ) {
    slots = WriteOnceSlots(count: count)
    remaining = Atomic(count)
    self.branches = branches
    self.link = link
    self.completion = completion
    self.assemble = assemble
  }

  /// A callback stage that forks `programs` and completes with `assemble` of their values,
  /// in branch order (every element is non-`nil` by then).
  ///
  /// Starting and joining go through the thread's ``Trampoline``, and the branches are freed
  /// through it, so a fork-join nested a hundred thousand deep uses a small stack, while a
  /// shallow one starts and joins at once, as it would on its own.
  @usableFromInline
  package static func stage(
    _ programs: [Program], label: Label, spelling: ParallelSpelling = .pairOperator,
    assemble: @escaping @Sendable (UnsafeBufferPointer<AnyValue>) -> AnyValue
  ) -> Program {
    let branches = Branches(programs)
    return .make(.parallel(branches, spelling), label: label) { input, token, completion in
      Trampoline.run {
        start(
          branches.programs, input: input, token: token, completion: completion,
          assemble: assemble)
      }
    }
  }

  private static func start(
    _ programs: [Program], input: AnyValue, token: CancellationToken,
    completion: CallbackCompletion,
    assemble: @escaping @Sendable (UnsafeBufferPointer<AnyValue>) -> AnyValue
  ) {
    guard !programs.isEmpty else {
      return completion.complete(.success(assemble(UnsafeBufferPointer(start: nil, count: 0))))
    }
    let (branches, link) = token.makeChild()
    let join = ForkJoin(
      count: programs.count, branches: branches, link: link, completion: completion,
      assemble: assemble)
    join.onBranchesCancelled = branches.onCancel { join.fail(CancellationError()) }
    for (index, program) in programs.enumerated() {
      if branches.isCancelled { break }  // A branch failed already: start no more.
      program.start(input, token: branches, parent: join, tag: index)
    }
  }

  @usableFromInline
  package func childFailed(_ error: any Error, tag _: Int) {
    fail(error)
  }

  @usableFromInline
  package func childSucceeded(_ value: consuming AnyValue, tag index: Int) {
    guard !isDone.isClaimed else { return }
    slots.store(value, at: index)
    guard remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0,
      isDone.claim()
    else { return }
    link.remove()
    onBranchesCancelled?.remove()
    let value = slots.withAllValues(assemble)
    let completion = completion.take()!
    Trampoline.run { completion.complete(.success(value)) }
  }

  private func fail(_ error: any Error) {
    guard isDone.claim() else { return }
    branches.cancel(cause: error)  // The branches read the failure that stopped them.
    link.remove()  // After: the run's `cancel()` meanwhile waits for the branches' handlers.
    let completion = completion.take()!
    Trampoline.run { completion.complete(.failure(error)) }
  }
}

/// A fork-join's branches, freed through the thread's ``Trampoline``: a branch that is itself
/// a fork-join is then freed after this one, not inside it.
///
/// `programs` is written only by `deinit`, when nothing else holds the object: that is what
/// makes the `@unchecked Sendable` safe.
@usableFromInline
package final class Branches: @unchecked Sendable {
  private(set) var programs: [Program]

  package init(_ programs: [Program]) { self.programs = programs }

  deinit {
    var taken: [Program] = []
    swap(&taken, &programs)
    Trampoline.release(consume taken)
  }
}
