extension AsyncFunc {
  /// Runs this function on every element of an array, at most `limit` at a time, and returns
  /// the outputs in input order.
  ///
  /// Elements start in index order as slots free up; no thread waits for a slot. Failures
  /// within `acceptableFailure` are dropped from the output (which keeps the order of the
  /// rest); the first failure beyond it fails the whole at once with
  /// ``FailureRateExceeded``, cancels the elements still running and starts no more.
  /// Cancelling the run does the same with `CancellationError`, and so does an element
  /// that fails with `CancellationError` itself: cancellation is never a tolerated failure.
  ///
  /// ```swift
  /// let square = AsyncFunc<Int, Int>.async(name: "square") { $0 * $0 }
  /// let squares = square.concurrentMap(limit: 2)
  /// print(squares)
  /// print(try await squares([1, 2, 3, 4]))
  /// // prints square.concurrentMap(limit: 2)
  /// // prints [1, 4, 9, 16]
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  /// - Returns: A function from the array to the outputs of the elements that succeeded.
  /// - Complexity: O(*n*) time and memory for *n* elements; the stack stays flat however many
  ///   complete synchronously.
  public func concurrentMap(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero
  ) -> AsyncFunc<[Input], [Output]> {
    mapFold(limit: limit, acceptableFailure: acceptableFailure, progress: nil)
  }

  /// Runs this function on every element of an array, at most `limit` at a time, returns the
  /// outputs in input order, and reports progress as each element finishes.
  ///
  /// ``concurrentMap(limit:acceptableFailure:)`` with a `progress` closure. It is called once
  /// per finished element, failed or not, with a ``BatchProgress`` whose `total` is the
  /// array's count. Calls never overlap, `completed` goes up by one each time, and the last
  /// call returns before the result is delivered. An element that finishes after the whole
  /// has failed or been cancelled is not reported.
  ///
  /// ```swift
  /// let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
  /// let squares = square.concurrentMap(limit: 2) { progress in
  ///   print(progress.completed, "of", progress.total ?? 0)
  /// }
  /// print(try await squares([1, 2, 3]))
  /// // prints 1 of 3
  /// // prints 2 of 3
  /// // prints 3 of 3
  /// // prints [1, 4, 9]
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called after each element finishes, never two calls at once, on the thread
  ///     that delivered a completion. Keep it quick: it holds up the next report.
  /// - Returns: A function from the array to the outputs of the elements that succeeded.
  /// - Complexity: As ``concurrentMap(limit:acceptableFailure:)``, plus one call per element.
  public func concurrentMap(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: @escaping @Sendable (BatchProgress) -> Void
  ) -> AsyncFunc<[Input], [Output]> {
    mapFold(limit: limit, acceptableFailure: acceptableFailure, progress: progress)
  }

  private func mapFold(
    limit: Int, acceptableFailure: FailureTolerance,
    progress: (@Sendable (BatchProgress) -> Void)?
  ) -> AsyncFunc<[Input], [Output]> {
    precondition(limit >= 1, "concurrentMap(limit: \(limit)): the limit must be at least 1")
    let program = program
    var call = limit == .max ? "concurrentMap(" : "concurrentMap(limit: \(limit)"
    if acceptableFailure != .zero {
      call += (limit == .max ? "" : ", ") + "acceptableFailure: \(acceptableFailure)"
    }
    return AsyncFunc<[Input], [Output]>(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, call + ")")
    ) { elements, token, complete in
      let allowed = acceptableFailure.allowedFailures(outOf: elements.count)
      FanOut.run(
        program, on: elements, limit: limit, allowedFailures: allowed, token: token,
        progress: progress
      ) { outcome in
        switch outcome {
        case .finished(let values, _):
          complete(.success(values.unboxPresent(as: Output.self)))
        case .tooManyFailures(let failures):
          complete(
            .failure(
              FanOut<Input>.rateExceeded(
                failures, count: elements.count, tolerance: acceptableFailure)))
        case .cancelled:
          complete(.failure(CancellationError()))
        }
      }
    }
  }
}
