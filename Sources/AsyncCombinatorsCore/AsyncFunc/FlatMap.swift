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
    AsyncFunc<Input, Next>(wrapping: self, call: "flatMap { … }") { input, token, complete in
      self.run(input, token: token) { result in
        switch result {
        case .success(let value):
          // The token is the run's: a cancellation that came first fails the chosen run at
          // once, and one that comes later reaches the chosen function's own body.
          transform(value).run(value, token: token, completion: complete)
        case .failure(let error):
          complete(.failure(error))
        }
      }
    }
  }
}
