import Synchronization

/// The shared state of one `latest()` function: which run is current, and the results
/// waiting to be delivered.
///
/// Each run takes a generation number. A result is judged when it is delivered, under the
/// lock: a run whose generation is no longer the newest delivers `CancellationError`, whatever
/// its body produced. Deliveries also go out one at a time, in arrival order (a baton passed
/// through the outbox), so a result judged current just before a newer run began has been
/// handed over completely before that newer run's result is.
final class Supersession<Output: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Output, any Error>) -> Void

  private struct Delivery {
    let generation: UInt64
    let result: Result<Output, any Error>
    let complete: Completion
  }

  private struct State {
    var current: UInt64 = 0
    /// The token of the current run until it delivers, so that the next run can cancel it.
    var inFlight: CancellationToken?
    /// A thread is delivering; later results wait in `outbox` and it delivers them too.
    var isDelivering = false
    var outbox = FIFO<Delivery>()

    /// The next delivery and its verdict, or `nil` (and the baton put down) when none is left.
    mutating func takeNext() -> (Completion, Result<Output, any Error>)? {
      guard let delivery = outbox.popFirst() else {
        isDelivering = false
        return nil
      }
      guard delivery.generation == current else {
        return (delivery.complete, .failure(CancellationError()))
      }
      inFlight = nil
      return (delivery.complete, delivery.result)
    }
  }

  private let state = Locked(State())

  /// Makes the run with `token` the current one and cancels the run it supersedes.
  ///
  /// - Returns: The new run's generation, to hand back to ``deliver(_:of:to:)``.
  func begin(_ token: CancellationToken) -> UInt64 {
    let (generation, superseded) = state.withLock { state in
      state.current += 1
      defer { state.inFlight = token }
      return (state.current, state.inFlight)
    }
    superseded?.cancel()
    return generation
  }

  /// Delivers a run's result to `complete`: as it is if the run is still the newest,
  /// `CancellationError` if a newer run has begun.
  func deliver(
    _ result: Result<Output, any Error>, of generation: UInt64, to complete: @escaping Completion
  ) {
    var next = state.withLock { state -> (Completion, Result<Output, any Error>)? in
      state.outbox.append(Delivery(generation: generation, result: result, complete: complete))
      guard !state.isDelivering else { return nil }
      state.isDelivering = true
      return state.takeNext()
    }
    while let (complete, verdict) = next {
      complete(verdict)
      next = state.withLock { $0.takeNext() }
    }
  }
}
