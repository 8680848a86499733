import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Delivers this function's outcome, success or failure, as a value: the function itself
  /// always succeeds.
  ///
  /// Combined with ``concurrentMap(limit:acceptableFailure:progress:file:line:)`` it is JavaScript's
  /// `Promise.allSettled`: one result per element, in order, whatever fails. Cancellation is
  /// not an outcome: a cancelled run still fails with `CancellationError`.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
  ///   guard let number = Int(text) else { throw ParseError(text) }
  ///   return number
  /// }
  /// let all = parse.settled().concurrentMap()
  /// print(all)
  /// print(try await all(["1", "x"]).map { try? $0.get() })
  /// // prints parse.settled().concurrentMap()
  /// // prints [Optional(1), nil]
  /// ```
  ///
  /// - Returns: A function whose output is this function's result.
  @inlinable
  public func settled() -> AsyncFunc<Input, Result<Output, any Error>> {
    // Inlinable, so that the settlement and the `Result` it boxes are built in the caller's module,
    // with `Output` known
    // (Performance.md, "What the code's shape buys, and the check that holds it").
    let inner = program
    return AsyncFunc<Input, Result<Output, any Error>>(modifying: inner, call: "settled()") {
      input, token, report in
      inner.start(input, token: token, parent: Settlement<Output>(report))
    }
  }
}

/// Where a `settled` stage's inner function reports: every outcome but cancellation becomes
/// a value.
@usableFromInline
final class Settlement<Output: Sendable>: StageParent {
  @usableFromInline let report: ModifierReport

  @usableFromInline
  init(_ report: ModifierReport) { self.report = report }

  @usableFromInline
  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    let outcome: Result<Output, any Error> = .success(unbox(value))
    report.succeed(outcome)
  }

  @usableFromInline
  func childFailed(_ error: any Error, tag _: Int) {
    guard !(error is CancellationError) else { return report.fail(error) }
    let outcome: Result<Output, any Error> = .failure(error)
    report.succeed(outcome)
  }
}
