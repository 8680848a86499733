import Dispatch

/// The error of a run that ``AsyncFunc/timeout(_:clock:)`` stopped because it took too long.
public struct TimeoutError: Error, Equatable, CustomStringConvertible {
  /// The time the run was given.
  public let duration: Duration

  /// Creates the error for a run that was given `duration`.
  public init(duration: Duration) { self.duration = duration }

  /// Says how long the run was given.
  public var description: String { "TimeoutError: no result within \(duration)" }
}

extension AsyncFunc {
  /// Fails with ``TimeoutError`` when this function has not completed within `duration`,
  /// and cancels it.
  ///
  /// Whichever comes first wins: the result or the deadline. The inner run starts first, and
  /// the timer is armed only if no result has arrived by the time that start returns, so a
  /// stage that completes synchronously is never timed out, even by a zero duration. The
  /// timer holds no thread and is removed when the result arrives or the run is cancelled.
  /// The deadline is measured on `clock`: a Dispatch timer by default, or a `TestClock`
  /// (from `AsyncCombinatorsTesting`) that fires when the test advances it.
  ///
  /// ```swift
  /// let slow = AsyncFunc<Int, Int>.async(name: "slow") { x in
  ///   try await Task.sleep(for: .seconds(10))
  ///   return x
  /// }
  /// let bounded = slow.timeout(.milliseconds(50))
  /// print(bounded)
  /// bounded.run(1) { print($0) }
  /// // prints slow.timeout(0.05 seconds)
  /// // prints failure(TimeoutError: no result within 0.05 seconds)
  /// ```
  ///
  /// - Parameters:
  ///   - duration: The time allowed, from the start of the run; not negative. Zero times out
  ///     anything that does not complete synchronously.
  ///   - clock: The clock the deadline is measured on; `ContinuousClock()` unless given.
  /// - Returns: A function with the same input and output, bounded in time.
  public func timeout<C: Clock>(_ duration: Duration, clock: C = ContinuousClock()) -> AsyncFunc
  where C.Duration == Duration {
    precondition(duration >= .zero, "timeout(\(duration)): the duration must not be negative")
    let inner = self
    return AsyncFunc(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "timeout(\(duration))")
    ) { input, token, complete in
      let (child, link) = token.makeChild()
      let decided = Once()
      // Fixed before the inner run starts, so the time it takes to start counts.
      let deadline = TimerDeadline(after: duration, on: clock)
      inner.run(input, token: child) { result in
        guard decided.claim() else { return }
        link.remove()
        child.cancel()  // Stops the timer, if it was armed.
        complete(result)
      }
      // A result that arrived during the start has cancelled `child`: no timer is needed.
      guard !child.isCancelled else { return }
      deadline.arm(token: child) {
        guard decided.claim() else { return }
        link.remove()
        child.cancel()  // Stops the inner run.
        complete(.failure(TimeoutError(duration: duration)))
      }
    }
  }
}
