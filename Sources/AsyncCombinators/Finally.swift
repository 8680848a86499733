extension AsyncFunc {
  /// Runs `cleanup` with this function's input after this function finishes, whether it
  /// succeeded or failed, then delivers this function's result.
  ///
  /// HoneyBee's `finally`, used for per-item progress. The result waits for the cleanup.
  /// When this function fails, its error is the result whatever the cleanup does; when it
  /// succeeds and the cleanup fails, the cleanup's error is. A cancelled run is over: the
  /// cleanup does not start.
  ///
  /// ```swift
  /// let progress = AsyncFunc<String, Void>.sync(name: "progress") { print("done with \($0)") }
  /// let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }.finally(progress)
  /// print(upload)
  /// print(try await upload("a.mov"))
  /// // prints upload.finally(progress)
  /// // prints done with a.mov
  /// // prints 5
  /// ```
  ///
  /// - Parameter cleanup: Runs after this function, with its input.
  /// - Returns: A function with the same input and output.
  public func finally(_ cleanup: AsyncFunc<Input, Void>) -> AsyncFunc {
    let inner = self
    return AsyncFunc(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "finally(\(cleanup))")
    ) { input, token, complete in
      inner.runNested(input, token: token) { result in
        cleanup.runNested(input, token: token) { cleaned in
          if case .success = result, case .failure(let error) = cleaned {
            return complete(.failure(error))
          }
          complete(result)
        }
      }
    }
  }
}
