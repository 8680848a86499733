extension AsyncFunc {
  /// Shares one gate among all runs of the returned function: at most `n` run this function
  /// at once, and the others start in the order they arrived.
  ///
  /// Create the limited function once and reuse it; each call of `limit(_:)` makes a new,
  /// independent gate. A run that waits for its turn holds no thread (`run` returns at once),
  /// and cancelling it takes it out of the queue and completes it with `CancellationError`.
  ///
  /// The limit counts real work: a slot is taken when a run starts this function and given
  /// back when every callback body the run started has called back (or released its
  /// completion uncalled). A run that is cancelled, times out or loses a race delivers its
  /// result at once, but keeps its slot until a body that ignores cancellation is done.
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
        // The slot is held until every body this run started has called back, even when the
        // run itself is over sooner: cancelled, timed out, beaten in a race.
        let work = InFlightWork(within: token.inFlight) { gate.leave() }
        let (child, link) = token.makeChild(counting: work)
        inner.runNested(input, token: child) { result in
          link.remove()
          // Give up the result's hold first: the slot limits this function, not what runs
          // after it.
          work.leave()
          complete(result)
        }
      }
    }
  }
}
