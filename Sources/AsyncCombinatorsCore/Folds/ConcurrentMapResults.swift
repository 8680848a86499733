import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs this function on every element of an array, at most `limit` at a time, and returns
  /// every element's outcome in input order: its output, or the error it failed with.
  ///
  /// ``concurrentMap(limit:acceptableFailure:progress:file:line:)`` keeps only the outputs; this keeps the failures
  /// too, so that within the tolerance you still see which elements failed and why. Beyond the
  /// tolerance the whole still fails with ``FailureRateExceeded``, cancels the elements still
  /// running and starts no more. The default tolerance is ``FailureTolerance/unlimited``: asking
  /// for every outcome usually means wanting them all. An element that fails with
  /// `CancellationError` cancels the whole with `CancellationError`, as cancelling the run does;
  /// it is never an entry in the results.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
  ///   guard let number = Int(text) else { throw ParseError() }
  ///   return number
  /// }
  /// let outcomes = try await parse.concurrentMapResults(limit: 2)(["1", "x", "3"])
  /// print(outcomes.map { (try? $0.get()).map(String.init) ?? "failed" })
  /// // prints ["1", "failed", "3"]
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called as elements finish, as
  ///     ``concurrentMap(limit:acceptableFailure:progress:file:line:)`` calls it; `nil` for none.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: A function from the array to one `Result` per element, in input order.
  /// - Complexity: O(*n*) time and memory for *n* elements, as
  ///   ``concurrentMap(limit:acceptableFailure:progress:file:line:)``.
  public func concurrentMapResults(
    limit: Int = .max, acceptableFailure: FailureTolerance = .unlimited,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc<[Input], [Result<Output, any Error>]> {
    checkFoldLimit(limit, of: "concurrentMapResults", file: file, line: line)
    return arrayFold(
      "concurrentMapResults", limit: limit, acceptableFailure: acceptableFailure,
      defaultTolerance: .unlimited, progress: progress,
      label: Label(name: nil, fileID: "\(file)", line: Int(line))
    ) { _, values, failures in results(values, failures, as: Output.self) }
  }
}

/// Every element's outcome in input order: a value, or the failure recorded for its index.
/// A pointer loop, for the reason `FanOutValues.unboxPresent` gives.
private func results<Output>(
  _ values: FanOutValues, _ failures: [FanOutFailure], as _: Output.Type
) -> [Result<Output, any Error>] {
  var errors: [Int: any Error] = [:]
  for failure in failures { errors[failure.index] = failure.error }
  return Array(unsafeUninitializedCapacity: values.count) { buffer, initialized in
    for index in 0..<values.count {
      let result: Result<Output, any Error> =
        if let value = values.value(at: index, as: Output.self) { .success(value) } else {
          .failure(errors[index] ?? CancellationError())
        }
      (buffer.baseAddress! + index).initialize(to: result)
    }
    initialized = values.count
  }
}
