import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Chooses the next function from this one's output, then runs it on that output.
  ///
  /// Where `+>` fixes the next function when the pipeline is built, `flatMap` decides it at
  /// run time: `transform` sees the output and returns the function to run with it. The chosen
  /// function runs in the same run, so cancelling the run cancels it (and a run cancelled
  /// before this function completes never calls `transform`). A failure of this function skips
  /// `transform` and is the result.
  ///
  /// ```swift
  /// enum Kind: Sendable { case image, text }
  /// let sniff = AsyncFunc<String, Kind>.sync(name: "sniff") { $0.hasSuffix(".png") ? .image : .text }
  /// let decodeImage = AsyncFunc<Kind, String>.sync(name: "decodeImage") { _ in "an image" }
  /// let decodeText = AsyncFunc<Kind, String>.sync(name: "decodeText") { _ in "some text" }
  /// let decode = sniff.flatMap { kind in kind == .image ? decodeImage : decodeText }
  /// print(decode)
  /// print(try await decode("cat.png"), try await decode("notes.txt"))
  /// // prints sniff.flatMap { … }
  /// // prints an image some text
  /// ```
  ///
  /// - Parameter transform: Chooses, from this function's output, the function to run on it.
  /// - Returns: A function with this one's input and the chosen function's output.
  /// - Complexity: One call of `transform` and one run of the chosen function per run.
  public func flatMap<Next>(
    _ transform: @escaping @Sendable (Output) -> AsyncFunc<Output, Next>
  ) -> AsyncFunc<Input, Next> {
    let inner = program
    let label = Label(name: nil, fileID: #fileID, line: #line)
    // A step of its own in a trace, as the function it chooses is.
    return AsyncFunc<Input, Next>(modifying: inner, call: "flatMap { … }", label: label) {
      input, token, completion in
      inner.start(
        input, token: token,
        parent: Choice(completion, token) { value in transform(unbox(value)).program })
    }
  }
}

/// Where a `flatMap` stage's first function reports: its value chooses the function to run
/// next, on the same token, which reports to the stage's completion.
private final class Choice: StageParent {
  private let completion: CallbackCompletion
  private let token: CancellationToken
  private let choose: @Sendable (AnyValue) -> Program

  init(
    _ completion: CallbackCompletion, _ token: CancellationToken,
    _ choose: @escaping @Sendable (AnyValue) -> Program
  ) {
    self.completion = completion
    self.token = token
    self.choose = choose
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    // A run cancelled before this function completed never chooses, even when the function
    // ignored the cancellation and delivered a value.
    if token.isCancelled { return completion.fail(CancellationError()) }
    let value = consume value
    choose(value).start(value, token: token, parent: completion)
  }

  func childFailed(_ error: any Error, tag _: Int) { completion.fail(error) }
}
