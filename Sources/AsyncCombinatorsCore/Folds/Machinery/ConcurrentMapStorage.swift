import AsyncCombinatorsKernel
import Synchronization

/// One iteration of a ``ConcurrentMapSequence``: the state machine behind a lock, and the
/// code that carries out its decisions outside the lock.
///
/// The consumer's own task pulls from the source, inside its `next()` calls and only when the
/// machine grants a slot, so the source's iterator never leaves that task and need not be
/// `Sendable`; no second task has to be woken for every pull. Elements start on one token,
/// cancelled as a whole when the stream ends early, and report here directly with their
/// position in the source as their branch, as a fold's elements report to their join: a
/// single-stage function runs with its completion alone, no run of its own. No task per element,
/// and no thread ever waits.
///
/// With a limit, each element runs on a count of its bodies in flight (`ElementWork`, as the array fold's), so
/// its slot comes back when its work is done, not when its result is in: what the array fold
/// and `limit(_:)` count.
@usableFromInline
final class ConcurrentMapStorage: SlotJoin {
  private let program: Program
  private let machine: Locked<ConcurrentMapStateMachine>
  /// Every element's token; cancelled when the stream ends before its source does.
  private let elements = CancellationToken()
  private let progress: (@Sendable (BatchProgress) -> Void)?
  /// The stream has failed or the consumer gone: a pull reserved before then is not made.
  private let hasEnded = Atomic<Bool>(false)
  /// Whether each element runs on an `ElementWork`, which holds its slot until its bodies
  /// are done; without a limit there is no slot to hold.
  private let countsBodies: Bool

  init(
    program: Program, limit: Int, ordered: Bool, tolerance: FailureTolerance,
    progress: (@Sendable (BatchProgress) -> Void)?
  ) {
    self.program = program
    self.progress = progress
    countsBodies = limit < .max
    machine = Locked(
      ConcurrentMapStateMachine(
        limit: limit, ordered: ordered, tolerance: tolerance, reportsProgress: progress != nil,
        countsBodies: countsBodies))
  }

  // MARK: The consumer

  // The consumer's loop itself is the iterator's `next()`, inlined into the caller so that the
  // source's `next()` is called with its type known
  // (Performance.md, "What the code's shape buys, and the check that holds it").

  /// The consumer's next step: pull, hand out an output or the end, or wait.
  @usableFromInline
  func nextStep() -> ConcurrentMapStateMachine.Step {
    machine.withLock { $0.nextStep() }
  }

  /// Whether a pull reserved with an output may still be made: not once the stream ended.
  @usableFromInline
  var mayPull: Bool { !hasEnded.load(ordering: .relaxed) }

  /// The source produced `input`: start it, or queue it; then the consumer's next step.
  ///
  /// The step is decided under the same lock as the element's arrival, in one critical section
  /// (Performance.md, "What the code's shape buys, and the check that holds it"). Deciding before
  /// the element starts is safe: a step of `.wait` is checked again under the lock before the
  /// consumer suspends.
  @usableFromInline
  func pulled(_ input: consuming AnyValue) -> ConcurrentMapStateMachine.Step {
    let (pulled, step) = machine.withLock { ($0.pulledElement(input), $0.nextStep()) }
    if case .start(let index) = pulled { start(index, input) }
    return step
  }

  /// The source ended; then the consumer's next step.
  @usableFromInline
  func sourceEnded() -> ConcurrentMapStateMachine.Step {
    // A source may end early because the consumer's task was cancelled: that is the consumer
    // giving up, not the source ending.
    if Task.isCancelled { consumerGone() }
    execute(machine.withLock { $0.sourceFinished() })
    return nextStep()
  }

  /// The source threw `error`; then the consumer's next step.
  @usableFromInline
  func sourceFailed(_ error: any Error) -> ConcurrentMapStateMachine.Step {
    execute(machine.withLock { $0.sourceFailed(error) })
    return nextStep()
  }

  /// Suspends the consumer until it can go on: an output, the end, or room to pull.
  @usableFromInline
  func waitForProgress() async {
    await withTaskCancellationHandler {
      await withUnsafeContinuation { continuation in
        execute(machine.withLock { $0.consumerWaits(continuation) })
      }
    } onCancel: {
      consumerGone()
    }
  }

  /// The consumer's task was cancelled, or its iterator released.
  @usableFromInline
  func consumerGone() {
    execute(machine.withLock { $0.consumerGone() })
  }

  private func start(_ index: Int, _ input: AnyValue) {
    // The stream reacts to cancellation itself, so the elements need no registration.
    guard countsBodies else {
      return program.start(input, token: elements, parent: self, tag: index)
    }
    let work = ElementWork(self, childOf: elements)
    program.start(input, token: work.element!.child, parent: work, tag: index)
  }

  /// Every body of a finished element has called back: its slot may take the next one.
  func slotFreed() {
    execute(machine.withLock { $0.slotFreed() })
  }

  @usableFromInline
  func childSucceeded(_ value: consuming AnyValue, tag index: Int) {
    let value = value
    execute(machine.withLock { $0.elementSucceeded(index, value) })
  }

  @usableFromInline
  func childFailed(_ error: any Error, tag index: Int) {
    execute(machine.withLock { $0.elementFailed(index, error) })
  }

  /// The starter loop: one thread at a time, so an element that completes synchronously
  /// only frees its slot and the loop starts the next one, on one stack frame.
  private func startPending() {
    while let (index, input) = machine.withLock({ $0.nextPending() }) {
      start(index, input)
    }
  }

  // MARK: Effects

  private func execute(_ effects: ConcurrentMapStateMachine.Effects) {
    if effects.cancelsElements {
      hasEnded.store(true, ordering: .relaxed)
      elements.cancel(cause: effects.cancelCause ?? CancellationError())
    }
    effects.wakesConsumer?.resume()
    if effects.drainsReports { ProgressQueue.startDraining { self.drainReports() } }
    if effects.startsPending { startPending() }
  }

  /// On the reports' lane: delivers the queued reports one at a time, then wakes a consumer
  /// whose end waited for the last of them.
  private func drainReports() {
    guard let progress else { return }
    while true {
      let (report, effects) = machine.withLock { $0.nextReport() }
      guard let report else { return execute(effects) }
      progress(report)
    }
  }
}
