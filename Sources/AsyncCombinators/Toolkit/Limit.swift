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
  /// - Parameters:
  ///   - n: The most runs in flight at once; at least 1.
  ///   - file: The caller's file, named when `n` is out of range.
  ///   - line: The caller's line, named when `n` is out of range.
  /// - Returns: A function with the same input and output, gated.
  /// - Complexity: O(1) amortized per run to enter and leave the gate.
  public func limit(_ n: Int, file: StaticString = #fileID, line: UInt = #line) -> AsyncFunc {
    precondition(n >= 1, "limit(\(n)): the limit must be at least 1", file: file, line: line)
    let gate = Admission(limit: n)
    let inner = program
    return AsyncFunc(modifying: inner, call: "limit(\(n))") { input, token, report in
      gate.enter(token: token) {
        // The slot is held until every body this run started has called back, even when the
        // run itself is over sooner: cancelled, timed out, beaten in a race.
        let work = InFlightWork(within: token.inFlight) { gate.leave() }
        let (child, link) = token.makeChild(counting: work)
        inner.start(input, token: child, sink: SlotHolder(report, work, link))
      }
    }
  }
}

/// Where a `limit` stage's inner function reports: the result goes on at once, and gives up
/// its hold on the slot, which comes back once no body of the run is left in flight.
private final class SlotHolder: StageSink {
  private let report: StageReport
  private let work: InFlightWork
  private let link: CancellationToken.Registration

  init(
    _ report: StageReport, _ work: InFlightWork, _ link: CancellationToken.Registration
  ) {
    self.report = report
    self.work = work
    self.link = link
  }

  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) {
    release()
    report.succeed(value)
  }

  func stageFailed(_ error: any Error, branch _: Int) {
    release()
    report.fail(error)
  }

  /// First, so that the slot limits this function, not what runs after it.
  private func release() {
    link.remove()
    work.leave()
  }
}
