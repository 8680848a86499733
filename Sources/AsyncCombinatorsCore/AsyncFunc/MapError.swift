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
    AsyncFunc(wrapping: self, call: "mapError { … }") { input, token, complete in
      self.run(input, token: token) { result in
        switch result {
        case .failure(let error) where !(error is CancellationError):
          complete(.failure(transform(error)))
        default:
          complete(result)
        }
      }
    }
  }
}
