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
    concurrentMap(limit: limit, acceptableFailure: acceptableFailure)
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
    concurrentMap(limit: limit, acceptableFailure: acceptableFailure)
      .map(name: "compact") { $0.compactMap { $0 } }
  }
}
