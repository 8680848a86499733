import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Transforms this function's failure: `transform` gets the error and returns the one to
  /// report instead. A success passes through unchanged.
  ///
  /// `CancellationError` is not a failure: it is never handed to `transform`, so a cancelled
  /// run still fails with `CancellationError`. To turn an error into a value, use
  /// ``recover(_:)``.
  ///
  /// ```swift
  /// struct SyncFailed: Error { let reason: String }
  /// let upload = AsyncFunc<String, Int>.sync(name: "upload") { _ in throw TimeoutError(duration: .seconds(5)) }
  /// let sync = upload.mapError { SyncFailed(reason: "\($0)") }
  /// print(sync)
  /// sync.run("a.txt") { print($0) }
  /// // prints upload.mapError { … }
  /// // prints failure(App.SyncFailed(reason: "TimeoutError: no result within 5.0 seconds"))
  /// ```
  ///
  /// - Parameter transform: Maps this function's error to the error to report.
  /// - Returns: A function with the same input and output.
  public func mapError(
    _ transform: @escaping @Sendable (any Error) -> any Error
  ) -> AsyncFunc {
    let inner = program
    let label = Label(name: nil, fileID: #fileID, line: #line)
    return AsyncFunc(modifying: inner, call: "mapError { … }", label: label) {
      input, token, completion in
      inner.start(input, token: token, parent: ErrorMapping(completion, token, transform))
    }
  }
}

/// Where a `mapError` stage's inner function reports: a failure other than cancellation goes
/// through the transform.
private final class ErrorMapping: StageParent {
  private let completion: CallbackCompletion
  private let token: CancellationToken
  private let transform: @Sendable (any Error) -> any Error

  init(
    _ completion: CallbackCompletion, _ token: CancellationToken,
    _ transform: @escaping @Sendable (any Error) -> any Error
  ) {
    self.completion = completion
    self.token = token
    self.transform = transform
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    // Cancelled first: the run's outcome is the cancellation, whatever arrives later.
    if token.isCancelled { return completion.fail(CancellationError()) }
    completion.succeed(value)
  }

  func childFailed(_ error: any Error, tag _: Int) {
    if error is CancellationError || token.isCancelled {
      return completion.fail(CancellationError())
    }
    completion.fail(transform(error))
  }
}
