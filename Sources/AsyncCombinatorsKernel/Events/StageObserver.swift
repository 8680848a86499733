import Synchronization

/// What the kernel tells a run's observer: the public `RunObserver`, a layer up, is seen
/// through an adapter of this shape, so that the kernel names nothing above it.
package protocol StageObserver: AnyObject, Sendable {
  func stageStarted(_ stage: StageRecord)
  func stageEnded(_ stage: StageRecord, outcome: StageOutcome)
  func stageCalledBackAfterCancellation(_ stage: StageRecord, outcome: StageOutcome)
  func stageCancelled(_ stage: StageRecord, cause: any Error)
}

/// How a stage ended, as seen by a ``RunObserver``.
public enum StageOutcome: Sendable, Hashable {
  /// It completed with a value.
  case succeeded
  /// It completed with an error other than `CancellationError`.
  case failed
  /// It completed with `CancellationError`: cancellation is not failure.
  case cancelled

  package init(_ error: any Error) {
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
  let observer: any StageObserver
  private let ended = Atomic<Bool>(false)

  private init(record: StageRecord, observer: any StageObserver) {
    self.record = record
    self.observer = observer
  }

  static func begin(_ shape: Shape, _ observer: any StageObserver) -> StageEvent? {
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
