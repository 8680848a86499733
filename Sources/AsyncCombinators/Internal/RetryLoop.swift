import Synchronization

/// The attempts of one `retry` run.
///
/// Attempts start from a loop, not from the previous attempt's completion: an attempt that
/// fails synchronously sets `again` and returns, and the loop starts the next one, so a
/// thousand synchronous failures use one stack frame. An attempt that fails later, after the
/// loop has exited, re-enters the loop on its own thread (or the retry timer's).
final class RetryLoop<Input: Sendable, Output: Sendable>: Sendable {
  private struct State {
    var attempts = 0
    /// Whether a thread is in `loop()` and will start the next attempt when asked.
    var inLoop = false
    var again = false
  }

  private let inner: AsyncFunc<Input, Output>
  private let input: Input
  private let token: CancellationToken
  private let policy: RetryPolicy
  private let complete: AsyncFunc<Input, Output>.Completion
  private let state = Locked(State())

  init(
    _ inner: AsyncFunc<Input, Output>, input: Input, token: CancellationToken,
    policy: RetryPolicy, complete: @escaping AsyncFunc<Input, Output>.Completion
  ) {
    self.inner = inner
    self.input = input
    self.token = token
    self.policy = policy
    self.complete = complete
  }

  func start() { startAttempt() }

  private func startAttempt() {
    let enter = state.withLock { state in
      if state.inLoop {
        state.again = true
        return false
      }
      state.inLoop = true
      return true
    }
    guard enter else { return }
    var again = true
    while again {
      inner.run(input, token: token) { self.attemptEnded($0) }
      again = state.withLock { state in
        defer { state.again = false }
        if !state.again { state.inLoop = false }
        return state.again
      }
    }
  }

  private func attemptEnded(_ result: Result<Output, any Error>) {
    let attempt = state.withLock { state in
      state.attempts += 1
      return state.attempts
    }
    guard case .failure(let error) = result, attempt <= policy.times, !token.isCancelled,
      !(error is CancellationError), policy.shouldRetry(error)
    else { return complete(result) }
    let wait = policy.delay(before: attempt)
    if wait > .zero {
      OneShotTimer.after(wait, token: token) { self.startAttempt() }
    } else {
      startAttempt()
    }
  }
}

/// When and how often `retry` tries again.
struct RetryPolicy: Sendable {
  let times: Int
  let delay: Duration
  let backoff: Double
  let shouldRetry: @Sendable (any Error) -> Bool

  /// The wait before retry number `retry` (from 1): `delay * backoff^(retry - 1)`.
  func delay(before retry: Int) -> Duration {
    guard delay > .zero, backoff != 1 else { return delay }
    return delay * power(backoff, retry - 1)
  }
}

/// `base` to a small non-negative integer power, without Foundation.
private func power(_ base: Double, _ exponent: Int) -> Double {
  var result = 1.0
  for _ in 0..<exponent { result *= base }
  return result
}
