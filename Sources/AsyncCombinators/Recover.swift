extension AsyncFunc {
  /// Turns a failure into a value: when this function fails, `transform` gets the error and
  /// returns the output instead, or throws the failure to report.
  ///
  /// `CancellationError` is not a failure and is never recovered.
  ///
  /// ```swift
  /// let avatarOrPlaceholder = avatar.recover { _ in .placeholder }
  /// let cached = fetch.recover { error in
  ///   guard error is URLError else { throw error }
  ///   return cache.last
  /// }
  /// print(AsyncFunc<Int, Int>.sync(name: "parse") { _ in throw ParseError() }.recover { _ in 0 })
  /// // prints parse.recover { … }
  /// ```
  ///
  /// - Parameter transform: Maps an error to an output; a throw is the new failure.
  /// - Returns: A function with the same input and output.
  public func recover(
    _ transform: @escaping @Sendable (any Error) throws -> Output
  ) -> AsyncFunc {
    let inner = self
    return AsyncFunc(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "recover { … }")
    ) { input, token, complete in
      inner.run(input, token: token) { result in
        guard case .failure(let error) = result, !(error is CancellationError) else {
          return complete(result)
        }
        complete(Result { try transform(error) })
      }
    }
  }
}
