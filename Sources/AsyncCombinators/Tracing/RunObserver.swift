import Synchronization

/// Watches a run: the hook that timelines are built on.
///
/// Pass an observer to ``AsyncFunc/run(_:observer:completion:)``. It receives each thing that
/// happens in the run as one ``RunEvent``, through ``observe(_:)``, on the thread where it
/// happens: every primitive stage starting and ending (each function made with an initializer
/// or a lift, including those inside parallel branches and wrapped operations), a retry about
/// to wait, a hedge starting, a breaker changing state, and the kinds new capabilities add.
/// When no observer is given, the cost is one `nil` check per stage, and no event is made.
/// Observers are classes: a run hands the same instance to every branch it starts.
///
/// ```swift
/// final class Starts: RunObserver {
///   let names = Mutex<[String]>([])
///   func observe(_ event: RunEvent) {
///     if event.kind == .stageStarted { names.withLock { $0.append(event.subject) } }
///   }
/// }
/// let starts = Starts()
/// let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
/// (double +> double).run(1, observer: starts) { print($0) }
/// print(starts.names.withLock { $0 })
/// // prints success(4)
/// // prints ["double", "double"]
/// ```
///
/// An observer written for the methods that came before ``observe(_:)``
/// (``stageStarted(_:)``, ``stageEnded(_:outcome:)``, ``retryWillWait(_:attempt:wait:error:)``…)
/// keeps working: the default ``observe(_:)`` calls the one that stands for each event. Events
/// of kinds added since have no such method and reach only ``observe(_:)``.
public protocol RunObserver: AnyObject, Sendable, _RunObserverMethods {
  /// Something happened in the run, on the thread where it happened.
  ///
  /// An observer tests the kinds it knows (`event.kind == .stageEnded`) and reads their values
  /// from the event's typed properties; kinds it does not know it ignores or shows by their
  /// ``RunEvent/Kind/name``. By default, calls the method of `_RunObserverMethods` that
  /// stands for the event, if there is one.
  ///
  /// - Parameter event: What happened.
  func observe(_ event: RunEvent)

  /// A stage is about to start, on the current thread.
  @available(*, deprecated, message: "implement observe(_:) and test event.kind == .stageStarted")
  func stageStarted(_ stage: StageRecord)
  /// The stage completed, on the thread that completed it.
  @available(*, deprecated, message: "implement observe(_:) and test event.kind == .stageEnded")
  func stageEnded(_ stage: StageRecord, outcome: StageOutcome)
  /// The stage's run cancelled it while it was running.
  @available(
    *, deprecated, message: "implement observe(_:) and test event.kind == .stageCancelled"
  )
  func stageCancelled(_ stage: StageRecord)
  /// A stage that its run had already cancelled called back anyway.
  @available(
    *, deprecated,
    message: "implement observe(_:) and test event.kind == .stageCalledBackAfterCancellation"
  )
  func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome)
  /// The stage's run cancelled it while it was running, with why.
  @available(
    *, deprecated, message: "implement observe(_:) and test event.kind == .stageCancelled"
  )
  func stageCancelled(_ stage: StageRecord, cause: any Error)
  /// A `retry` is about to wait before its next attempt.
  @available(
    *, deprecated, message: "implement observe(_:) and test event.kind == .retryWillWait"
  )
  func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `retry` gave up because its wait would have passed the run's deadline.
  @available(
    *, deprecated, message: "implement observe(_:) and test event.kind == .retryGaveUpAtDeadline"
  )
  func retryGaveUpAtDeadline(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `hedged` function started a hedge.
  @available(*, deprecated, message: "implement observe(_:) and test event.kind == .hedgeStarted")
  func hedgeStarted(_ stage: String, hedge: Int)
  /// A run's outcome, or its admission, moved `breaker` from one state to another.
  @available(
    *, deprecated, message: "implement observe(_:) and test event.kind == .circuitBreakerChanged"
  )
  func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State)
  /// `breaker` turned a run away without calling its function.
  @available(*, deprecated, message: "implement observe(_:) and test event.kind == .runRejected")
  func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError)
}

extension RunObserver {
  /// Calls the method of `_RunObserverMethods` that stands for `event`, so that an observer
  /// written for those methods receives what it always did; ignores kinds that have none.
  public func observe(_ event: RunEvent) {
    event.forward(to: self)
  }
}

/// The methods a ``RunObserver`` implemented before ``RunObserver/observe(_:)``: one per kind
/// of event, each with a default that ignores it (or, for a cancellation, calls the method it
/// refines).
///
/// Kept so that observers written for them keep compiling and receiving their events. New
/// observers implement ``RunObserver/observe(_:)``, which receives every kind, those added
/// later included. ``RunObserver`` restates each method as deprecated, so that a call of one
/// (outside the library) says so; the library itself calls them only through this protocol.
public protocol _RunObserverMethods: AnyObject {
  /// A stage is about to start, on the current thread: ``RunEvent/Kind/stageStarted``.
  func stageStarted(_ stage: StageRecord)
  /// The stage completed, on the thread that completed it: ``RunEvent/Kind/stageEnded``. (Or
  /// its run cancelled it: see ``stageCancelled(_:)``, which by default comes here with
  /// `.cancelled`.)
  func stageEnded(_ stage: StageRecord, outcome: StageOutcome)
  /// The stage's run cancelled it while it was running, on the cancelling thread:
  /// ``RunEvent/Kind/stageCancelled``. By default, calls ``stageEnded(_:outcome:)`` with
  /// `.cancelled`.
  func stageCancelled(_ stage: StageRecord)
  /// A stage that its run had already cancelled called back anyway:
  /// ``RunEvent/Kind/stageCalledBackAfterCancellation``.
  func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome)
  /// ``stageCancelled(_:)``, with why its run cancelled it. By default, calls
  /// ``stageCancelled(_:)``.
  func stageCancelled(_ stage: StageRecord, cause: any Error)
  /// A `retry` is about to wait: ``RunEvent/Kind/retryWillWait``.
  func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `retry` gave up at the run's deadline: ``RunEvent/Kind/retryGaveUpAtDeadline``.
  func retryGaveUpAtDeadline(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `hedged` function started a hedge: ``RunEvent/Kind/hedgeStarted``.
  func hedgeStarted(_ stage: String, hedge: Int)
  /// A breaker changed state: ``RunEvent/Kind/circuitBreakerChanged``.
  func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State)
  /// A breaker turned a run away: ``RunEvent/Kind/runRejected``.
  func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError)
}

extension _RunObserverMethods {
  /// Ignores starts: an observer that implements ``RunObserver/observe(_:)`` need not
  /// implement this.
  public func stageStarted(_ stage: StageRecord) {}

  /// Ignores ends: an observer that implements ``RunObserver/observe(_:)`` need not implement
  /// this.
  public func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {}

  /// An end with `.cancelled`: an observer that draws both the same need not implement this.
  public func stageCancelled(_ stage: StageRecord) {
    stageEnded(stage, outcome: .cancelled)
  }

  /// Ignores late calls: an observer that does not draw them need not implement this.
  public func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome) {}

  /// ``stageCancelled(_:)``: an observer that does not show causes need not implement this.
  public func stageCancelled(_ stage: StageRecord, cause _: any Error) {
    stageCancelled(stage)
  }

  /// Ignores retries: an observer that does not draw them need not implement this.
  public func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error) {}
  /// Ignores retries given up: an observer that does not draw them need not implement this.
  public func retryGaveUpAtDeadline(
    _ stage: String, attempt: Int, wait: Duration, error: any Error
  ) {}
  /// Ignores hedges: an observer that does not draw them need not implement this.
  public func hedgeStarted(_ stage: String, hedge: Int) {}
  /// Ignores breakers: an observer that does not draw them need not implement this.
  public func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State
  ) {}
  /// Ignores rejections: an observer that does not draw them need not implement this.
  public func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError) {}
}

/// How a stage ended, as seen by a ``RunObserver``.
public enum StageOutcome: Sendable, Hashable {
  /// It completed with a value.
  case succeeded
  /// It completed with an error other than `CancellationError`.
  case failed
  /// It completed with `CancellationError`: cancellation is not failure.
  case cancelled

  init(_ error: any Error) {
    self = error is CancellationError ? .cancelled : .failed
  }
}

/// One start of one stage, as seen by a ``RunObserver``.
public struct StageRecord: Sendable, Hashable {
  /// Distinguishes this start from every other in the process.
  public let id: UInt64
  /// The stage's `name:`, or `File.swift:line` where it was made.
  public let name: String

  /// A record of one start, for a unit test of an observer of your own: send it the events of
  /// records as a run would.
  ///
  /// ```swift
  /// final class FailureLog: RunObserver {
  ///   let failed = Mutex<[String]>([])
  ///   func observe(_ event: RunEvent) {
  ///     if event.outcome == .failed { failed.withLock { $0.append(event.subject) } }
  ///   }
  /// }
  /// let log = FailureLog()
  /// let load = StageRecord(id: 1, name: "load")
  /// log.observe(.stageStarted(load))
  /// log.observe(.stageEnded(load, outcome: .failed))
  /// print(log.failed.withLock { $0 })
  /// // prints ["load"]
  /// ```
  ///
  /// - Parameters:
  ///   - id: Tells this start from every other; a run gives each start a new one.
  ///   - name: The stage's name.
  public init(id: UInt64, name: String) {
    self.id = id
    self.name = name
  }
}

/// Pairs a stage's start with its end for an observer.
///
/// A callback stage ends either when it calls back or when its run cancels it, whichever comes
/// first; the other, if it comes, is a late call (or nothing, for a cancellation after the end).
final class StageEvent: Sendable {
  private static let nextID = Atomic<UInt64>(0)

  let record: StageRecord
  let observer: any RunObserver
  private let ended = Atomic<Bool>(false)

  private init(record: StageRecord, observer: any RunObserver) {
    self.record = record
    self.observer = observer
  }

  static func begin(_ shape: Shape, _ observer: any RunObserver) -> StageEvent? {
    guard case .stage(let label) = shape else { return nil }
    let id = nextID.add(1, ordering: .relaxed).newValue
    let event = StageEvent(record: StageRecord(id: id, name: label.display), observer: observer)
    observer.observe(.stageStarted(event.record))
    return event
  }

  /// The stage's own end: it completed, or failed.
  func end(_ outcome: StageOutcome) {
    if ended.exchange(true, ordering: .acquiringAndReleasing) {
      observer.observe(.stageCalledBackAfterCancellation(record, outcome: outcome))
    } else {
      observer.observe(.stageEnded(record, outcome: outcome))
    }
  }

  /// The run cancelled the stage while it was running: that is when it ends, for a reader of
  /// the timeline, even if its body ignores the token and calls back later.
  func cancelled(cause: any Error) {
    guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
    observer.observe(.stageCancelled(record, cause: cause))
  }
}
