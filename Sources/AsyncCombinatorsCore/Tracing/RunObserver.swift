import AsyncCombinatorsKernel

/// Watches the stages of a run start and end: the hook that timelines are built on.
///
/// Pass an observer to ``AsyncFunc/run(_:observer:completion:)``. It sees every primitive
/// stage (each function made with an initializer or a lift), including those inside parallel
/// branches and wrapped operations, on the thread where the event happens. When no observer
/// is given, the cost is one `nil` check per stage. Observers are classes: a run hands the
/// same instance to every branch it starts.
public protocol RunObserver: AnyObject, Sendable {
  /// A stage is about to start, on the current thread.
  func stageStarted(_ stage: StageRecord)
  /// The stage completed, on the thread that completed it. (Or its run cancelled it: see
  /// ``stageCancelled(_:)``, which by default comes here with `.cancelled`.)
  func stageEnded(_ stage: StageRecord, outcome: StageOutcome)
  /// The stage's run cancelled it while it was running, on the cancelling thread: that ends the
  /// stage, before its body has called back. A body that then calls back is a late call,
  /// ``stageCalledBackAfterCancellation(_:outcome:)``.
  ///
  /// Apart from ``stageEnded(_:outcome:)`` because a body may itself complete with
  /// `CancellationError` (`.cancelled`) just as its run cancels it: an observer that tells a
  /// body's end from the run's must not guess it from the outcome.
  func stageCancelled(_ stage: StageRecord)
  /// A stage that its run had already cancelled called back anyway (or released its completion
  /// uncalled, `.failed`), on that thread: the library ignored the call. Its
  /// ``stageEnded(_:outcome:)`` came before, at the cancellation.
  func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome)
  /// ``stageCancelled(_:)``, with why its run cancelled it: the token's
  /// ``CancellationToken/cause``, such as the ``TimeoutError`` of a `timeout` that fired, or
  /// the failure of a sibling. By default, calls ``stageCancelled(_:)``.
  func stageCancelled(_ stage: StageRecord, cause: any Error)

  /// A `retry` is about to wait `wait` before its next attempt, on the thread where attempt
  /// number `attempt` (from 1) failed with `error`. `stage` is the retry as written:
  /// `fetch.retry(3, delay: 0.1 seconds)`.
  func retryWillWait(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `retry` gave up after attempt number `attempt` failed with `error`, and the run failed
  /// with that error, because its wait of `wait` would have ended at or after the run's
  /// deadline (``CancellationToken/deadline(on:)``). Not preceded by ``retryWillWait(_:attempt:wait:error:)``.
  func retryGaveUpAtDeadline(_ stage: String, attempt: Int, wait: Duration, error: any Error)
  /// A `hedged` function started hedge number `hedge` (from 1; the primary is 0), on the thread
  /// that started it. `stage` is the hedged function as written.
  func hedgeStarted(_ stage: String, hedge: Int)
  /// A run's outcome, or its admission, moved `breaker` from one state to another.
  func circuitBreakerChanged(
    _ breaker: CircuitBreaker, from old: CircuitBreaker.State, to new: CircuitBreaker.State)
  /// `breaker` turned a run away without calling its function.
  func runRejected(by breaker: CircuitBreaker, error: BrokenCircuitError)
}

extension RunObserver {
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
}

extension RunObserver {
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

  package func stageStarted(_ stage: StageRecord) { observer.stageStarted(stage) }
  package func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {
    observer.stageEnded(stage, outcome: outcome)
  }
  package func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome) {
    observer.stageCalledBackAfterCancellation(stage, outcome: outcome)
  }
  package func stageCancelled(_ stage: StageRecord, cause: any Error) {
    observer.stageCancelled(stage, cause: cause)
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
