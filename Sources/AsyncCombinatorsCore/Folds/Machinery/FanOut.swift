import AsyncCombinatorsKernel
import Synchronization

/// Runs one program on every element of an array, at most `limit` at a time, and joins the
/// results in input order: the engine of `concurrentMap` and its relatives.
///
/// A limit is a gate of the package's one admission core (`Admission`, as `limit(_:)` and
/// ``Limiter`` use), in which one waiter, `FoldSlots`, stands for all the elements not yet
/// started: each admission starts the next element, in index order. Only one thread at a
/// time runs the gate's admissions, and an element that completes synchronously only gives
/// its slot back, so it never recurses into the start of the next one: 100,000 synchronous
/// elements run in one loop on one stack frame. Without a limit, every element starts in one
/// loop.
///
/// Failures up to `allowedFailures` are recorded and dropped; the one beyond fails the join
/// at once, cancels the elements still running and starts no more. The parent's
/// cancellation does the same with `CancellationError`, and so does an element that fails
/// with `CancellationError` itself: cancellation is never a tolerated failure.
///
/// A limit counts real work: when `limit` is below the number of elements, each element runs
/// on a child token carrying its own ``InFlightWork``, and its slot goes back to the gate only
/// when no body it started is still working, though its result was recorded at once (a
/// timed-out element whose upload ignores cancellation keeps its slot until the upload calls
/// back). Without a limit there is nothing to hold back, and elements share the branch token.
///
/// Elements report to the join directly, as the branches of a fork-join do: an element that
/// is one callback stage runs without a `Run` around it.
///
/// With a `progress` closure, every delivered element queues a ``BatchProgress`` under the
/// lock, and a drainer on the reports' own lane delivers them (``ProgressQueue``), so a slow
/// closure holds up no element. The outcome waits behind the reports: while a drainer is at
/// work it is parked in `heldOutcome` and the drainer delivers it after the last report.
final class FanOut<Element: Sendable>: SlotJoin {
  typealias Failure = FanOutFailure
  typealias Outcome = FanOutOutcome
  // The types below live outside this generic class, so that they are not generic too
  // (Performance.md, "What the code's shape buys, and the check that holds it").
  private typealias State = FanOutState
  private typealias Next = FanOutNext

  /// The public error for failures beyond `tolerance` among `count` elements.
  static func rateExceeded(
    _ failures: [Failure], count: Int, tolerance: FailureTolerance
  ) -> FailureRateExceeded {
    FailureRateExceeded(
      failures: failures.map { .init(index: $0.index, error: $0.error) }, count: count,
      tolerance: tolerance)
  }

  private let elements: [Element]
  private let program: Program
  private let limit: Int
  private let allowedFailures: Int
  private let state: Locked<State>
  /// The elements' outputs, each written by its element's completion.
  private let values: FanOutValues
  /// Set with `isDone`; see `startAll`.
  private let ended = Atomic<Bool>(false)
  /// The gate of a limited fold; `nil` when every element starts at once.
  private let gate: FoldGate?
  /// Cancelled with the parent token, or by the join itself when it fails.
  private let branches: CancellationToken
  private let link: CancellationToken.Registration
  private let completion: @Sendable (Outcome) -> Void
  private let progress: (@Sendable (BatchProgress) -> Void)?

  private init(
    elements: [Element], program: Program, limit: Int, allowedFailures: Int,
    token: CancellationToken, progress: (@Sendable (BatchProgress) -> Void)?,
    completion: @escaping @Sendable (Outcome) -> Void
  ) {
    self.elements = elements
    self.progress = progress
    self.program = program
    self.limit = limit
    self.allowedFailures = allowedFailures
    self.completion = completion
    values = FanOutValues(count: elements.count)
    state = Locked(State(remaining: elements.count))
    (branches, link) = token.makeChild()
    gate = limit < elements.count ? FoldGate(capacity: limit) : nil
  }

  /// Runs `program` on each of `elements`, at most `limit` at once, and reports the outcome
  /// exactly once, after the last call to `progress`.
  static func run(
    _ program: Program, on elements: [Element], limit: Int, allowedFailures: Int,
    token: CancellationToken, progress: (@Sendable (BatchProgress) -> Void)? = nil,
    completion: @escaping @Sendable (Outcome) -> Void
  ) {
    guard !elements.isEmpty else {
      return completion(.finished(values: FanOutValues(count: 0), failures: []))
    }
    let join = FanOut(
      elements: elements, program: program, limit: limit, allowedFailures: allowedFailures,
      token: token, progress: progress, completion: completion)
    let handler = join.branches.onCancel { join.end(.cancelled) }
    join.state.withLock { $0.cancelHandler = handler }
    guard let gate = join.gate else { return join.startAll() }
    gate.enter(join, waitsOn: join.branches, runs: elements.count)
  }

  /// Starts every element, unlimited; one not yet started when the join ends never starts.
  ///
  /// The join reacts to cancellation itself, so the elements need no registration.
  private func startAll() {
    state.withLock {
      $0.running = elements.count
      $0.next = elements.count
    }
    for index in elements.indices {
      if ended.load(ordering: .acquiring) { return }
      program.start(elements[index], token: branches, parent: self, tag: index)
    }
  }

  /// Marks the join done, under the lock: `isDone` for the lock's users, `ended` for
  /// `startAll`, which reads it between elements without taking the lock.
  private func markDone(_ state: inout State) {
    state.isDone = true
    ended.store(true, ordering: .releasing)
  }

  /// Whether an element's slot waits for its bodies rather than its result.
  private var countsBodies: Bool { gate != nil }

  func childSucceeded(_ value: consuming AnyValue, tag index: Int) {
    // The element's own slot, written once, outside the lock (see `FanOutValues`).
    values.store(value, at: index)
    deliver(index, failure: nil)
  }

  func childFailed(_ error: any Error, tag index: Int) {
    deliver(index, failure: error)
  }

  /// The gate admitted the next element: it starts, unless the join has ended, when the slot
  /// goes straight back.
  func startNext() {
    let index = state.withLock { state -> Int? in
      guard !state.isDone else { return nil }
      state.running += 1
      defer { state.next += 1 }
      return state.next
    }
    guard let index else { return gate!.leave() }
    let work = ElementWork(self, childOf: branches)
    program.start(elements[index], token: work.element!.child, parent: work, tag: index)
  }

  /// An element whose bodies have all called back gives its slot back to the gate.
  func slotFreed() {
    state.withLock { $0.running -= 1 }
    gate!.leave()
  }

  private func deliver(_ index: Int, failure: (any Error)?) {
    // A result that races the parent's cancellation is the cancellation, as in a `Run`.
    if branches.isCancelled { return end(.cancelled) }
    var drains = false
    let next = state.withLock { state -> Next in
      guard !state.isDone else { return .nothing }
      if !countsBodies { state.running -= 1 }
      state.remaining -= 1
      if progress != nil {
        state.completed += 1
        if failure != nil { state.failed += 1 }
        drains = state.reports.enqueue(
          BatchProgress(
            completed: state.completed, failed: state.failed,
            inFlight: inFlight(state), total: elements.count))
      }
      if let error = failure {
        if error is CancellationError {
          // The element cancelled itself while the join was not cancelled: that cancels the
          // whole, whatever the tolerance.
          markDone(&state)
          return .finish(.cancelled)
        }
        state.failures.append(Failure(index: index, error: error))
        if state.failures.count > allowedFailures {
          markDone(&state)
          return .finish(.tooManyFailures(state.failures))
        }
      }
      if state.remaining == 0 {
        markDone(&state)
        return .finish(.finished(values: values, failures: state.failures))
      }
      return .nothing
    }
    // On the reports' own lane: the user's closure holds up neither this thread nor the start.
    if drains { ProgressQueue.startDraining { self.drainReports() } }
    if case .finish(let outcome) = next { finish(outcome) }
  }

  /// What a report calls in flight, taken as an element finishes: the elements started and
  /// not finished, and those that the slot just freed starts next. The finishing element's
  /// slot is counted free although, counting bodies, it is given back just after its result,
  /// so a saturated batch reads `limit` and not `limit - 1`.
  private func inFlight(_ state: State) -> Int {
    let heldByOthers = state.running - (countsBodies ? 1 : 0)
    let aboutToStart = min(elements.count - state.next, limit - heldByOthers)
    return state.next - state.completed + max(0, aboutToStart)
  }

  /// Ends the join from outside the element results: the parent's cancellation.
  private func end(_ outcome: Outcome) {
    let isFirst = state.withLock { state in
      defer { markDone(&state) }
      return !state.isDone
    }
    if isFirst { finish(outcome) }
  }

  private func finish(_ outcome: Outcome) {
    state.withLock { $0.cancelHandler.take() }?.remove()
    // Stops the elements still running and turns the elements still waiting away from the
    // gate; `end` finds the join done and does nothing.
    switch outcome {
    case .finished: break
    // The elements read the failure that exceeded the tolerance.
    case .tooManyFailures(let failures):
      branches.cancel(cause: failures.last?.error ?? CancellationError())
    case .cancelled: branches.cancel()
    }
    link.remove()  // After: the run's `cancel()` meanwhile waits for the elements' handlers.
    guard progress != nil else { return completion(outcome) }
    // Behind the reports: a drainer at work delivers the outcome once it has delivered them.
    let deliverNow = state.withLock { state in
      guard state.reports.isDraining else { return true }
      state.heldOutcome = outcome
      return false
    }
    if deliverNow { completion(outcome) }
  }

  /// Delivers queued reports until none is left, then an outcome that waited for them.
  private func drainReports() {
    guard let progress else { return }
    while true {
      let (report, outcome) = state.withLock { state -> (BatchProgress?, Outcome?) in
        if let report = state.reports.next() { return (report, nil) }
        return (nil, state.heldOutcome.take())
      }
      guard let report else {
        if let outcome { completion(outcome) }
        return
      }
      progress(report)
    }
  }
}

struct FanOutFailure: Sendable {
  let index: Int
  let error: any Error
}

enum FanOutOutcome: Sendable {
  /// Every element finished; element `i` has no value where it failed within tolerance.
  case finished(values: FanOutValues, failures: [FanOutFailure])
  /// The failure beyond tolerance happened: these are all the failures seen so far.
  case tooManyFailures([FanOutFailure])
  case cancelled
}

/// What a delivered result leads to, decided under the lock and done outside it.
private enum FanOutNext {
  case nothing
  case finish(FanOutOutcome)
}

extension FanOut: FoldStarter {}

private struct FanOutState {
  var failures: [FanOutFailure] = []
  /// The index of the next element to start.
  var next = 0
  /// The elements started whose slots are not given back yet.
  var running = 0
  var remaining: Int
  var isDone = false
  /// Finished elements, and the failed ones among them (cancellation included), for
  /// progress reports.
  var completed = 0
  var failed = 0
  var reports = ProgressQueue()
  /// The outcome, decided while a drainer was delivering reports; the drainer delivers it.
  var heldOutcome: FanOutOutcome?
  /// The join's handler on `branches`; removed on finish, which breaks the cycle it makes.
  var cancelHandler: CancellationToken.Registration?
}
