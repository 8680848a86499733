import AsyncCombinatorsKernel

/// One thing that happened in a run, as a ``RunObserver`` receives it: a stage started or
/// ended, a retry is about to wait, a hedge started, a breaker changed state…
///
/// An event says what happened in its ``kind``, which has a ``Kind/name`` anyone can print,
/// who it happened to in its ``subject``, and carries the values of its kind in typed
/// properties, each `nil` on events of other kinds: ``stage``, ``outcome``, ``cause``,
/// ``attempt``, ``wait``, ``hedge``, ``breaker``… New kinds are added as new capabilities
/// come, so an observer tests the kinds it knows and treats the others by their name; no
/// `switch` over kinds has to be exhaustive.
///
/// ```swift
/// final class Failures: RunObserver {
///   let lines = Mutex<[String]>([])
///   func observe(_ event: RunEvent) {
///     if event.kind == .stageEnded, event.outcome == .failed {
///       lines.withLock { $0.append("\(event.subject) failed") }
///     } else if event.kind != .stageStarted, event.kind != .stageEnded {
///       lines.withLock { $0.append(event.description) }
///     }
///   }
/// }
/// let failures = Failures()
/// let load = StageRecord(id: 1, name: "load")
/// failures.observe(.stageStarted(load))
/// failures.observe(.stageEnded(load, outcome: .failed))
/// failures.observe(.hedgeStarted("load.hedged(after: 0.1 seconds)", hedge: 1))
/// print(failures.lines.withLock { $0 })
/// // prints ["load failed", "hedge started load.hedged(after: 0.1 seconds): hedge 1"]
/// ```
///
/// A capability of your own announces its events the same way: a kind, and a payload of any
/// `Sendable` type, read back with ``payload(as:)``. A payload that is
/// `CustomStringConvertible` is what a ``Timeline`` prints beside the kind's name.
public struct RunEvent: Sendable, CustomStringConvertible {
  /// What kind of thing happened: a name, compared by that name.
  ///
  /// The library's kinds are static members (``stageStarted``, ``retryWillWait``…); more
  /// come with new capabilities. Declare a kind of your own as a static member in an
  /// extension: `static let cacheMissed = RunEvent.Kind("cache missed")`.
  public struct Kind: Sendable, Hashable, CustomStringConvertible {
    /// The kind's name, in a few words: `retry will wait`. Two kinds with the same name are
    /// the same kind.
    public let name: String

    /// A kind named `name`.
    ///
    /// - Parameter name: The kind's name, in a few words.
    public init(_ name: String) { self.name = name }

    public var description: String { name }

    /// A stage is about to start, on the current thread: ``RunEvent/stage``.
    public static let stageStarted = Kind("stage started")
    /// A stage completed, on the thread that completed it: ``RunEvent/stage`` and
    /// ``RunEvent/outcome``. (Or its run cancelled it: see ``stageCancelled``.)
    public static let stageEnded = Kind("stage ended")
    /// The stage's run cancelled it while it was running, on the cancelling thread: that ends
    /// the stage, before its body has called back. ``RunEvent/stage``, and ``RunEvent/cause``:
    /// why its run cancelled it (the token's ``CancellationToken/cause``, such as the
    /// ``TimeoutError`` of a `timeout` that fired, or the failure of a sibling).
    ///
    /// Apart from ``stageEnded`` because a body may itself complete with `CancellationError`
    /// (outcome `.cancelled`) just as its run cancels it: an observer that tells a body's end
    /// from the run's must not guess it from the outcome.
    public static let stageCancelled = Kind("stage cancelled")
    /// A stage that its run had already cancelled called back anyway (or released its
    /// completion uncalled, `.failed`), on that thread: the library ignored the call.
    /// ``RunEvent/stage`` and ``RunEvent/outcome``.
    public static let stageCalledBackAfterCancellation = Kind(
      "stage called back after cancellation")
    /// A `retry` is about to wait ``RunEvent/wait`` before its next attempt, on the thread
    /// where attempt number ``RunEvent/attempt`` (from 1) failed with ``RunEvent/error``.
    /// ``RunEvent/subject`` is the retry as written: `fetch.retry(3, delay: 0.1 seconds)`.
    public static let retryWillWait = Kind("retry will wait")
    /// A `retry` gave up after attempt number ``RunEvent/attempt`` failed with
    /// ``RunEvent/error``, and the run failed with that error, because its wait of
    /// ``RunEvent/wait`` would have ended at or after the run's deadline. Not preceded by a
    /// ``retryWillWait``.
    public static let retryGaveUpAtDeadline = Kind("retry gave up at deadline")
    /// A `hedged` function started hedge number ``RunEvent/hedge`` (from 1; the primary is
    /// 0), on the thread that started it. ``RunEvent/subject`` is the hedged function as
    /// written.
    public static let hedgeStarted = Kind("hedge started")
    /// A run's outcome, or its admission, moved ``RunEvent/breaker`` from one state to
    /// another: ``RunEvent/breakerChange``.
    public static let circuitBreakerChanged = Kind("circuit breaker changed")
    /// ``RunEvent/breaker`` turned a run away without calling its function, with
    /// ``RunEvent/error``, a ``BrokenCircuitError``.
    public static let runRejected = Kind("run rejected")
  }

  /// The values an event carries. Internal, so that kinds can be added without breaking a
  /// client's `switch`.
  enum Payload: Sendable {
    case started(StageRecord)
    case ended(StageRecord, StageOutcome)
    case cancelled(StageRecord, cause: any Error)
    case calledBackLate(StageRecord, StageOutcome)
    case retryWillWait(attempt: Int, wait: Duration, error: any Error)
    case retryGaveUp(attempt: Int, wait: Duration, error: any Error)
    case hedge(Int)
    case breakerChanged(CircuitBreaker, from: CircuitBreaker.State, to: CircuitBreaker.State)
    case rejected(CircuitBreaker, BrokenCircuitError)
    case other((any Sendable)?)
  }

  /// What kind of thing happened.
  public let kind: Kind
  /// Who it happened to: the stage's name, the retry or hedged function as written
  /// (`fetch.retry(3)`), the breaker's name.
  public let subject: String
  let values: Payload

  init(_ kind: Kind, _ subject: String, _ values: Payload) {
    self.kind = kind
    self.subject = subject
    self.values = values
  }

  /// An event of a kind of your own, carrying `payload`.
  ///
  /// Events of the library's kinds are made with their static functions
  /// (``stageStarted(_:)``, ``retryWillWait(_:attempt:wait:error:)``…), which fill in the
  /// typed properties; this one fills in only ``payload``.
  ///
  /// - Parameters:
  ///   - kind: What happened.
  ///   - subject: Who it happened to.
  ///   - payload: The event's values, read back with ``payload(as:)``; a ``Timeline`` prints
  ///     it beside the kind's name.
  public init(_ kind: Kind, subject: String, payload: (any Sendable)? = nil) {
    self.init(kind, subject, .other(payload))
  }

  // MARK: The library's events

  /// ``Kind/stageStarted``.
  public static func stageStarted(_ stage: StageRecord) -> RunEvent {
    RunEvent(.stageStarted, stage.name, .started(stage))
  }

  /// ``Kind/stageEnded``.
  public static func stageEnded(_ stage: StageRecord, outcome: StageOutcome) -> RunEvent {
    RunEvent(.stageEnded, stage.name, .ended(stage, outcome))
  }

  /// ``Kind/stageCancelled``; `cause` is `CancellationError()` for a plain `cancel()`.
  public static func stageCancelled(
    _ stage: StageRecord, cause: any Error = CancellationError()
  ) -> RunEvent {
    RunEvent(.stageCancelled, stage.name, .cancelled(stage, cause: cause))
  }

  /// ``Kind/stageCalledBackAfterCancellation``.
  public static func stageCalledBackAfterCancellation(
    _ stage: StageRecord, outcome: StageOutcome
  ) -> RunEvent {
    RunEvent(.stageCalledBackAfterCancellation, stage.name, .calledBackLate(stage, outcome))
  }

  /// ``Kind/retryWillWait``.
  public static func retryWillWait(
    _ stage: String, attempt: Int, wait: Duration, error: any Error
  ) -> RunEvent {
    RunEvent(.retryWillWait, stage, .retryWillWait(attempt: attempt, wait: wait, error: error))
  }

  /// ``Kind/retryGaveUpAtDeadline``.
  public static func retryGaveUpAtDeadline(
    _ stage: String, attempt: Int, wait: Duration, error: any Error
  ) -> RunEvent {
    RunEvent(
      .retryGaveUpAtDeadline, stage, .retryGaveUp(attempt: attempt, wait: wait, error: error))
  }

  /// ``Kind/hedgeStarted``.
  public static func hedgeStarted(_ stage: String, hedge: Int) -> RunEvent {
    RunEvent(.hedgeStarted, stage, .hedge(hedge))
  }

  /// ``Kind/circuitBreakerChanged``.
  public static func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State
  ) -> RunEvent {
    RunEvent(.circuitBreakerChanged, breaker.label, .breakerChanged(breaker, from: old, to: new))
  }

  /// ``Kind/runRejected``.
  public static func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError)
    -> RunEvent
  {
    RunEvent(.runRejected, breaker.label, .rejected(breaker, error))
  }

  // MARK: Values

  /// The stage's start, on the events of a stage; otherwise `nil`.
  public var stage: StageRecord? {
    switch values {
    case .started(let stage), .ended(let stage, _), .cancelled(let stage, _),
      .calledBackLate(let stage, _):
      stage
    default: nil
    }
  }

  /// How the stage ended, on ``Kind/stageEnded`` and ``Kind/stageCalledBackAfterCancellation``;
  /// `.cancelled` on ``Kind/stageCancelled``; otherwise `nil`.
  public var outcome: StageOutcome? {
    switch values {
    case .ended(_, let outcome), .calledBackLate(_, let outcome): outcome
    case .cancelled: .cancelled
    default: nil
    }
  }

  /// Why its run cancelled the stage, on ``Kind/stageCancelled``; otherwise `nil`.
  public var cause: (any Error)? {
    if case .cancelled(_, let cause) = values { cause } else { nil }
  }

  /// The error of the attempt that failed, on a retry's events; the ``BrokenCircuitError`` on
  /// ``Kind/runRejected``; otherwise `nil`.
  public var error: (any Error)? {
    switch values {
    case .retryWillWait(_, _, let error), .retryGaveUp(_, _, let error): error
    case .rejected(_, let error): error
    default: nil
    }
  }

  /// The number of the attempt that failed (from 1), on a retry's events; otherwise `nil`.
  public var attempt: Int? {
    switch values {
    case .retryWillWait(let attempt, _, _), .retryGaveUp(let attempt, _, _): attempt
    default: nil
    }
  }

  /// The wait before the next attempt, on a retry's events; otherwise `nil`.
  public var wait: Duration? {
    switch values {
    case .retryWillWait(_, let wait, _), .retryGaveUp(_, let wait, _): wait
    default: nil
    }
  }

  /// The hedge's number (from 1), on ``Kind/hedgeStarted``; otherwise `nil`.
  public var hedge: Int? {
    if case .hedge(let hedge) = values { hedge } else { nil }
  }

  /// The breaker, on a breaker's events; otherwise `nil`.
  public var breaker: CircuitBreaker? {
    switch values {
    case .breakerChanged(let breaker, _, _), .rejected(let breaker, _): breaker
    default: nil
    }
  }

  /// The breaker's states before and after, on ``Kind/circuitBreakerChanged``; otherwise `nil`.
  public var breakerChange: (from: CircuitBreaker.State, to: CircuitBreaker.State)? {
    if case .breakerChanged(_, let old, let new) = values { (old, new) } else { nil }
  }

  /// The payload of an event made with ``init(_:subject:payload:)``; `nil` for the library's
  /// own kinds, whose values are the typed properties.
  public var payload: (any Sendable)? {
    if case .other(let payload) = values { payload } else { nil }
  }

  /// The payload, if it is a `T`.
  ///
  /// - Parameter type: The payload's type.
  /// - Returns: The payload as a `T`, or `nil` if there is none or it is of another type.
  public func payload<T>(as type: T.Type) -> T? { payload as? T }

  /// What happened, in a line: the kind's name, the subject, then the values.
  public var description: String {
    let details = self.details
    return kind.name + " " + subject + (details.isEmpty ? "" : ": " + details)
  }

  /// The values, in a few words: `attempt 2, wait 0.1 seconds`.
  var details: String {
    switch values {
    case .started: ""
    case .ended(_, let outcome), .calledBackLate(_, let outcome): "\(outcome)"
    case .cancelled(_, let cause): Timeline.describe(cause: cause) ?? ""
    case .retryWillWait(let attempt, let wait, _), .retryGaveUp(let attempt, let wait, _):
      "attempt \(attempt), wait \(wait)"
    case .hedge(let hedge): "hedge \(hedge)"
    case .breakerChanged(_, let old, let new): "\(old) → \(new)"
    case .rejected(_, let error): "\(error)"
    case .other(let payload?): "\(payload)"
    case .other(nil): ""
    }
  }

  /// Calls the observer methods that stood for this event before ``RunObserver/observe(_:)``:
  /// what an observer that implements only them receives. Through `_RunObserverMethods`, whose
  /// requirements are not deprecated, so the library's own forwarding raises no warning.
  func forward(to observer: some _RunObserverMethods) {
    switch values {
    case .started(let stage): observer.stageStarted(stage)
    case .ended(let stage, let outcome): observer.stageEnded(stage, outcome: outcome)
    case .cancelled(let stage, let cause): observer.stageCancelled(stage, cause: cause)
    case .calledBackLate(let stage, let outcome):
      observer.stageCalledBackAfterCancellation(stage, outcome: outcome)
    case .retryWillWait(let attempt, let wait, let error):
      observer.retryWillWait(subject, attempt: attempt, wait: wait, error: error)
    case .retryGaveUp(let attempt, let wait, let error):
      observer.retryGaveUpAtDeadline(subject, attempt: attempt, wait: wait, error: error)
    case .hedge(let hedge): observer.hedgeStarted(subject, hedge: hedge)
    case .breakerChanged(let breaker, let old, let new):
      observer.circuitBreakerChanged(breaker, from: old, to: new)
    case .rejected(let breaker, let error): observer.runRejected(by: breaker, error: error)
    case .other: break  // A kind that came after the old methods: they have none for it.
    }
  }
}
