import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs this function on every element of an array, at most `limit` at a time, and returns
  /// the outputs in input order.
  ///
  /// Elements start in index order as slots free up; no thread waits for a slot. A slot is
  /// held until the element's callback bodies have all called back, not only until its result
  /// is in: an element that timed out while its body ignores cancellation keeps its slot, as
  /// ``limit(_:file:line:)`` counts it. Failures within `acceptableFailure` are dropped from
  /// the output (which keeps the order of the rest); the first failure beyond it fails the
  /// whole at once with ``FailureRateExceeded``, cancels the elements still running and
  /// starts no more. Cancelling the run does the same with `CancellationError`, and so does an
  /// element that fails with `CancellationError` itself: cancellation is never a tolerated
  /// failure.
  ///
  /// With a `progress` closure, each finished element, failed or not, queues a
  /// ``BatchProgress`` whose `total` is the array's count. The reports are delivered on a
  /// serial lane of their own, never on the thread that finished an element, so a slow
  /// closure delays neither the elements nor the next start: reports that pile up while it
  /// runs are coalesced into the latest. Calls never overlap, `completed` only goes up, and
  /// the last call (the one that saw the last element) returns before the result is
  /// delivered. An element that finishes after the whole has failed or been cancelled is not
  /// reported.
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
  /// With progress (reports may be coalesced, but the last one always comes):
  ///
  /// ```swift
  /// let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
  /// let squares = square.concurrentMap(limit: 2) { progress in
  ///   if progress.completed == progress.total { print(progress) }
  /// }
  /// print(try await squares([1, 2, 3]))
  /// // prints 3/3 done (0 failed, 0 in flight)
  /// // prints [1, 4, 9]
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called as elements finish, never two calls at once, on a lane of its own;
  ///     `nil` (the default) for no reports.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: A function from the array to the outputs of the elements that succeeded.
  /// - Complexity: O(*n*) time and memory for *n* elements; the stack stays flat however many
  ///   complete synchronously. With `progress`, at most one report value and one closure call
  ///   per element.
  public func concurrentMap(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc<[Input], [Output]> {
    checkFoldLimit(limit, of: "concurrentMap", file: file, line: line)
    return mapFold(
      limit: limit, acceptableFailure: acceptableFailure, progress: progress,
      label: Label(name: nil, fileID: "\(file)", line: Int(line)))
  }

  /// The map itself, once the caller's limit has been checked: `concurrentForEach` and
  /// `concurrentCompactMap` build on it after checking the limit under their own names.
  func mapFold(
    limit: Int, acceptableFailure: FailureTolerance,
    progress: (@Sendable (BatchProgress) -> Void)?, label: Label
  ) -> AsyncFunc<[Input], [Output]> {
    arrayFold(
      "concurrentMap", limit: limit, acceptableFailure: acceptableFailure,
      defaultTolerance: .zero, progress: progress, label: label
    ) { _, values, _ in values.unboxPresent(as: Output.self) }
  }

  /// Every array fold: runs this function on each element through a `FanOut`, makes the
  /// fold's output from the elements' values with `output` once all have finished, and fails
  /// with ``FailureRateExceeded`` past the tolerance or with `CancellationError`.
  ///
  /// - Parameters:
  ///   - name: The fold's name, for its description, which lists the arguments that differ
  ///     from their defaults.
  ///   - defaultTolerance: The fold's default `acceptableFailure`, left out of the description.
  ///   - output: Makes the output from the input, the values (none where an element failed
  ///     within the tolerance) and those failures.
  func arrayFold<FoldOutput>(
    _ name: String, limit: Int, acceptableFailure: FailureTolerance,
    defaultTolerance: FailureTolerance, progress: (@Sendable (BatchProgress) -> Void)?,
    label: Label,
    output: @escaping @Sendable ([Input], FanOutValues, [FanOutFailure]) -> FoldOutput
  ) -> AsyncFunc<[Input], FoldOutput> {
    let program = program
    var arguments: [String] = []
    if limit != .max { arguments.append("limit: \(limit)") }
    if acceptableFailure != defaultTolerance {
      arguments.append("acceptableFailure: \(acceptableFailure)")
    }
    let call = name + "(" + arguments.joined(separator: ", ") + ")"
    return AsyncFunc<[Input], FoldOutput>(modifying: program, call: call, label: label) {
      input, token, completion in
      let elements = unbox(input, as: [Input].self)
      let allowed = acceptableFailure.allowedFailures(outOf: elements.count)
      FanOut.run(
        program, on: elements, limit: limit, allowedFailures: allowed, token: token,
        progress: progress
      ) { outcome in
        switch outcome {
        case .finished(let values, let failures):
          completion.succeed(output(elements, values, failures))
        case .tooManyFailures(let failures):
          completion.fail(
            FanOut<Input>.rateExceeded(
              failures, count: elements.count, tolerance: acceptableFailure))
        case .cancelled:
          completion.fail(CancellationError())
        }
      }
    }
  }
}

/// Stops the program when a fold's limit is below 1, naming the fold as the caller wrote it
/// and the caller's line: a limit of 0 would never finish, and a silent clamp would hide it.
func checkFoldLimit(_ limit: Int, of fold: String, file: StaticString, line: UInt) {
  require(
    limit >= 1, "\(fold)(limit: \(limit)): the limit must be at least 1", file: file, line: line)
}
