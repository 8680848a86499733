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
        #if AC_TSAN
          let handoff = EarlyResumeHandoff(continuation)
          run(input, token: token) { handoff.complete($0) }
          handoff.closureReturned()
        #else
          run(input, token: token) { continuation.resume(with: $0) }
        #endif
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

#if AC_TSAN
  /// Under ThreadSanitizer only: resumes a continuation on its task's own thread when the run
  /// completed on another thread before the closure that started it returned.
  ///
  /// The runtime's hand-off for a continuation resumed before its task suspends is invisible
  /// to ThreadSanitizer, which then reports the task's next use of its frame as a race with
  /// `resume` (swiftlang/swift#57803). A hop completes that early on its performer's thread
  /// whenever the performer is quick. Held back here until the closure returns, such a result
  /// is resumed by the task's thread itself, which orders it; a later result is resumed where
  /// it arrives.
  private final class EarlyResumeHandoff<Output: Sendable>: Sendable {
    private let continuation: UnsafeContinuation<Output, any Error>
    /// Whether the closure has returned, and a result that arrived before it did.
    private let state = Locked<(returned: Bool, early: Result<Output, any Error>?)>((false, nil))

    init(_ continuation: UnsafeContinuation<Output, any Error>) {
      self.continuation = continuation
    }

    func complete(_ result: Result<Output, any Error>) {
      let returned = state.withLock { state in
        if !state.returned { state.early = result }
        return state.returned
      }
      if returned { continuation.resume(with: result) }
    }

    func closureReturned() {
      let early = state.withLock { state in
        state.returned = true
        return state.early.take()
      }
      if let early { continuation.resume(with: early) }
    }
  }
#endif
