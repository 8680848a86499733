import AsyncCombinatorsKernel

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
  /// - Precondition: `n` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - n: The most runs in flight at once; at least 1.
  ///   - file: The caller's file, named when `n` is out of range.
  ///   - line: The caller's line, named when `n` is out of range.
  /// - Returns: A function with the same input and output, gated.
  /// - Complexity: O(1) amortized per run to enter and leave the gate.
  public func limit(_ n: Int, file: StaticString = #fileID, line: UInt = #line) -> AsyncFunc {
    require(n >= 1, "limit(\(n)): the limit must be at least 1", file: file, line: line)
    return limitedStage(LimitedFunction(Admission(capacity: n), program), call: "limit(\(n))")
  }

  /// The stage every gated modifier makes: each run enters `function`'s gate.
  func limitedStage(_ function: LimitedFunction, call: String) -> AsyncFunc {
    AsyncFunc(modifying: program, call: call) { input, token, report in
      function.enter(input, token: token, report: report)
    }
  }
}
