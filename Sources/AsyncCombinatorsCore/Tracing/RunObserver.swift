import AsyncCombinatorsKernel

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

/// The adapter the kernel reports a run's stages through: the observer the run was given.
package final class RunObserverAdapter: StageObserver {
  package let observer: any RunObserver

  package init(_ observer: any RunObserver) { self.observer = observer }

  package func stageStarted(_ stage: StageRecord) { observer.observe(.stageStarted(stage)) }
  package func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {
    observer.observe(.stageEnded(stage, outcome: outcome))
  }
  package func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome) {
    observer.observe(.stageCalledBackAfterCancellation(stage, outcome: outcome))
  }
  package func stageCancelled(_ stage: StageRecord, cause: any Error) {
    observer.observe(.stageCancelled(stage, cause: cause))
  }
}

extension CancellationToken {
  /// The observer of the run this token belongs to, if it has one.
  var runObserver: (any RunObserver)? { (observer as? RunObserverAdapter)?.observer }

  /// A root token whose run `observer` watches.
  convenience init(observedBy observer: any RunObserver) {
    self.init(observer: RunObserverAdapter(observer))
  }
}
