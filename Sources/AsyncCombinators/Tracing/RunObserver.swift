import Synchronization

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
  /// The sample of a run moved the concurrency limit of an adaptive `limiter` from `old` to
  /// `new`, on the thread where that run ended.
  func limitChanged(
    _ limiter: Limiter, from old: Int, to new: Int, reason: AdaptiveLimit.Reason)
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
  /// Ignores adaptive limits: an observer that does not draw them need not implement this.
  public func limitChanged(
    _ limiter: Limiter, from old: Int, to new: Int, reason: AdaptiveLimit.Reason
  ) {}
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

  /// A record of one start, for a unit test of an observer of your own: call its methods with
  /// records as a run would.
  ///
  /// ```swift
  /// final class FailureLog: RunObserver {
  ///   let failed = Mutex<[String]>([])
  ///   func stageStarted(_ stage: StageRecord) {}
  ///   func stageEnded(_ stage: StageRecord, outcome: StageOutcome) {
  ///     if outcome == .failed { failed.withLock { $0.append(stage.name) } }
  ///   }
  /// }
  /// let log = FailureLog()
  /// let load = StageRecord(id: 1, name: "load")
  /// log.stageStarted(load)
  /// log.stageEnded(load, outcome: .failed)
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
    observer.stageStarted(event.record)
    return event
  }

  /// The stage's own end: it completed, or failed.
  func end(_ outcome: StageOutcome) {
    if ended.exchange(true, ordering: .acquiringAndReleasing) {
      observer.stageCalledBackAfterCancellation(record, outcome: outcome)
    } else {
      observer.stageEnded(record, outcome: outcome)
    }
  }

  /// The run cancelled the stage while it was running: that is when it ends, for a reader of
  /// the timeline, even if its body ignores the token and calls back later.
  func cancelled(cause: any Error) {
    guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
    observer.stageCancelled(record, cause: cause)
  }
}
