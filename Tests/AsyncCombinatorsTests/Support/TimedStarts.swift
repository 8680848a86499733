import AsyncCombinators
import AsyncCombinatorsTesting

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Records when each run of ``function`` started, on a test clock, and how the runs that
/// failed ended: for the limiters' timing tests.
final class TimedStarts: Sendable {
  private let times = Locked<[Duration]>([])
  private let failures = Locked<[any Error]>([])
  let clock: TestClock

  init(_ clock: TestClock) { self.clock = clock }

  /// A function that records the instant of each run's start.
  var function: AsyncFunc<Int, Int> {
    AsyncFunc.sync(name: "call") { input in
      self.times.withLock { $0.append(self.clock.now.sinceStart) }
      return input
    }
  }

  /// A run's completion: keeps its error, if any.
  func completion(_ result: Result<Int, any Error>) {
    if case .failure(let error) = result { failures.withLock { $0.append(error) } }
  }

  /// When each run started, since the clock's start.
  var all: [Duration] { times.withLock { $0 } }
  var count: Int { times.withLock { $0.count } }
  var rejections: [any Error] { failures.withLock { $0 } }
  var rejected: Int { failures.withLock { $0.count } }
  /// The `retryAfter` of the last rejection: `nil` when none, `.some(nil)` for a rejection
  /// without a hint.
  var lastHint: Duration?? {
    failures.withLock { $0.last.map { ($0 as? LimitExceeded)?.retryAfter } }
  }
}
