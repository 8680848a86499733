extension AsyncFunc {
  /// Delivers this function's outcome, success or failure, as a value: the function itself
  /// always succeeds.
  ///
  /// Combined with ``concurrentMap(limit:acceptableFailure:)`` it is JavaScript's
  /// `Promise.allSettled`: one result per element, in order, whatever fails. Cancellation is
  /// not an outcome: a cancelled run still fails with `CancellationError`.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
  ///   guard let number = Int(text) else { throw ParseError(text) }
  ///   return number
  /// }
  /// let all = parse.settled().concurrentMap()
  /// print(all)
  /// print(try await all(["1", "x"]).map { try? $0.get() })
  /// // prints parse.settled().concurrentMap()
  /// // prints [Optional(1), nil]
  /// ```
  ///
  /// - Returns: A function whose output is this function's result.
  public func settled() -> AsyncFunc<Input, Result<Output, any Error>> {
    let inner = self
    return AsyncFunc<Input, Result<Output, any Error>>(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "settled()")
    ) { input, token, complete in
      inner.runNested(input, token: token) { result in
        if case .failure(let error) = result, error is CancellationError {
          return complete(.failure(error))
        }
        complete(.success(result))
      }
    }
  }
}
