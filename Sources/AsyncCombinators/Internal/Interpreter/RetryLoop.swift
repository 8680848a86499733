import Synchronization

/// The attempts of one `retry` run.
///
/// Attempts start from a loop, not from the previous attempt's completion: an attempt that
/// fails synchronously sets `again` and returns, and the loop starts the next one, so a
/// thousand synchronous failures use one stack frame. An attempt that fails later, after the
/// loop has exited, re-enters the loop on its own thread (or the retry timer's).
///
/// Each attempt starts the inner program directly and reports to the loop, as a modifier's
/// inner function reports to its sink: no run of its own, no registration.
///
/// Not generic over the output, which it only passes on: a generic class, and the state nested
/// in it, would cost a lookup of their type metadata in the runtime's cache on every run.
final class RetryLoop: StageSink {
  private struct State {
    var attempts = 0
    /// Whether a thread is in `loop()` and will start the next attempt when asked.
    var inLoop = false
    var again = false
  }

  private let inner: Program
  private let input: AnyValue
  private let token: CancellationToken
  private let policy: RetryPolicy
  private let report: StageReport
  private let state: Locked<State>

  init(
    _ inner: Program, input: AnyValue, token: CancellationToken, policy: RetryPolicy,
    report: StageReport
  ) {
    self.inner = inner
    self.input = input
    self.token = token
    self.policy = policy
    self.report = report
    state = Locked(State())
  }

  func start() { startAttempt() }

  /// Starts the next attempt after `wait`, as when an attempt of this loop has failed.
  func retry(after wait: Duration) {
    if wait > .zero {
      // A cancelled wait ends the run: nothing else would report it.
      policy.clock.after(wait, token) { expired in
        expired ? self.startAttempt() : self.finish(.failure(CancellationError()))
      }
    } else {
      startAttempt()
    }
  }

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
      inner.start(input, token: token, sink: self)
      again = state.withLock { state in
        defer { state.again = false }
        if !state.again { state.inLoop = false }
        return state.again
      }
    }
  }

  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    attemptEnded(.success(value))
  }

  func stageFailed(_ error: any Error, branch _: Int) {
    attemptEnded(.failure(error))
  }

  private func attemptEnded(_ result: AnyResult) {
    let attempt = state.withLock { state in
      state.attempts += 1
      return state.attempts
    }
    switch policy.step(after: result, attempt: attempt, isCancelled: token.isCancelled) {
    case .finish(let result):
      finish(result)
    case .retry(after: let wait):
      retry(after: wait)
    }
  }

  private func finish(_ result: AnyResult) { report.complete(result) }
}

/// What `retry` does once an attempt has ended.
enum RetryStep<Output> {
  /// Completes the whole run with this result.
  case finish(Result<Output, any Error>)
  /// Starts another attempt after this wait (zero: at once).
  case retry(after: Duration)
}

/// When and how often `retry` tries again.
@usableFromInline
struct RetryPolicy: Sendable {
  let times: Int
  let delay: Duration
  let backoff: Double
  let shouldRetry: @Sendable (any Error) -> Bool
  /// What the waits are measured on.
  var clock = TimerClock.continuous

  /// What to do when attempt number `attempt` (from 1) ended with `result`.
  ///
  /// A success finishes. A failure of a cancelled run finishes with `CancellationError`: the
  /// run was stopped, and the error it would have retried is not its outcome. Otherwise a
  /// failure is retried while attempts are left, unless it is a cancellation or declined.
  func step<Output>(
    after result: Result<Output, any Error>, attempt: Int, isCancelled: Bool
  ) -> RetryStep<Output> {
    guard case .failure(let error) = result else { return .finish(result) }
    guard !isCancelled else { return .finish(.failure(CancellationError())) }
    guard attempt <= times, !(error is CancellationError), shouldRetry(error) else {
      return .finish(result)
    }
    return .retry(after: delay(before: attempt))
  }

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
