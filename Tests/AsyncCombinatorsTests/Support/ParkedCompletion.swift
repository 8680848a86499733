import Synchronization

@testable import AsyncCombinators

/// Holds a stage's completion so a test decides when, and whether, the stage finishes.
///
/// Holding it also keeps it from being released uncalled, which the library would report.
final class ParkedCompletion<Output: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Output, any Error>) -> Void

  private let slot = Locked<Completion?>(nil)
  /// Opens when a completion has been parked: the stage has started.
  let arrived = Gate()

  init() {}

  func park(_ completion: @escaping Completion) {
    slot.withLock { $0 = completion }
    arrived.open()
  }

  /// Calls the parked completion (again, if called before).
  func complete(_ result: Result<Output, any Error>) {
    let completion = slot.withLock { $0 }
    completion?(result)
  }
}

/// Whether a result is the cancellation failure, unwrapped.
func isCancellation<Output>(_ result: Result<Output, any Error>) -> Bool {
  guard case .failure(let error) = result else { return false }
  return error is CancellationError
}

/// A lock-free tally, for counting completions that race on many threads.
///
/// Prefer it to a `Mutex`-guarded array under heavy contention: on Linux a contended `Mutex`
/// hands over through the kernel, which Thread Sanitizer does not see as synchronization.
final class Tally: Sendable {
  private let count = Atomic<Int>(0)
  init() {}
  func add() { count.add(1, ordering: .relaxed) }
  var value: Int { count.load(ordering: .relaxed) }
}
