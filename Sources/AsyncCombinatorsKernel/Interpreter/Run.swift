import Dispatch
import Synchronization

/// One execution of a `Program`: an interpreter that walks the tree with an explicit stack.
///
/// A stage that completes on the thread that started it, before its body returns, leaves its
/// value in `slot` and the loop goes on (a trampoline), so a million synchronous stages use one
/// stack frame. A stage that completes later, on any thread, resumes the loop on that thread.
///
/// Only the thread holding the baton touches `baton` and `slot`. The baton passes from the
/// driving thread to a completing thread through the `phase` compare-exchange (acquire and
/// release); a completion on the driving thread itself, recognised by `drivingThread`, needs no
/// handoff at all. That is what makes the `@unchecked Sendable` below safe.
@usableFromInline
package final class Run: StageParent, @unchecked Sendable {
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
    /// The stage succeeded before its body returned; the starting thread continues the loop
    /// with the value in `slot`.
    static let succeededInline: UInt8 = 2
    /// The stage failed before its body returned; the error is in `baton.failure`.
    static let failedInline: UInt8 = 3
  }

  package let token: CancellationToken
  private let finished = Atomic<Bool>(false)
  private let phase = Atomic<UInt8>(Phase.running)
  /// The thread inside a stage body right now, or 0. Only that thread can ever read its own
  /// identity here, so a relaxed load suffices to recognise an inline completion.
  private let drivingThread = Atomic<UInt>(0)
  // `baton` and `slot` travel with the baton: its protocol, not Swift's exclusivity checks,
  // keeps their accesses apart, so the checks are off for them (Performance.md says why).
  /// The loop's state while a stage runs.
  @exclusivity(unchecked) private var baton = Baton()
  /// Empty except between a stage succeeding and the loop taking its value out.
  @exclusivity(unchecked) private var slot: AnyValue?
  private let onFinish: @Sendable (AnyResult) -> Void
  private var cancelRegistration: CancellationToken.Registration?

  private struct Baton {
    /// Where the loop stands, parked here while a stage runs asynchronously.
    var parked = Position()
    /// The failure of a stage that failed before its body returned (`Phase.failedInline`).
    var failure: (any Error)?
    /// Set by a completion that ran on the driving thread inside the stage body.
    var completedInline = Phase.running
    /// The hop stage whose block is on its way to the performer, and the count it joined.
    var hop: (stage: HopStage, counted: (any InFlightWork)?)?
  }

  /// What remains to run after the current stage: the sequence being walked (kept out of the
  /// stack, so that a flat fold walks by index) and the frames outside it.
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
  ///     fork-join leave that to the join, which reacts for all of them.
  @usableFromInline
  package init(
    token: CancellationToken, ownsCancellation: Bool,
    onFinish: @escaping @Sendable (AnyResult) -> Void
  ) {
    self.token = token
    self.onFinish = onFinish
    if ownsCancellation {
      // Strong on purpose, and `finish` removes the registration, which breaks the cycle:
      // Performance.md, "What the code's shape buys, and the check that holds it".
      cancelRegistration = token.onCancel { self.finish(.failure(CancellationError())) }
    }
  }

  @usableFromInline
  package func start(_ program: Program, _ input: AnyValue) {
    drive(program, input, from: Position())
  }

  // MARK: The loop

  /// Runs stages until one suspends or the program ends. `position` is a local, not a
  /// property, so that the loop's accesses to it need no exclusivity checks; it is parked on
  /// suspension. Performance.md, "What the code's shape buys, and the check that holds it".
  ///
  /// `start` is consumed: a borrowed position would leave the caller's reference to its stack
  /// alive, and the loop's first pop would then copy the whole stack, once per resumption: a
  /// long chain would cost time quadratic in its length.
  private func drive(_ first: Program, _ input: AnyValue, from start: consuming Position) {
    var position = consume start
    var node = first
    var value = input
    /// The last stage's completion, kept for the next stage when nothing else holds it.
    var spare: CallbackCompletion?
    while true {
      // Consumed: each case owns its payload rather than retaining a copy, and every path
      // sets `node` again before the next turn.
      switch consume node {
      case .serial(let pair):
        position.push(.program(pair.second))
        node = pair.first
        continue
      case .sequence(let programs):
        if let head = position.enter(programs) {
          node = head
          continue
        }
      case .direct(let stage):
        if token.isCancelled { return finish(.failure(CancellationError())) }
        do {
          value = try stage.call(value, observedBy: token.observer)
        } catch {
          return finish(.failure(error))
        }
      case .callback(let stage):
        guard let start = token.beginStage() else { return finish(.failure(CancellationError())) }
        var completion: CallbackCompletion
        if let recycled = spare.take() {
          recycled.recycle(for: stage, token: token, counted: start.counted)
          completion = recycled
        } else {
          completion = CallbackCompletion(
            parent: self, tag: 0, stage: stage, token: token, counted: start.counted)
        }
        guard let outcome = call(parking: &position, { stage.body(value, token, completion) })
        else { return }  // The completion, whenever it comes, resumes the loop.
        // If the user's copy of the closure is gone too, reuse the object for the next stage.
        if isKnownUniquelyReferenced(&completion) && completion.isSettled { spare = completion }
        guard outcome == Phase.succeededInline else {
          return finish(.failure(baton.failure.take()!))
        }
        value = slot.take()!
      case .modifier(let stage):
        guard let start = token.beginStage() else { return finish(.failure(CancellationError())) }
        let report = ModifierReport(parent: self, tag: 0, counted: start.counted)
        guard let outcome = call(parking: &position, { stage.body(value, token, report) })
        else { return }
        guard outcome == Phase.succeededInline else {
          return finish(.failure(baton.failure.take()!))
        }
        value = slot.take()!
      case .hop(let stage):
        guard let start = token.beginStage() else { return finish(.failure(CancellationError())) }
        guard let outcome = hop(to: stage, value, counted: start.counted, parking: &position)
        else { return }  // The block goes on with the loop on the performer's thread.
        guard outcome == Phase.succeededInline else {
          return finish(.failure(baton.failure.take()!))
        }
        value = slot.take()!
      }
      guard let next = position.next() else { return finish(.success(value)) }
      node = next
    }
  }

  /// Calls a stage body that reports to this run, with `position` parked while it runs.
  ///
  /// Returns how the stage ended if it completed before its body returned, with `position`
  /// back; `nil` if it is still running, in which case its completion resumes the loop on
  /// whatever thread calls it, and the caller must touch the run no more.
  @inline(__always)
  private func call(parking position: inout Position, _ body: () -> Void) -> UInt8? {
    phase.store(Phase.running, ordering: .relaxed)
    baton.completedInline = Phase.running
    swap(&baton.parked, &position)
    drivingThread.store(currentThreadID(), ordering: .relaxed)
    body()
    drivingThread.store(0, ordering: .relaxed)
    var outcome = baton.completedInline
    if outcome == Phase.running {
      let (exchanged, original) = phase.compareExchange(
        expected: Phase.running, desired: Phase.suspended, ordering: .acquiringAndReleasing)
      if exchanged { return nil }
      outcome = original  // Another thread completed the stage before the body returned.
    }
    swap(&baton.parked, &position)
    return outcome
  }

  // MARK: Hops: the second way the loop moves to another thread

  /// Hands a hop stage's one block to its performer, with the loop parked in the baton and
  /// the input in `slot`: the block runs the body and goes on with the loop on the
  /// performer's thread, so what follows the hop runs there.
  ///
  /// A performer that runs the block before `perform` returns, on this thread, would nest one
  /// loop inside another per hop. Such a block finds this thread in `drivingThread`, leaves
  /// the outcome in the baton and marks `drivingThread` with `ranInline(on:)` instead; the
  /// loop here then goes on. No other thread can write that mark.
  ///
  /// - Returns: How the stage ended if its block ran inside `perform`, with `position` back;
  ///   `nil` if it runs elsewhere, in which case the caller must touch the run no more.
  @inline(__always)
  private func hop(
    to stage: HopStage, _ input: consuming AnyValue, counted: (any InFlightWork)?,
    parking position: inout Position
  ) -> UInt8? {
    swap(&baton.parked, &position)
    baton.hop = (stage, counted)
    slot = consume input
    let thread = currentThreadID()
    drivingThread.store(thread, ordering: .relaxed)
    // The block captures the run alone: everything else it needs travels in the baton.
    stage.performer.perform { self.hopArrived() }
    let (exchanged, original) = drivingThread.compareExchange(
      expected: thread, desired: 0, ordering: .relaxed)
    guard !exchanged, original == Self.ranInline(on: thread) else { return nil }
    drivingThread.store(0, ordering: .relaxed)
    swap(&baton.parked, &position)
    return baton.completedInline
  }

  /// A hop stage's block, on the performer's thread, holding the baton.
  private func hopArrived() {
    let (stage, counted) = baton.hop.take()!
    let input = slot.take()!
    let thread = currentThreadID()
    let inline = drivingThread.load(ordering: .relaxed) == thread
    // Cancelled while the block waited for its performer: the body never starts.
    if token.isCancelled {
      return hopFailed(CancellationError(), counted: counted, inline: inline, on: thread)
    }
    let value: AnyValue
    do {
      value = try stage.call(input, observedBy: token.observer)
    } catch {
      return hopFailed(error, counted: counted, inline: inline, on: thread)
    }
    counted?.leave()
    if inline {
      slot = consume value
      baton.completedInline = Phase.succeededInline
      return drivingThread.store(Self.ranInline(on: thread), ordering: .relaxed)
    }
    if finished.load(ordering: .acquiring) { return }  // Cancelled meanwhile: drop the value.
    var position = Position()
    swap(&baton.parked, &position)
    guard let next = position.next() else { return finish(.success(value)) }
    drive(next, value, from: consume position)
  }

  private func hopFailed(
    _ error: any Error, counted: (any InFlightWork)?, inline: Bool, on thread: UInt
  ) {
    counted?.leave()
    guard inline else { return finish(.failure(error)) }
    baton.failure = error
    baton.completedInline = Phase.failedInline
    drivingThread.store(Self.ranInline(on: thread), ordering: .relaxed)
  }

  /// What a hop's block leaves in `drivingThread` when it ran inside `perform` on `thread`:
  /// the thread's identity with its low bit set, which no thread's identity has (a thread
  /// is named by an aligned address), so no other thread's mark can be mistaken for it.
  @inline(__always)
  private static func ranInline(on thread: UInt) -> UInt { thread | 1 }

  // MARK: Completions

  /// Called once per stage of this run, by its `CallbackCompletion` or `ModifierReport`.
  @usableFromInline
  package func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    if finished.load(ordering: .acquiring) { return }  // Cancelled meanwhile: drop the value.
    slot = consume value
    if drivingThread.load(ordering: .relaxed) == currentThreadID() {
      baton.completedInline = Phase.succeededInline
      return
    }
    if phase.compareExchange(
      expected: Phase.running, desired: Phase.succeededInline, ordering: .acquiringAndReleasing
    ).exchanged {
      return  // The starting thread is still in `drive` and moves the value out of `slot`.
    }
    var position = Position()
    swap(&baton.parked, &position)
    guard let next = position.next() else { return finish(.success(slot.take()!)) }
    drive(next, slot.take()!, from: consume position)
  }

  /// Called once per stage of this run, by its `CallbackCompletion` or `ModifierReport`.
  @usableFromInline
  package func childFailed(_ error: any Error, tag _: Int) {
    if finished.load(ordering: .acquiring) { return }
    baton.failure = error
    if drivingThread.load(ordering: .relaxed) == currentThreadID() {
      baton.completedInline = Phase.failedInline
      return
    }
    if phase.compareExchange(
      expected: Phase.running, desired: Phase.failedInline, ordering: .acquiringAndReleasing
    ).exchanged {
      return
    }
    baton.failure = nil
    finish(.failure(error))
  }

  private func finish(_ result: AnyResult) {
    guard !finished.exchange(true, ordering: .acquiringAndReleasing) else { return }
    // A cancelled token has dropped its handlers already, and the thread running them may not
    // have seen `cancelRegistration` written: only a finish that is not a cancellation (on the
    // thread holding the baton, which did see it) reads it.
    if !token.hasRunItsHandlers { cancelRegistration?.remove() }
    // Once the token is cancelled the run's outcome is cancellation, whatever a stage delivered
    // meanwhile: that holds even while other handlers on the token are still running, before
    // this run's own handler has had its turn.
    if token.isCancelled, case .success = result {
      return onFinish(.failure(CancellationError()))
    } else if token.isCancelled, case .failure(let error) = result, !(error is CancellationError) {
      return onFinish(.failure(CancellationError()))
    }
    onFinish(result)
  }
}

/// The run, join or modifier that started a stage, and that the stage's completion (a
/// `CallbackCompletion` or a `ModifierReport`) calls with its outcome, once.
///
/// `tag` is the parent's own number for the child, chosen when it started it and handed back
/// unchanged: a fork-join's branch, a fold's element index, a hedge's attempt, `finally`'s
/// phase; 0 for a parent that starts one child at a time.
@usableFromInline
package protocol StageParent: AnyObject, Sendable {
  func childSucceeded(_ value: consuming AnyValue, tag: Int)
  func childFailed(_ error: any Error, tag: Int)
}

/// The completion handed to one callback stage: it enforces exactly-once.
///
/// A second call is dropped and reported; a completion released uncalled fails the run with
/// ``ContractViolation`` (from `deinit`: a completion that was called has nothing to do there).
///
/// `stage`, `traced` and `counted` are reassigned only when the driving loop
/// recycles the object for the next stage, which it does only while it holds the sole reference
/// (`isKnownUniquelyReferenced` after the stage completed inline): no other thread can then be
/// reading them. That is what makes the `@unchecked Sendable` safe; `called` is atomic.
@usableFromInline
package final class CallbackCompletion: @unchecked Sendable {
  private let parent: any StageParent
  /// The parent's number for this stage (see `StageParent`); 0 for a stage of a `Run`.
  private let tag: Int
  fileprivate var stage: CallbackStage
  private let called = Atomic<Bool>(false)
  /// The count of bodies in flight this stage was counted in, left when it calls back or is
  /// released uncalled.
  private var counted: (any InFlightWork)?
  /// While traced: the stage's event, and the handler that ends it when the run is cancelled.
  private var traced: TracedStage?

  /// - Parameter counted: The count of bodies in flight that has already counted this stage.
  package init(
    parent: any StageParent, tag: Int, stage: CallbackStage, token: CancellationToken,
    counted: (any InFlightWork)?
  ) {
    self.parent = parent
    self.tag = tag
    self.stage = stage
    self.counted = counted
    if token.observer != nil { traced = TracedStage.begin(stage, token) }
  }

  /// Readies a completion whose previous stage completed and whose closure is gone.
  fileprivate func recycle(
    for stage: CallbackStage, token: CancellationToken, counted: (any InFlightWork)?
  ) {
    self.stage = stage
    self.counted = counted
    if token.observer != nil { traced = TracedStage.begin(stage, token) }
    called.store(false, ordering: .relaxed)
  }

  /// Whether the stage has completed, read by the loop once it holds the only reference and
  /// before it recycles the object. The acquire pairs with the release in `claim()`'s report
  /// of a second call, which reads `stage`: a caller that reported is ordered before the
  /// recycling that rewrites it, on any memory model and in ThreadSanitizer's eyes, not only
  /// through the reference count.
  fileprivate var isSettled: Bool { called.load(ordering: .acquiring) }

  private func claim() -> Bool {
    guard !called.exchange(true, ordering: .acquiringAndReleasing) else {
      ContractViolation.report(ContractViolation(.completionCalledTwice, stage.label))
      called.store(true, ordering: .releasing)  // Done reading `stage`; see `isSettled`.
      return false
    }
    return true
  }

  @usableFromInline
  package func succeed(_ value: consuming AnyValue) {
    guard claim() else { return }
    traced.take()?.end(.succeeded)
    counted?.leave()
    parent.childSucceeded(value, tag: tag)
  }

  @usableFromInline
  package func fail(_ error: any Error) {
    guard claim() else { return }
    traced.take()?.end(StageOutcome(error))
    counted?.leave()
    parent.childFailed(error, tag: tag)
  }

  package func complete(_ result: AnyResult) {
    switch result {
    case .success(let value): succeed(value)
    case .failure(let error): fail(error)
    }
  }

  /// The typed completion that a stage body hands to user code.
  @inlinable
  package func typed<Output: Sendable>(_: Output.Type = Output.self)
    -> @Sendable (Result<Output, any Error>) -> Void
  {
    { result in
      switch result {
      case .success(let value): self.succeed(value)
      case .failure(let error): self.fail(error)
      }
    }
  }

  deinit {
    guard !called.load(ordering: .acquiring) else { return }
    // Off the releasing thread: it may be inside user code that holds its own locks.
    let (parent, tag) = (parent, tag)
    let violation = ContractViolation(.completionNeverCalled, stage.label)
    let (traced, counted) = (traced, counted)
    traced?.stopWatching()
    DispatchQueue.global().async {
      traced?.end(.failed)
      // Released uncalled, the body is over as far as any limit is concerned; leaving the
      // count may start the next waiter's work, which must not run inside the releasing
      // thread either.
      counted?.leave()
      parent.childFailed(violation, tag: tag)
    }
  }
}

/// A traced callback stage's event, and the handler that ends it when its run is cancelled.
///
/// `cancelWatch` is written once, when the stage begins and before its body runs, and taken
/// when the stage ends, after its completion has claimed the call: the body's hand-off of the
/// completion orders the two, which is what makes the `@unchecked Sendable` safe.
final class TracedStage: @unchecked Sendable {
  private let event: StageEvent
  private var cancelWatch: CancellationToken.Registration?

  private init(_ event: StageEvent) { self.event = event }

  static func begin(_ stage: CallbackStage, _ token: CancellationToken) -> TracedStage? {
    guard let observer = token.observer,
      let event = StageEvent.begin(stage.shape, observer)
    else { return nil }
    let traced = TracedStage(event)
    // Unowned: a handler runs only inside the token's own `cancel()`, while it lives, and a
    // token holding a handler that holds it would never be freed.
    traced.cancelWatch = token.onCancel { [unowned token] in
      event.cancelled(cause: token.cause ?? CancellationError())
    }
    return traced
  }

  /// Ends the event with the stage's own outcome.
  func end(_ outcome: StageOutcome) {
    stopWatching()
    event.end(outcome)
  }

  func stopWatching() { cancelWatch.take()?.remove() }
}
