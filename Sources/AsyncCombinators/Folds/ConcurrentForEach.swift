extension AsyncFunc {
  /// Runs this function on every element of an array for its effect, at most `limit` at a
  /// time, and completes when all are done.
  ///
  /// ``concurrentMap(limit:acceptableFailure:)`` without the outputs: the same scheduling,
  /// tolerance and cancellation.
  ///
  /// ```swift
  /// let send = AsyncFunc<String, Void>.async(name: "send") { print("sent \($0)") }
  /// try await send.concurrentForEach(limit: 1)(["a", "b"])
  /// // prints sent a
  /// // prints sent b
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  /// - Returns: A function that completes once every element has.
  public func concurrentForEach(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero
  ) -> AsyncFunc<[Input], Void> {
    checkLimit(limit, of: "concurrentForEach")
    return concurrentMap(limit: limit, acceptableFailure: acceptableFailure)
      .map(name: "forEach") { _ in }
  }

  /// Runs this function on every element of an array for its effect, at most `limit` at a
  /// time, and reports progress as each element finishes.
  ///
  /// ``concurrentForEach(limit:acceptableFailure:)`` with a `progress` closure, called as
  /// ``concurrentMap(limit:acceptableFailure:progress:)`` calls it: the last call returns
  /// before the whole completes.
  ///
  /// ```swift
  /// let send = AsyncFunc<String, Void>.sync(name: "send") { _ in }
  /// try await send.concurrentForEach(limit: 1) { print($0.completed) }(["a", "b"])
  /// // prints 1
  /// // prints 2
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called after each element finishes, never two calls at once.
  /// - Returns: A function that completes once every element has.
  public func concurrentForEach(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: @escaping @Sendable (BatchProgress) -> Void
  ) -> AsyncFunc<[Input], Void> {
    checkLimit(limit, of: "concurrentForEach")
    return concurrentMap(limit: limit, acceptableFailure: acceptableFailure, progress: progress)
      .map(name: "forEach") { _ in }
  }

  /// Runs this function on every element of an array, at most `limit` at a time, and keeps
  /// the non-`nil` outputs in input order.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int?>.sync(name: "parse") { Int($0) }
  /// print(try await parse.concurrentCompactMap()(["1", "x", "3"]))
  /// // prints [1, 3]
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  /// - Returns: A function from the array to the non-`nil` outputs.
  public func concurrentCompactMap<Wrapped>(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero
  ) -> AsyncFunc<[Input], [Wrapped]> where Output == Wrapped? {
    checkLimit(limit, of: "concurrentCompactMap")
    return concurrentMap(limit: limit, acceptableFailure: acceptableFailure)
      .map(name: "compact") { $0.compactMap { $0 } }
  }
}

/// Checks a fold's limit before the `concurrentMap` inside it does, so that a bad limit is
/// reported as the caller wrote it.
private func checkLimit(_ limit: Int, of fold: String) {
  precondition(limit >= 1, "\(fold)(limit: \(limit)): the limit must be at least 1")
}
