/// The progress reports of one fold or stream, waiting to be delivered one at a time.
///
/// Kept inside the owner's locked state and filled under the same lock that counts
/// completions, so reports queue in the order `completed` grew. Whichever thread finds nobody
/// draining becomes the drainer and calls the user's closure outside the lock, until the queue
/// is empty; a thread that finds a drainer at work only queues and returns. That serializes the
/// calls without any thread waiting.
struct ProgressQueue: Sendable {
  private var pending = FIFO<BatchProgress>()
  /// Whether some thread is delivering reports now.
  private(set) var isDraining = false

  /// Queues `report`; `true` means the caller has become the drainer and must drain.
  mutating func enqueue(_ report: BatchProgress) -> Bool {
    pending.append(report)
    guard !isDraining else { return false }
    isDraining = true
    return true
  }

  /// The next report for the drainer, or `nil`, which also ends its turn.
  mutating func next() -> BatchProgress? {
    if let report = pending.popFirst() { return report }
    isDraining = false
    return nil
  }
}
