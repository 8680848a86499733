import AsyncCombinators
import Synchronization

/// The error the flaky payment service fails with.
struct ServiceUnavailable: Error, CustomStringConvertible {
  var description: String { "ServiceUnavailable" }
}

/// A clock that moves only when the scenario says, so the breaker's break is exact.
private final class ScenarioClock: Clock {
  struct Instant: InstantProtocol {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
  }

  private let elapsed = Mutex(Duration.zero)
  var now: Instant { Instant(offset: elapsed.withLock { $0 }) }
  var minimumResolution: Duration { .nanoseconds(1) }
  func advance(by duration: Duration) { elapsed.withLock { $0 += duration } }
  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    try await Task.sleep(for: now.duration(to: deadline))
  }
}

/// The payment service: the first `failures` calls fail, the rest succeed.
private func paymentService(failures: Int) -> AsyncFunc<Int, Int> {
  let calls = Atomic(0)
  return FakeNetwork.stage("charge", milliseconds: 10) { (amount: Int) throws -> Int in
    guard calls.add(1, ordering: .relaxed).newValue > failures else {
      throw ServiceUnavailable()
    }
    return amount
  }
}

extension Tour {
  /// A flaky service under a retry, then under a circuit breaker that opens and closes.
  public static let resilience = Scenario(
    title: "retries and a circuit breaker",
    story: """
      A payment service fails its first two calls. Under retry(3, delay: 10 ms, backoff: 2, \
      jitter: .equal) the third attempt succeeds: each ↻ row marks a retry about to wait. \
      Under a circuit breaker (half of at least two calls failed: open for 30 s), two \
      failures open it, the next call fails fast without reaching the service, and after \
      the break one probe goes through and closes it: each • row is one of the breaker's \
      events, named by its kind (a change of state, a call turned away).
      """
  ) {
    let retried = paymentService(failures: 2)
      .retry(3, delay: .milliseconds(10), backoff: 2, jitter: .equal)
    let retries = await Traced.run(
      "retry", retried, 42, expecting: [.oneAtATime("charge"), .failed("charge")])

    let clock = ScenarioClock()
    let payments = CircuitBreaker(
      name: "payments", failureRatio: 0.5, minimumThroughput: 2,
      breakDuration: .seconds(30), clock: clock)
    let charge = paymentService(failures: 2).guarded(by: payments)
    let timeline = Timeline()
    let log = Log()
    for amount in [10, 20, 30, 40] {
      if amount == 40 { clock.advance(by: .seconds(30)) }
      let result = await withCheckedContinuation { continuation in
        FakeNetwork.queue.async {
          charge.run(amount, observer: timeline) { continuation.resume(returning: $0) }
        }
      }
      switch result {
      case .success(let value): log("charge \(amount): \(value), breaker \(payments.state)")
      case .failure(let error): log("charge \(amount): \(error), breaker \(payments.state)")
      }
    }
    let breaker = Traced(
      label: "circuit breaker", structure: "\(charge)", result: "\(payments)",
      timeline: timeline, log: log.lines,
      expectations: [
        .oneAtATime("charge"), .failed("charge"),
        .logged([
          "charge 10: ServiceUnavailable, breaker closed",
          "charge 20: ServiceUnavailable, breaker open",
          "charge 30: circuit breaker payments is open: retry after 30.0 seconds, breaker open",
          "charge 40: 40, breaker closed",
        ]),
      ])
    return [retries, breaker]
  }
}
