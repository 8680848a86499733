extension AsyncFunc {
  /// Shares one gate among all runs of the returned function: at most `n` run this function
  /// at once, and the others start in the order they arrived.
  ///
  /// Create the limited function once and reuse it; each call of `limit(_:)` makes a new,
  /// independent gate. A run that waits for its turn holds no thread (`run` returns at once),
  /// and cancelling it takes it out of the queue and completes it with `CancellationError`.
  ///
  /// ```swift
  /// let export = AsyncFunc<String, String>.async(name: "export") { "\($0).mp4" }
  /// let oneAtATime = export.limit(1)
  /// print(oneAtATime)
  /// print(try await oneAtATime.concurrentMap()(["a", "b"]))
  /// // prints export.limit(1)
  /// // prints ["a.mp4", "b.mp4"]
  /// ```
  ///
  /// - Parameter n: The most runs in flight at once; at least 1.
  /// - Returns: A function with the same input and output, gated.
  /// - Complexity: O(1) amortized per run to enter and leave the gate.
  public func limit(_ n: Int) -> AsyncFunc {
    precondition(n >= 1, "limit(\(n)): the limit must be at least 1")
    let gate = Admission(limit: n)
    let inner = self
    return AsyncFunc(
      label: Label(name: nil, fileID: #fileID, line: #line),
      shape: .modified(program, "limit(\(n))")
    ) { input, token, complete in
      gate.enter(token: token) {
        inner.run(input, token: token) { result in
          // Free the slot first: the slot limits this function, not what runs after it.
          gate.leave()
          complete(result)
        }
      }
    }
  }
}
