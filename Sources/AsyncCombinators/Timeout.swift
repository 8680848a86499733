import Dispatch

/// The error of a run that ``AsyncFunc/timeout(_:)`` stopped because it took too long.
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
  /// Whichever comes first wins: the result or the deadline. The timer holds no thread and
  /// is cancelled when the result arrives or the run is cancelled.
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
  /// - Parameter duration: The time allowed; not negative. Zero times out anything that does
  ///   not complete synchronously.
  /// - Returns: A function with the same input and output, bounded in time.
  public func timeout(_ duration: Duration) -> AsyncFunc {
    precondition(duration >= .zero, "timeout(\(duration)): the duration must not be negative")
    let inner = self
    return AsyncFunc(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "timeout(\(duration))")
    ) { input, token, complete in
      let (child, link) = token.makeChild()
      let decided = Once()
      OneShotTimer.after(duration, token: child) {
        guard decided.claim() else { return }
        link.remove()
        child.cancel()  // Stops the inner run.
        complete(.failure(TimeoutError(duration: duration)))
      }
      inner.run(input, token: child) { result in
        guard decided.claim() else { return }
        link.remove()
        child.cancel()  // Stops the timer.
        complete(result)
      }
    }
  }
}
