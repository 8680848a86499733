/// The decisions of one iteration of a ``ConcurrentMapSequence``, as pure transitions.
///
/// Every method runs under the storage's lock, changes only this value, and returns the
/// ``Effects`` to carry out once the lock is released: continuations to resume, cancellations,
/// a pull task to start, reports to drain. Three parties drive it: the consumer (`next()`, or
/// giving up), the one task that pulls from the source, and the element runs finishing on any
/// thread.
///
/// Backpressure: a pull is granted only while fewer than `limit` elements run and fewer than
/// `bound` elements are in the stream (pulled and neither yielded nor skipped). `bound` is
/// `limit` when unordered; when ordered it is `2 * limit`, the extra `limit` being the reorder
/// window where outputs that finished early wait for an earlier one.
struct ConcurrentMapStateMachine: Sendable {
  typealias ConsumerContinuation = UnsafeContinuation<AnyValue?, any Error>
  typealias PullContinuation = UnsafeContinuation<Bool, Never>

  /// What to do outside the lock, in the order the storage does it.
  struct Effects: Sendable {
    var cancelsElements = false
    var cancelsPullTask: Task<Void, Never>?
    var resumesPull: (PullContinuation, Bool)?
    var resumesConsumer: (ConsumerContinuation, Result<AnyValue?, any Error>)?
    /// This thread has become the progress drainer.
    var drainsReports = false
    var startsPullTask = false
  }

  private let limit: Int
  private let bound: Int
  private let ordered: Bool
  private let tolerance: FailureTolerance
  private let reportsProgress: Bool
  /// How many slots must be free before a waiting pull task is woken: a wake-up costs a
  /// thread hand-off, so it is shared by a few pulls. A pull task that is awake pulls into
  /// every free slot, and when fewer are free the running elements keep the stream busy.
  private let wakeBatch: Int

  /// Whether the consumer has asked for an element, which starts the pulling.
  private var hasStarted = false
  /// The pull task, kept to cancel it when the stream ends early.
  private var pullTask: Task<Void, Never>?
  /// How many elements the source has produced: the position of the next one.
  private var pulled = 0
  /// A pull was granted and has not delivered yet.
  private var isPulling = false
  /// The pull task, waiting for room to pull.
  private var pullWaiter: PullContinuation?
  private var sourceEnded = false
  private var running = 0
  private var finished = 0
  private var failed = 0
  private var failures: [FailureRateExceeded.Failure] = []
  /// Unordered: outputs in the order they finished.
  private var ready = FIFO<AnyValue>()
  private var readyCount = 0
  /// Ordered: a slot per element pulled and not yet yielded or skipped.
  private var window = ReorderWindow()
  /// The error the stream ends with once set: the source's, the tolerance's, or
  /// `CancellationError` for an element's own cancellation or the consumer giving up.
  private var failure: (any Error)?
  /// The consumer has been given the end (`nil` or the error); every later `next()` is `nil`.
  private var isOver = false
  /// The consumer, suspended in `next()`.
  private var consumer: ConsumerContinuation?
  private(set) var reports = ProgressQueue()

  init(limit: Int, ordered: Bool, tolerance: FailureTolerance, reportsProgress: Bool) {
    self.limit = limit
    self.bound = ordered ? (limit > Int.max / 2 ? Int.max : limit * 2) : limit
    self.ordered = ordered
    self.tolerance = tolerance
    self.reportsProgress = reportsProgress
    self.wakeBatch = Swift.max(1, Swift.min(limit / 4, 8))
  }

  // MARK: The consumer

  /// `next()` without waiting: an output, or the end, or `nil` when it must wait.
  mutating func takeReady() -> (Result<AnyValue?, any Error>?, Effects) {
    var effects = Effects()
    let result = take()
    if result != nil { effects.resumesPull = grantPull() }
    return (result, effects)
  }

  /// `next()` suspended: resumed at once if something is ready, else parked.
  mutating func consumerWaits(_ continuation: ConsumerContinuation) -> Effects {
    var (result, effects) = takeReady()
    if let result {
      effects.resumesConsumer = (continuation, result)
      return effects
    }
    consumer = continuation
    if !hasStarted {
      hasStarted = true
      effects.startsPullTask = true
    }
    return effects
  }

  /// The consumer stopped: it broke out of its loop or its task was cancelled.
  mutating func consumerGone() -> Effects {
    var effects = Effects()
    guard !isOver, failure == nil else { return effects }
    terminate(CancellationError(), &effects)
    effects.resumesConsumer = resumeConsumerIfReady()
    return effects
  }

  /// The next output in the order the stream promises, or the end once every report is out.
  private mutating func take() -> Result<AnyValue?, any Error>? {
    if isOver { return .success(nil) }
    if ordered {
      if case .value(let value)? = window.first {
        _ = window.removeFirst()
        dropSkipped()
        return .success(value)
      }
    } else if let value = ready.popFirst() {
      readyCount -= 1
      return .success(value)
    }
    // The end waits until the last report has returned.
    guard !reports.isDraining else { return nil }
    if let failure {
      isOver = true
      return .failure(failure)
    }
    guard sourceEnded, running == 0, !isPulling else { return nil }
    isOver = true
    return .success(nil)
  }

  private mutating func resumeConsumerIfReady() -> (
    ConsumerContinuation, Result<AnyValue?, any Error>
  )? {
    guard consumer != nil, let result = take() else { return nil }
    return (consumer.take()!, result)
  }

  // MARK: The pull task

  mutating func pullTaskStarted(_ task: Task<Void, Never>) -> Effects {
    var effects = Effects()
    if failure == nil { pullTask = task } else { effects.cancelsPullTask = task }
    return effects
  }

  /// Whether the pull task may pull now (`true`), must stop (`false`), or must wait (`nil`).
  mutating func requestPull() -> Bool? {
    if failure != nil || sourceEnded { return false }
    guard hasRoom else { return nil }
    isPulling = true
    return true
  }

  mutating func pullWaits(_ continuation: PullContinuation) -> Effects {
    var effects = Effects()
    if let decision = requestPull() {
      effects.resumesPull = (continuation, decision)
    } else {
      pullWaiter = continuation
    }
    return effects
  }

  /// The source produced an element: its position, or `nil` when the stream has ended
  /// meanwhile and the element must not start.
  mutating func pulledElement() -> Int? {
    isPulling = false
    guard failure == nil else { return nil }
    defer { pulled += 1 }
    running += 1
    if ordered { window.append(.running) }
    return pulled
  }

  mutating func sourceFinished() -> Effects {
    var effects = Effects()
    isPulling = false
    sourceEnded = true
    guard failure == nil else { return effects }
    // The total is known now: a ratio is judged as for an array.
    if tolerance.isExceededInStream(failures: failures.count, finished: finished, total: pulled) {
      terminate(exceeded(), &effects)
    }
    effects.resumesConsumer = resumeConsumerIfReady()
    return effects
  }

  mutating func sourceFailed(_ error: any Error) -> Effects {
    var effects = Effects()
    isPulling = false
    sourceEnded = true
    guard failure == nil else { return effects }
    terminate(error, &effects)
    effects.resumesConsumer = resumeConsumerIfReady()
    return effects
  }

  // MARK: The elements

  mutating func elementFinished(_ index: Int, _ result: AnyResult) -> Effects {
    var effects = Effects()
    guard failure == nil else { return effects }  // Cancelled with the rest: not reported.
    running -= 1
    finished += 1
    if case .failure = result { failed += 1 }
    if reportsProgress {
      effects.drainsReports = reports.enqueue(
        BatchProgress(completed: finished, failed: failed, inFlight: running, total: nil))
    }
    switch result {
    case .success(let value):
      if ordered {
        window.set(.value(value), at: index)
      } else {
        ready.append(value)
        readyCount += 1
      }
    case .failure(let error) where error is CancellationError:
      // The element cancelled itself: that cancels the stream, whatever the tolerance.
      terminate(CancellationError(), &effects)
    case .failure(let error):
      failures.append(FailureRateExceeded.Failure(index: index, error: error))
      if tolerance.isExceededInStream(
        failures: failures.count, finished: finished, total: sourceEnded ? pulled : nil)
      {
        terminate(exceeded(), &effects)
      } else if ordered {
        window.set(.skipped, at: index)
        dropSkipped()
      }
    }
    effects.resumesConsumer = resumeConsumerIfReady()
    if effects.resumesPull == nil { effects.resumesPull = grantPull() }
    return effects
  }

  // MARK: Progress

  /// The drainer's next report, or `nil` with what its turn's end makes possible (the end
  /// of the stream, held back until now).
  mutating func nextReport() -> (BatchProgress?, Effects) {
    var effects = Effects()
    if let report = reports.next() { return (report, effects) }
    effects.resumesConsumer = resumeConsumerIfReady()
    return (nil, effects)
  }

  // MARK: Helpers

  private var hasRoom: Bool { freeSlots >= 1 }

  /// How many more elements could be pulled now.
  private var freeSlots: Int {
    guard !isPulling else { return 0 }
    return Swift.min(limit - running, bound - (ordered ? window.count : running + readyCount))
  }

  private mutating func grantPull() -> (PullContinuation, Bool)? {
    guard pullWaiter != nil, failure == nil, !sourceEnded, freeSlots >= wakeBatch else {
      return nil
    }
    isPulling = true
    return (pullWaiter.take()!, true)
  }

  private mutating func dropSkipped() {
    while case .skipped? = window.first { _ = window.removeFirst() }
  }

  private func exceeded() -> FailureRateExceeded {
    FailureRateExceeded(failures: failures, count: pulled, tolerance: tolerance)
  }

  /// Ends the stream with `error`: the running elements are cancelled, the pull task stops,
  /// and outputs not yet taken are dropped.
  private mutating func terminate(_ error: any Error, _ effects: inout Effects) {
    failure = error
    effects.cancelsElements = true
    effects.cancelsPullTask = pullTask.take()
    if let waiter = pullWaiter.take() { effects.resumesPull = (waiter, false) }
    ready = FIFO()
    readyCount = 0
    window.removeAll()
  }
}
