import Synchronization

/// The shared state of one `latest()` function: which run is current, and the results
/// waiting to be delivered.
///
/// Each run takes a generation number. A result is judged when it is delivered, under the
/// lock: a run whose generation is no longer the newest delivers `CancellationError`, whatever
/// its body produced. Deliveries also go out one at a time, in arrival order (a baton passed
/// through the outbox), so a result judged current just before a newer run began has been
/// handed over completely before that newer run's result is.
///
/// Not generic over the output, and neither are its nested state and deliveries: results travel
/// erased, to the stage's own completion. Keep generics out of it
/// (Performance.md, "What the code's shape buys, and the check that holds it").
package final class Supersession: Sendable {
  package init() {}

  private struct Delivery {
    let generation: UInt64
    let result: AnyResult
    let completion: CallbackCompletion
  }

  private struct State {
    var current: UInt64 = 0
    var inFlight: CancellationToken?
    var isDelivering = false
    var outbox = FIFO<Delivery>()

    mutating func takeNext() -> (CallbackCompletion, AnyResult)? {
      guard let delivery = outbox.popFirst() else {
        isDelivering = false
        return nil
      }
      guard delivery.generation == current else {
        return (delivery.completion, .failure(CancellationError()))
      }
      inFlight = nil
      return (delivery.completion, delivery.result)
    }
  }

  private let state = Locked(State())

  /// Makes the run on `token` the current one, and cancels the one it supersedes.
  package func begin(_ token: CancellationToken) -> UInt64 {
    let (generation, superseded) = state.withLock { state in
      state.current += 1
      defer { state.inFlight = token }
      return (state.current, state.inFlight)
    }
    superseded?.cancel(cause: SupersededError())
    return generation
  }

  /// Hands `result` of run `generation` to `completion`, or `CancellationError` if a newer
  /// run has begun, after every delivery queued before it.
  package func deliver(
    _ result: AnyResult, of generation: UInt64, to completion: CallbackCompletion
  ) {
    var next = state.withLock { state -> (CallbackCompletion, AnyResult)? in
      state.outbox.append(
        Delivery(generation: generation, result: result, completion: completion))
      guard !state.isDelivering else { return nil }
      state.isDelivering = true
      return state.takeNext()
    }
    while let (completion, verdict) = next {
      completion.complete(verdict)
      next = state.withLock { $0.takeNext() }
    }
  }
}
