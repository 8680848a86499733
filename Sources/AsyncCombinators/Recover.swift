extension AsyncFunc {
  /// Turns a failure into a value: when this function fails, `transform` gets the error and
  /// returns the output instead, or throws the failure to report.
  ///
  /// `CancellationError` is not a failure and is never recovered.
  ///
  /// ```swift
  /// let avatar = fetchAvatar.recover { _ in .placeholder }
  /// let cached = fetch.recover { error in
  ///   guard error is URLError else { throw error }
  ///   return cache.last
  /// }
  /// print(AsyncFunc<Int, Int>.sync(name: "parse") { _ in throw ParseError() }.recover { _ in 0 })
  /// // prints parse.recover { … }
  /// ```
  ///
  /// - Parameter transform: Maps an error to an output; a throw is the new failure.
  /// - Returns: A function with the same input and output.
  public func recover(
    _ transform: @escaping @Sendable (any Error) throws -> Output
  ) -> AsyncFunc {
    let inner = program
    let recovery: @Sendable (any Error) throws -> AnyValue = { try transform($0) }
    return AsyncFunc(modifying: inner, call: "recover { … }") { input, token, completion in
      inner.start(input, token: token, sink: Recovery(completion, recovery))
    }
  }
}

/// Where a `recover` stage's inner function reports: a failure other than cancellation goes
/// through the transform.
private final class Recovery: StageSink {
  private let completion: StageCompletion
  private let transform: @Sendable (any Error) throws -> AnyValue

  init(
    _ completion: StageCompletion, _ transform: @escaping @Sendable (any Error) throws -> AnyValue
  ) {
    self.completion = completion
    self.transform = transform
  }

  func stageSucceeded(_ value: consuming AnyValue, branch _: Int) { completion.succeed(value) }

  func stageFailed(_ error: any Error, branch _: Int) {
    guard !(error is CancellationError) else { return completion.fail(error) }
    let recovered: AnyValue
    do { recovered = try transform(error) } catch { return completion.fail(error) }
    completion.succeed(recovered)
  }
}
