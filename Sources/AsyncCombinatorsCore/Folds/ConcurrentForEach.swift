import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs this function on every element of an array for its effect, at most `limit` at a
  /// time, and completes when all are done.
  ///
  /// ``concurrentMap(limit:acceptableFailure:progress:file:line:)`` without the outputs: the
  /// same scheduling, tolerance, cancellation and progress.
  ///
  /// ```swift
  /// let send = AsyncFunc<String, Void>.async(name: "send") { print("sent \($0)") }
  /// try await send.concurrentForEach(limit: 1)(["a", "b"])
  /// // prints sent a
  /// // prints sent b
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called as elements finish, as `concurrentMap` calls it: the last call
  ///     returns before the whole completes. `nil` (the default) for no reports.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: A function that completes once every element has.
  public func concurrentForEach(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc<[Input], Void> {
    checkFoldLimit(limit, of: "concurrentForEach", file: file, line: line)
    return mapFold(
      limit: limit, acceptableFailure: acceptableFailure, progress: progress,
      label: Label(name: nil, fileID: "\(file)", line: Int(line))
    )
    .map(name: "forEach") { _ in }
  }

  /// Runs this function on every element of an array, at most `limit` at a time, and keeps
  /// the non-`nil` outputs in input order.
  ///
  /// ``concurrentMap(limit:acceptableFailure:progress:file:line:)`` followed by dropping the
  /// `nil`s: an element that failed within `acceptableFailure` is left out as a `nil` is.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int?>.sync(name: "parse") { Int($0) }
  /// print(try await parse.concurrentCompactMap()(["1", "x", "3"]))
  /// // prints [1, 3]
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: The most elements running at once; at least 1.
  ///   - acceptableFailure: How many elements may fail before the whole does.
  ///   - progress: Called as elements finish, as `concurrentMap` calls it; `nil` for none.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: A function from the array to the non-`nil` outputs.
  public func concurrentCompactMap<Wrapped>(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc<[Input], [Wrapped]> where Output == Wrapped? {
    checkFoldLimit(limit, of: "concurrentCompactMap", file: file, line: line)
    return mapFold(
      limit: limit, acceptableFailure: acceptableFailure, progress: progress,
      label: Label(name: nil, fileID: "\(file)", line: Int(line))
    )
    .map(name: "compact") { $0.compactMap { $0 } }
  }
}
