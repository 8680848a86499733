import AsyncCombinators
import Dispatch
import Synchronization

/// Stand-ins for network and CPU work: they answer after a few milliseconds, on one serial
/// queue, as a `URLSession` delegate queue would.
public enum FakeNetwork {
  /// The queue that delivers every fake response.
  public static let queue = DispatchQueue(label: "tour.network")

  /// A named stage that calls `started(input)` at once, then computes `body(input)` and
  /// delivers it `milliseconds` later.
  ///
  /// Cancelling the run delivers `CancellationError` at once and drops the pending response.
  public static func stage<Input, Output>(
    _ name: String, milliseconds: Int,
    started: @escaping @Sendable (Input) -> Void = { _ in },
    _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc<Input, Output> {
    AsyncFunc(name: name) { input, token, complete in
      started(input)
      let once = Once()
      let registration = token.onCancel {
        if once.claim() { complete(.failure(CancellationError())) }
      }
      queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
        registration.remove()
        if once.claim() { complete(Result { try body(input) }) }
      }
    }
  }
}

/// Lets exactly one of several racing callers through.
private final class Once: Sendable {
  private let claimed = Atomic<Bool>(false)

  func claim() -> Bool {
    !claimed.exchange(true, ordering: .acquiringAndReleasing)
  }
}
