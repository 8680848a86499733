import AsyncCombinatorsKernel

extension AsyncFunc where Output == Bool {
  /// Runs this predicate on every element of an array, at most `limit` at a time, and keeps
  /// the elements it accepts, in input order.
  ///
  /// Scheduling, cancellation, tolerance and progress are those of
  /// ``concurrentMap(limit:acceptableFailure:progress:file:line:)``. An element whose predicate
  /// failed within `acceptableFailure` is left out, as if rejected; the first failure beyond
  /// it fails the whole with ``FailureRateExceeded`` and cancels the predicates still running.
  ///
  /// ```swift
  /// let isReachable = AsyncFunc<String, Bool>.async(name: "isReachable") { host in
  ///   host.hasSuffix(".org")
  /// }
  /// let reachable = isReachable.concurrentFilter(limit: 3)
  /// print(reachable)
  /// print(try await reachable(["swift.org", "example.com", "llvm.org"]))
  /// // prints isReachable.concurrentFilter(limit: 3)
  /// // prints ["swift.org", "llvm.org"]
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: The most predicates running at once; at least 1.
  ///   - acceptableFailure: How many predicates may fail before the whole does.
  ///   - progress: Called as predicates finish, as `concurrentMap` calls it; `nil` for none.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: A function from the array to the accepted elements.
  /// - Complexity: O(*n*) for *n* elements, as
  ///   ``concurrentMap(limit:acceptableFailure:progress:file:line:)``.
  public func concurrentFilter(
    limit: Int = .max, acceptableFailure: FailureTolerance = .zero,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc<[Input], [Input]> {
    checkFoldLimit(limit, of: "concurrentFilter", file: file, line: line)
    return arrayFold(
      "concurrentFilter", limit: limit, acceptableFailure: acceptableFailure,
      defaultTolerance: .zero, progress: progress,
      label: Label(name: nil, fileID: "\(file)", line: Int(line))
    ) { elements, verdicts, _ in accepted(elements, verdicts) }
  }
}

/// The elements whose verdict is `true`, in order; an element whose predicate failed has no
/// verdict and is left out. A loop by index, as `FanOutValues.unboxPresent` is, not
/// `zip(…).filter(…).map(…)`
/// (Performance.md, "What the code's shape buys, and the check that holds it").
private func accepted<Element>(_ elements: [Element], _ verdicts: FanOutValues) -> [Element] {
  var count = 0
  for index in 0..<verdicts.count where verdicts.value(at: index, as: Bool.self) == true {
    count += 1
  }
  return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
    for index in 0..<verdicts.count
    where initialized < count && verdicts.value(at: index, as: Bool.self) == true {
      (buffer.baseAddress! + initialized).initialize(to: elements[index])
      initialized += 1
    }
  }
}
