extension AsyncFunc {
  /// A function whose runs execute one at a time, in the order they were started.
  ///
  /// Every run of the returned function — and of its copies — waits in one line, made when
  /// you call `serialized()`. A run starts when every run started before it has completed;
  /// no thread is blocked while it waits. A failure completes its own run and the line goes
  /// on. It is the callback-world twin of ``OrderedQueue``.
  ///
  /// Cancellation keeps the turns apart. A run cancelled while it waits completes with
  /// `CancellationError` at once and never starts. A run cancelled while it runs also completes
  /// with `CancellationError` at once, but keeps its turn until its body has called back (or
  /// released its completion), so the next body never overlaps one that is still winding down.
  /// A `<>`, `parallel` or fold inside the function is the exception: it completes at once when
  /// cancelled, so its branches or elements may still be finishing when the next run starts.
  ///
  /// ```swift
  /// let write = AsyncFunc<String, String>(name: "write") { line, complete in
  ///   print("start \(line)")
  ///   disk.async { print("end \(line)"); complete(.success(line)) }
  /// }.serialized()
  /// for line in ["a", "b"] { write.run(line) { _ in } }
  /// // prints start a
  /// // prints end a
  /// // prints start b
  /// // prints end b
  /// ```
  ///
  /// - Returns: A function with this one's input and output, described as `f.serialized()`.
  /// - Complexity: O(1) per run to enter and leave the line; runs that complete synchronously
  ///   are started in a loop, so a long line adds no stack depth.
  public func serialized() -> AsyncFunc {
    let lane = SerialLane()
    let program = program
    let label = Label(name: "serialized", fileID: #fileID, line: #line)
    // Erased from end to end, as `latest()` is: nothing here runs generic over the output.
    let stage = CallbackStage(shape: .modified(program, "serialized()"), label: label) {
      input, token, completion in
      lane.enqueue {
        guard !token.isCancelled else {
          completion.fail(CancellationError())
          return lane.finish()
        }
        // Not owning the token's cancellation, this run ends only when the program's stages
        // do: the caller has already heard `CancellationError` from the enclosing run.
        Run(token: token, ownsCancellation: false) { result in
          completion.complete(result)
          lane.finish()
        }.start(program, input)
      }
    }
    return AsyncFunc(program: .callback(stage))
  }
}
