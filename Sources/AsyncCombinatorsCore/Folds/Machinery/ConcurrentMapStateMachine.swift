import AsyncCombinatorsKernel

/// The decisions of one iteration of a ``ConcurrentMapSequence``, as pure transitions.
///
/// Every method runs under the storage's lock, changes only this value, and returns what to
/// do once the lock is released: a step for the consumer's loop, or ``Effects`` (a
/// continuation to resume, cancellation, reports to drain). Two parties drive it: the
/// consumer's task, which also pulls from the source inside its `next()` calls, and the
/// element runs finishing on any thread.
///
/// Real work: a slot is held from an element's start until every callback body it started has
/// called back, not only until its result is in (see `InFlightWork`), as the array fold and
/// `limit(_:)` count it. So `running` counts slots held, which an element whose result came
/// early (a timeout whose body ignores cancellation) keeps until ``slotFreed()``, and
/// `unfinished` counts elements whose result has not come, which is what the end waits for.
///
/// Backpressure: at most `limit` elements run, and a pull is granted only while fewer than
/// `bound` elements are in the stream (pulled and neither yielded nor skipped). `bound` is
/// `limit` when unordered; when ordered it is `2 * limit`, the extra `limit` being the reorder
/// window where outputs that finished early wait for an earlier one, and where elements
/// pulled while `limit` run wait for a slot (`pending`): the thread that frees a slot starts
/// one, so starting it wakes no other thread.
@usableFromInline
struct ConcurrentMapStateMachine: Sendable {
  typealias Waiter = UnsafeContinuation<Void, Never>

  /// What the consumer's loop does next.
  @usableFromInline
  enum Step: Sendable {
    /// Pull one element from the source; the slot is reserved.
    case pull
    /// Hand this output to the caller of `next()`.
    case output(AnyValue)
    /// Hand this output out, and pull at the start of the next `next()`: the slot its taking
    /// freed is reserved for that pull, so the next call need not ask for it.
    case outputAndPull(AnyValue)
    /// The stream is over: `nil` for the end, or the error it ends with.
    case end((any Error)?)
    /// Suspend until woken, then ask again.
    case wait
  }

  /// What to do outside the lock, in the order the storage does it.
  struct Effects: Sendable {
    var cancelsElements = false
    /// Why the elements are cancelled: the failure that ended the stream.
    var cancelCause: (any Error)?
    var wakesConsumer: Waiter?
    /// This thread has become the starter of pulled elements waiting for a slot.
    var startsPending = false
    /// This thread has become the progress drainer.
    var drainsReports = false
  }

  private let limit: Int
  private let bound: Int
  private let ordered: Bool
  private let tolerance: FailureTolerance
  private let reportsProgress: Bool
  /// Whether a slot waits for the element's bodies (the storage calls ``slotFreed()``) rather
  /// than for its result: always, unless the limit is unbounded and there is nothing to hold.
  private let countsBodies: Bool
  /// How many slots must be free before a consumer waiting only for room is woken, so that one
  /// wake-up serves a few pulls
  /// (Performance.md, "What the code's shape buys, and the check that holds it"). An output ready,
  /// or the end, wakes it at once.
  private let wakeBatch: Int

  /// How many elements the source has produced: the position of the next one.
  private var pulled = 0
  /// A pull was granted and has not delivered yet.
  private var isPulling = false
  private var sourceEnded = false
  /// Slots held: elements started whose bodies have not all called back.
  private var running = 0
  /// Elements started whose result has not come.
  private var unfinished = 0
  /// Ordered: elements pulled into the reorder window while `limit` ran, each started by
  /// the thread that frees a slot, so that no thread has to be woken to start it.
  private var pending = FIFO<(index: Int, input: AnyValue)>()
  private var pendingCount = 0
  /// Some thread is starting pending elements.
  private var isStarting = false
  private var finished = 0
  private var failed = 0
  private var failures: [FailureRateExceeded.Failure] = []
  /// Unordered: outputs in the order they finished.
  private var ready = FIFO<AnyValue>()
  private var readyCount = 0
  /// Ordered: a slot per element pulled and not yet yielded or skipped. A class, which a copy
  /// of the machine would share; the machine lives in one place, behind the storage's lock, and
  /// is only ever changed there, never copied.
  private let window = ReorderWindow()
  /// The error the stream ends with once set: the source's, the tolerance's, or
  /// `CancellationError` for an element's own cancellation or the consumer giving up.
  private var failure: (any Error)?
  /// The consumer has been given the end (`nil` or the error); every later `next()` is `nil`.
  private var isOver = false
  /// The consumer, suspended in `next()`.
  private var waiter: Waiter?
  private(set) var reports = ProgressQueue()

  init(
    limit: Int, ordered: Bool, tolerance: FailureTolerance, reportsProgress: Bool,
    countsBodies: Bool
  ) {
    self.limit = limit
    self.countsBodies = countsBodies
    self.bound = ordered ? (limit > Int.max / 2 ? Int.max : limit * 2) : limit
    self.ordered = ordered
    self.tolerance = tolerance
    self.reportsProgress = reportsProgress
    self.wakeBatch = Swift.max(1, Swift.min(limit / 4, 8))
  }

  // MARK: The consumer

  /// The consumer's next step.
  ///
  /// Pulling an element that can start at once comes first, so that the slot an output's
  /// taking frees is filled before the consumer goes off to use the output. Pulling ahead into
  /// an ordered stream's window comes only when no output is ready, so that a slow source does
  /// not hold back outputs that are.
  mutating func nextStep() -> Step {
    if isOver { return .end(nil) }
    let canPull = failure == nil && !sourceEnded && freeSlots >= 1
    if canPull && running + pendingCount < limit {
      isPulling = true
      return .pull
    }
    if let step = take() { return step }
    if canPull {
      isPulling = true
      return .pull
    }
    return .wait
  }

  /// The consumer is about to suspend: woken at once if it could go on already.
  mutating func consumerWaits(_ continuation: Waiter) -> Effects {
    var effects = Effects()
    if canProceed(freeing: 1) {
      effects.wakesConsumer = continuation
    } else {
      waiter = continuation
    }
    return effects
  }

  /// The consumer stopped: it broke out of its loop or its task was cancelled.
  mutating func consumerGone() -> Effects {
    var effects = Effects()
    guard !isOver, failure == nil else { return effects }
    terminate(CancellationError(), &effects)
    effects.wakesConsumer = wakeIfReady()
    return effects
  }

  /// The next output in the order the stream promises, or the end once every report is out.
  private mutating func take() -> Step? {
    if ordered {
      if window.first == .value {
        let value = window.removeFirstValue()
        dropSkipped()
        return output(value)
      }
    } else if let value = ready.popFirst() {
      readyCount -= 1
      return output(value)
    }
    guard isEndReady else { return nil }
    isOver = true
    return .end(failure)
  }

  /// An output taken, with the pull its slot allows reserved when an element pulled now
  /// could start at once (the rule `nextStep()` pulls first by).
  private mutating func output(_ value: consuming AnyValue) -> Step {
    guard failure == nil, !sourceEnded, freeSlots >= 1, running + pendingCount < limit else {
      return .output(value)
    }
    isPulling = true
    return .outputAndPull(value)
  }

  /// Whether the end can be handed out: the stream has failed or everything is done, and the
  /// last report has returned.
  private var isEndReady: Bool {
    guard !reports.isDraining else { return false }
    return failure != nil || (sourceEnded && unfinished == 0 && pendingCount == 0 && !isPulling)
  }

  private var hasOutput: Bool {
    if ordered {
      return window.first == .value
    }
    return readyCount > 0
  }

  /// Whether the consumer would not wait: an output or the end is ready, or at least
  /// `slots` slots are free to pull into.
  private func canProceed(freeing slots: Int) -> Bool {
    if isOver || hasOutput || isEndReady { return true }
    return failure == nil && !sourceEnded && freeSlots >= slots
  }

  private mutating func wakeIfReady() -> Waiter? {
    guard waiter != nil, canProceed(freeing: wakeBatch) else { return nil }
    return waiter.take()
  }

  // MARK: The source

  /// What the consumer does with an element it pulled.
  enum Pulled: Sendable {
    /// Start it now, as element `index`.
    case start(Int)
    /// It waits in the window for a slot; a completing element's thread starts it.
    case queued
    /// The stream has ended meanwhile: drop it.
    case dropped
  }

  /// The source produced `input`.
  mutating func pulledElement(_ input: AnyValue) -> Pulled {
    isPulling = false
    guard failure == nil else { return .dropped }
    defer { pulled += 1 }
    if ordered { window.appendRunning() }
    guard running < limit else {
      pending.append((pulled, input))
      pendingCount += 1
      return .queued
    }
    running += 1
    unfinished += 1
    return .start(pulled)
  }

  /// The starter's next element, or `nil`, which ends its turn.
  mutating func nextPending() -> (index: Int, input: AnyValue)? {
    guard failure == nil, running < limit, let next = pending.popFirst() else {
      isStarting = false
      return nil
    }
    pendingCount -= 1
    running += 1
    unfinished += 1
    return next
  }

  mutating func sourceFinished() -> Effects {
    var effects = Effects()
    isPulling = false
    sourceEnded = true
    guard failure == nil else { return effects }
    // The total is known now: a ratio is judged as for an array.
    if tolerance.isExceededInStream(failures: failed, finished: finished, total: pulled) {
      terminate(exceeded(), &effects)
    }
    return effects
  }

  mutating func sourceFailed(_ error: any Error) -> Effects {
    var effects = Effects()
    isPulling = false
    sourceEnded = true
    guard failure == nil else { return effects }
    terminate(error, &effects)
    return effects
  }

  // MARK: The elements

  /// Element `index` produced `value`. Values and errors come apart, not as a `Result`
  /// (Performance.md, "What the code's shape buys, and the check that holds it").
  mutating func elementSucceeded(_ index: Int, _ value: consuming AnyValue) -> Effects {
    var effects = Effects()
    guard failure == nil else { return effects }  // Cancelled with the rest: not reported.
    countFinished(failed: false, &effects)
    if ordered {
      window.setValue(value, at: index)
    } else {
      ready.append(value)
      readyCount += 1
    }
    afterElement(&effects)
    return effects
  }

  /// Element `index` failed with `error`.
  mutating func elementFailed(_ index: Int, _ error: any Error) -> Effects {
    var effects = Effects()
    guard failure == nil else { return effects }  // Cancelled with the rest: not reported.
    countFinished(failed: true, &effects)
    if error is CancellationError {
      // The element cancelled itself: that cancels the stream, whatever the tolerance.
      terminate(CancellationError(), &effects)
    } else {
      // Kept for the error that would report them; a stream that tolerates everything only
      // counts them, so that its memory stays flat however many fail.
      if tolerance.canBeExceeded {
        failures.append(FailureRateExceeded.Failure(index: index, error: error))
      }
      if tolerance.isExceededInStream(
        failures: failed, finished: finished, total: sourceEnded ? pulled : nil)
      {
        terminate(exceeded(), &effects)
      } else if ordered {
        window.setSkipped(at: index)
        dropSkipped()
      }
    }
    afterElement(&effects)
    return effects
  }

  private mutating func countFinished(failed isFailure: Bool, _ effects: inout Effects) {
    unfinished -= 1
    if !countsBodies { running -= 1 }
    finished += 1
    if isFailure { failed += 1 }
    if reportsProgress {
      effects.drainsReports = reports.enqueue(
        BatchProgress(completed: finished, failed: failed, inFlight: inFlight, total: nil))
    }
  }

  /// What a report calls in flight, taken as an element finishes: the elements still running,
  /// and those pulled and waiting that the slot just freed starts. The finishing element's
  /// slot is counted free although, counting bodies, it is given back just after its result;
  /// an element still to be pulled is not counted, since the source may have none.
  private var inFlight: Int {
    let heldByOthers = running - (countsBodies ? 1 : 0)
    return unfinished + Swift.max(0, Swift.min(pendingCount, limit - heldByOthers))
  }

  /// Every body of a finished element has called back: its slot is free. Counting bodies,
  /// this is what frees a slot; a slot freed after the stream ended frees nothing to use.
  mutating func slotFreed() -> Effects {
    var effects = Effects()
    running -= 1
    guard !isOver else { return effects }
    afterElement(&effects)
    return effects
  }

  /// An element finished or a slot came free: a pending element may start, and the consumer
  /// may go on.
  private mutating func afterElement(_ effects: inout Effects) {
    if pendingCount > 0 && failure == nil && !isStarting && running < limit {
      isStarting = true
      effects.startsPending = true
    }
    effects.wakesConsumer = wakeIfReady()
  }

  // MARK: Progress

  /// The drainer's next report, or `nil` with the consumer to wake now that the end (held
  /// back until the last report returned) may be ready.
  mutating func nextReport() -> (BatchProgress?, Effects) {
    var effects = Effects()
    if let report = reports.next() { return (report, effects) }
    effects.wakesConsumer = wakeIfReady()
    return (nil, effects)
  }

  // MARK: Helpers

  /// How many more elements could be pulled now.
  private var freeSlots: Int {
    guard !isPulling else { return 0 }
    // Ordered, the window may fill beyond the running elements: those wait as `pending`.
    return ordered ? bound - window.count : limit - running - readyCount
  }

  private mutating func dropSkipped() {
    while window.first == .skipped { window.removeFirst() }
  }

  private func exceeded() -> FailureRateExceeded {
    FailureRateExceeded(failures: failures, count: pulled, tolerance: tolerance)
  }

  /// Ends the stream with `error`: the running elements are cancelled, nothing more is pulled,
  /// and outputs not yet taken are dropped.
  private mutating func terminate(_ error: any Error, _ effects: inout Effects) {
    failure = error
    effects.cancelsElements = true
    effects.cancelCause = error
    ready = FIFO()
    readyCount = 0
    pending = FIFO()
    pendingCount = 0
    window.removeAll()
  }
}
