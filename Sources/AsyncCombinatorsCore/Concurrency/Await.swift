import AsyncCombinatorsKernel

// The bridge from callbacks to async/await. Cancellation crosses it in both directions:
// cancelling the awaiting task cancels the run, and a run's `.async` stages run in tasks that
// the run's token cancels.

extension AsyncFunc {
  /// Runs the function and awaits its result.
  ///
  /// Cancelling the awaiting task cancels the run at once: this throws `CancellationError`,
  /// stages not yet started never start, and running stages see their token fire, with
  /// `CancellationError` as its ``CancellationToken/cause``.
  ///
  /// Awaited in an `.async` body, or in ``withTimeout(_:clock:file:line:operation:)``, the run starts on a
  /// child of that body's token: it has the same deadlines, and the body's cancellation, with
  /// its cause, reaches it.
  ///
  /// ```swift
  /// let double = AsyncFunc<Int, Int>.sync { $0 * 2 }
  /// print(try await double(21))
  /// // prints 42
  /// ```
  public func callAsFunction(_ input: Input) async throws -> Output {
    let scoped = CancellationToken.current?.makeAwaitedChild()
    let token = scoped?.child ?? CancellationToken()
    defer { scoped?.link.remove() }
    return try await withTaskCancellationHandler {
      try await withUnsafeThrowingContinuation { continuation in
        // `Run` completes exactly once, which is all an unsafe continuation asks.
        run(input, token: token) { continuation.resume(with: $0) }
      }
    } onCancel: {
      token.cancel()
    }
  }
}

extension AsyncFunc where Input == Void {
  /// Runs a function that needs no input and awaits its result.
  public func callAsFunction() async throws -> Output {
    try await self(())
  }
}
