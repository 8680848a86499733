import AsyncCombinatorsKernel
import Dispatch

/// The progress reports of one fold or stream, on their way to the user's closure.
///
/// Kept inside the owner's locked state and filled under the same lock that counts
/// completions, so each report is newer than the one before it. Reports are delivered on a
/// lane of their own, never on the thread that finished an element: the thread whose report
/// finds nobody delivering starts a drainer (``startDraining(_:)``) and returns at once, and
/// the drainer calls the closure outside the lock until nothing is left. A report queued while
/// one waits replaces it: a slow closure sees fewer, newer reports rather than a growing
/// backlog, `completed` only goes up, and the last report is never dropped. No thread waits.
struct ProgressQueue: Sendable {
  /// The newest report not yet delivered.
  private var latest: BatchProgress?
  /// Whether a drainer has been started and has not yet found the queue empty.
  private(set) var isDraining = false

  /// Queues `report` in place of any not yet delivered; `true` means the caller must start a
  /// drainer.
  mutating func enqueue(_ report: BatchProgress) -> Bool {
    latest = report
    guard !isDraining else { return false }
    isDraining = true
    return true
  }

  /// The next report for the drainer, or `nil`, which also ends its turn.
  mutating func next() -> BatchProgress? {
    if let report = latest.take() { return report }
    isDraining = false
    return nil
  }

  /// Runs `drain`, the owner's loop over ``next()``, on the reports' own lane: a thread of
  /// Dispatch's pool, where a slow closure holds up no element's completion and no start.
  /// Only one drainer runs at a time (``isDraining``), so the calls never overlap.
  static func startDraining(_ drain: @escaping @Sendable () -> Void) {
    DispatchQueue.global().async(execute: drain)
  }
}
