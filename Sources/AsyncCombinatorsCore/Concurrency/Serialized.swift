import AsyncCombinatorsKernel

extension AsyncFunc {
  /// A function whose runs execute one at a time, in the order they were started.
  ///
  /// Every run of the returned function — and of its copies — waits in one line, made when
  /// you call `serialized()`. A run starts when every run started before it has completed;
  /// no thread is blocked while it waits. A failure completes its own run and the line goes
  /// on. It is the callback-world twin of ``OrderedQueue``.
  ///
  /// A turn passes when the work has ended, as a limit's slot does: a run holds the line until
  /// every callback body it started has called back (or released its completion). A run
  /// cancelled while it waits completes with `CancellationError` at once and never starts. A
  /// run cancelled, timed out or beaten in a race while it runs completes at once too, but
  /// keeps its turn until its bodies are done, so the next body never overlaps one that is
  /// still winding down; that holds for the branches of a `<>` or `parallel` and the elements
  /// of a fold inside the function as well. A run's result is delivered before the next run
  /// starts.
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
    // A limit of one that delivers each run's result before the next run starts.
    limitedStage(
      LimitedFunction(Admission(capacity: 1), program, deliversFirst: true), call: "serialized()")
  }
}
