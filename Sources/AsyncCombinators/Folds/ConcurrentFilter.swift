extension AsyncFunc where Output == Bool {
  /// Runs this predicate on every element of an array, at most `limit` at a time, and keeps
  /// the elements it accepts, in input order.
  ///
  /// The first failure fails the whole and cancels the predicates still running.
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
  /// - Parameter limit: The most predicates running at once; at least 1.
  /// - Returns: A function from the array to the accepted elements.
  /// - Complexity: O(*n*) for *n* elements, as ``concurrentMap(limit:acceptableFailure:)``.
  public func concurrentFilter(limit: Int = .max) -> AsyncFunc<[Input], [Input]> {
    filterFold(limit: limit) { concurrentMap(limit: limit) }
  }

  /// Runs this predicate on every element of an array, at most `limit` at a time, keeps the
  /// elements it accepts, and reports progress as each predicate finishes.
  ///
  /// ``concurrentFilter(limit:)`` with a `progress` closure, called as
  /// ``concurrentMap(limit:acceptableFailure:progress:)`` calls it.
  ///
  /// ```swift
  /// let isEven = AsyncFunc<Int, Bool>.sync(name: "isEven") { $0 % 2 == 0 }
  /// let evens = isEven.concurrentFilter(limit: 1) { print($0) }
  /// print(try await evens([1, 2]))
  /// // prints 1/2 done (0 failed, 0 in flight)
  /// // prints 2/2 done (0 failed, 0 in flight)
  /// // prints [2]
  /// ```
  ///
  /// - Parameters:
  ///   - limit: The most predicates running at once; at least 1.
  ///   - progress: Called after each predicate finishes, never two calls at once.
  /// - Returns: A function from the array to the accepted elements.
  public func concurrentFilter(
    limit: Int = .max, progress: @escaping @Sendable (BatchProgress) -> Void
  ) -> AsyncFunc<[Input], [Input]> {
    filterFold(limit: limit) { concurrentMap(limit: limit, progress: progress) }
  }

  /// `verdicts` is made after the limit is checked, so that a bad limit is reported as the
  /// caller wrote it, `concurrentFilter`, not as the `concurrentMap` inside.
  private func filterFold(
    limit: Int, verdicts makeVerdicts: () -> AsyncFunc<[Input], [Bool]>
  ) -> AsyncFunc<[Input], [Input]> {
    precondition(limit >= 1, "concurrentFilter(limit: \(limit)): the limit must be at least 1")
    let verdicts = makeVerdicts()
    return AsyncFunc<[Input], [Input]>(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(
        program, limit == .max ? "concurrentFilter()" : "concurrentFilter(limit: \(limit))")
    ) { elements, token, complete in
      verdicts.run(elements, token: token) { result in
        complete(result.map { accepted(elements, $0) })
      }
    }
  }
}

/// The elements whose verdict is `true`, in order. A pointer loop, for the reason
/// `FanOutValues.unboxPresent` gives: `zip(…).filter(…).map(…)` unspecialized costs more than
/// the fold.
private func accepted<Element>(_ elements: [Element], _ verdicts: [Bool]) -> [Element] {
  var count = 0
  for verdict in verdicts where verdict { count += 1 }
  return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
    for (index, verdict) in verdicts.enumerated() where verdict {
      (buffer.baseAddress! + initialized).initialize(to: elements[index])
      initialized += 1
    }
  }
}
