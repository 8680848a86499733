import Synchronization

/// Where a `timeout` stage's inner function reports, racing its timer: whichever comes first
/// completes the stage and cancels the other (the inner run, or the timer).
///
/// The inner run gets a child token of the run's, which the race cancels once decided. The
/// run's cancellation ends the race too, through a handler on the run's token, so that the
/// timer comes off at once rather than when the inner run answers. `@unchecked Sendable`:
/// the ``Keeper`` hands `report` to exactly one of the result, the timer and the
/// cancellation, whichever ends it first.
package final class TimeoutRace: Keeper<ArmedTimer>, StageParent, @unchecked Sendable {
  private var report: ModifierReport?
  private let duration: Duration
  package let inner: CancellationToken

  /// - Parameter inner: A child of the run's token, for the inner run. Its link is not kept:
  ///   `inner` is cancelled once decided, which ends it.
  package init(_ report: ModifierReport, _ duration: Duration, inner: CancellationToken) {
    self.report = report
    self.duration = duration
    self.inner = inner
  }

  /// The inner run's start has returned: arms the timer, unless the race is decided already;
  /// without a deadline (a zero duration), times out at once.
  package func started(_ deadline: TimerDeadline?, run token: CancellationToken) {
    guard let deadline else { return end(TimeoutError(duration: duration)) }
    if hasEnded { return }
    let registration = token.onCancel { self.end(CancellationError()) }
    let timer = deadline.schedule { self.end(TimeoutError(duration: self.duration)) }
    keep(ArmedTimer(timer: timer, registration: registration))
  }

  package func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    let value = value
    guard decide() else { return }
    report.take()!.succeed(value)
  }

  package func childFailed(_ error: any Error, tag _: Int) {
    guard decide() else { return }
    report.take()!.fail(error)
  }

  /// The timer or the run's cancellation came first: the inner run's token gets `error` as
  /// its cause (the run's own cause, if the run was cancelled).
  private func end(_ error: any Error) {
    guard decide(cause: error) else { return }
    report.take()!.fail(error)
  }

  /// Claims the win for the first of the result and the timer, and takes the timer back and
  /// ends the inner run's token: the inner run is over, or stops.
  private func decide(cause: any Error = CancellationError()) -> Bool {
    guard endAndRevoke() else { return false }
    inner.cancel(cause: cause)
    return true
  }
}
