import Dispatch
import Synchronization

/// One execution of a `Program`: an interpreter that walks the tree with an explicit stack.
///
/// A stage that completes on the thread that started it hands its value back through `phase`
/// and the loop goes on (a trampoline), so a million synchronous stages use one stack frame.
/// A stage that completes later, on any thread, resumes the loop on that thread.
///
/// Only the thread holding the baton touches `baton`. The baton passes from the
/// driving thread to a completing thread through the `phase` compare-exchange (acquire and
/// release), which is what makes the `@unchecked Sendable` below safe.
final class Run: @unchecked Sendable {
  private enum Frame {
    /// Run this program next.
    case program(Program)
    /// Run element `index` of a sequence next, then the ones after it.
    case sequence([Program], index: Int)
  }

  private enum Phase {
    /// A callback stage is running and has not completed.
    static let running: UInt8 = 0
    /// The starting thread returned first; the completing thread continues the loop.
    static let suspended: UInt8 = 1
    /// The stage completed before its body returned; the starting thread continues the loop.
    static let completedInline: UInt8 = 2
  }

  let token: CancellationToken
  private let finished = Atomic<Bool>(false)
  private let phase = Atomic<UInt8>(Phase.running)
  /// The state that travels with the baton. Behind a pointer rather than in `var`s because
  /// the baton protocol, not Swift's exclusivity checks, keeps its accesses apart, and those
  /// checks would cost more than the rest of a synchronous stage.
  private let baton: UnsafeMutablePointer<Baton>
  private let onFinish: @Sendable (AnyResult) -> Void
  private var cancelRegistration: CancellationToken.Registration?

  private struct Baton {
    /// Where the loop stands, parked here while a stage runs asynchronously.
    var parked = Position()
    /// A result passed from a completing thread to the driving one (`Phase.completedInline`).
    var handoff: AnyResult?
  }

  /// What remains to run after the current stage: the sequence being walked (kept out of the
  /// stack, so a flat fold costs one index increment per stage) and the frames outside it.
  private struct Position {
    var sequence: [Program] = []
    var index = 0
    var stack: [Frame] = []

    /// Makes the rest of the current sequence a frame, so `frame` can go in front of it.
    mutating func push(_ frame: Frame) {
      if index < sequence.count {
        stack.append(.sequence(sequence, index: index))
        sequence = []
        index = 0
      }
      stack.append(frame)
    }

    mutating func enter(_ programs: [Program]) -> Program? {
      guard let first = programs.first else { return nil }
      if index < sequence.count { stack.append(.sequence(sequence, index: index)) }
      sequence = programs
      index = 1
      return first
    }

    mutating func next() -> Program? {
      while true {
        if index < sequence.count {
          defer { index += 1 }
          return sequence[index]
        }
        switch stack.popLast() {
        case nil:
          return nil
        case .program(let program)?:
          return program
        case .sequence(let programs, let resumeAt)?:
          sequence = programs
          index = resumeAt
        }
      }
    }
  }

  /// - Parameters:
  ///   - ownsCancellation: Whether cancelling the token finishes this run at once. Branches of a
  ///     fork-join leave that to the join, which spares a registration per branch.
  init(
    token: CancellationToken, ownsCancellation: Bool,
    onFinish: @escaping @Sendable (AnyResult) -> Void
  ) {
    self.token = token
    self.onFinish = onFinish
    baton = .allocate(capacity: 1)
    baton.initialize(to: Baton())
    if ownsCancellation {
      // Strong on purpose: a weak reference would give every run a side table and slow each
      // retain. `finish` removes the registration, which breaks the cycle.
      cancelRegistration = token.onCancel { self.finish(.failure(CancellationError())) }
    }
  }

  deinit {
    baton.deinitialize(count: 1)
    baton.deallocate()
  }

  func start(_ program: Program, _ input: AnyValue) {
    drive(program, input, from: Position())
  }

  // MARK: The loop

  /// Runs stages until one suspends or the program ends. `position` is a local, not a
  /// property, so the hot loop pays no exclusivity checks; it is parked on suspension.
  private func drive(_ first: Program, _ input: AnyValue, from start: Position) {
    var position = start
    var node = first
    var value = input
    while true {
      switch node {
      case .serial(let first, let second):
        position.push(.program(second))
        node = first
        continue
      case .sequence(let programs):
        if let head = position.enter(programs) {
          node = head
          continue
        }
      case .direct(let stage):
        if token.isCancelled { return finish(.failure(CancellationError())) }
        let event = token.observer.flatMap { StageEvent.begin(stage.shape, $0) }
        do {
          value = try stage.body(value)
          event?.end(failed: false)
        } catch {
          event?.end(failed: true)
          return finish(.failure(error))
        }
      case .callback(let stage):
        if token.isCancelled { return finish(.failure(CancellationError())) }
        phase.store(Phase.running, ordering: .relaxed)
        swap(&baton.pointee.parked, &position)
        stage.body(value, token, StageCompletion(run: self, stage: stage))
        if phase.compareExchange(
          expected: Phase.running, desired: Phase.suspended, ordering: .acquiringAndReleasing
        ).exchanged {
          return  // The completion, whenever it comes, resumes the loop from `parked`.
        }
        swap(&baton.pointee.parked, &position)
        switch baton.pointee.handoff.take()! {
        case .success(let next): value = next
        case .failure(let error): return finish(.failure(error))
        }
      }
      guard let next = position.next() else { return finish(.success(value)) }
      node = next
    }
  }

  /// Called exactly once per callback stage, by its `StageCompletion`.
  fileprivate func stageCompleted(_ result: AnyResult) {
    if finished.load(ordering: .acquiring) { return }  // Cancelled meanwhile: drop the value.
    baton.pointee.handoff = result
    if phase.compareExchange(
      expected: Phase.running, desired: Phase.completedInline, ordering: .acquiringAndReleasing
    ).exchanged {
      return  // The starting thread is still in `drive` and picks the result up.
    }
    baton.pointee.handoff = nil
    switch result {
    case .failure(let error):
      finish(.failure(error))
    case .success(let value):
      var position = Position()
      swap(&baton.pointee.parked, &position)
      guard let next = position.next() else { return finish(.success(value)) }
      drive(next, value, from: position)
    }
  }

  private func finish(_ result: AnyResult) {
    guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
    cancelRegistration?.remove()
    onFinish(result)
  }
}

/// The completion handed to one callback stage: it enforces exactly-once.
///
/// A second call is dropped and reported; a completion released uncalled fails the run with
/// ``ContractViolation`` (from `deinit`, so it costs nothing on the normal path).
@usableFromInline
final class StageCompletion: Sendable {
  private let run: Run
  private let stage: CallbackStage
  private let called = Atomic<Bool>(false)
  private let event: StageEvent?

  fileprivate init(run: Run, stage: CallbackStage) {
    self.run = run
    self.stage = stage
    self.event = run.token.observer.flatMap { StageEvent.begin(stage.shape, $0) }
  }

  @usableFromInline
  func complete(_ result: AnyResult) {
    if called.exchange(true, ordering: .acquiringAndReleasing) {
      ContractViolation.report(ContractViolation(.completionCalledTwice, stage.label))
      return
    }
    event?.end(failed: (try? result.get()) == nil)
    run.stageCompleted(result)
  }

  /// The typed completion that a stage body hands to user code.
  @inlinable
  func typed<Output: Sendable>(_: Output.Type = Output.self)
    -> @Sendable (Result<Output, any Error>) -> Void
  {
    { result in self.complete(result.map { $0 }) }
  }

  deinit {
    guard !called.load(ordering: .acquiring) else { return }
    // Off the releasing thread: it may be inside user code that holds its own locks.
    let run = run
    let violation = ContractViolation(.completionNeverCalled, stage.label)
    let event = event
    DispatchQueue.global().async {
      event?.end(failed: true)
      run.stageCompleted(.failure(violation))
    }
  }
}
