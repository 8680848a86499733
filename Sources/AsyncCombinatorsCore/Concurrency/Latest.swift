import AsyncCombinatorsKernel

extension AsyncFunc {
  /// A function whose newest run supersedes the one still in flight.
  ///
  /// Starting a run cancels the previous run of the returned function (and of its copies)
  /// if that one has not completed yet. A superseded run completes with `CancellationError`
  /// and never with its value, even when its body ignores cancellation and calls back late:
  /// each result is judged under a lock when it is delivered, against the newest run at that
  /// moment. Results are also delivered one at a time, so a result judged current just
  /// before a newer run began is handed over completely before the newer run's result is.
  ///
  /// It is search-as-you-type in one line: only the last query's results reach the screen.
  ///
  /// ```swift
  /// let search = AsyncFunc<String, [String]>.async(name: "search") { query in
  ///   try await index.lookUp(query)
  /// }.latest()
  /// for query in ["s", "sw", "swift"] {
  ///   search.run(query) { print(query, $0) }
  /// }
  /// // prints s failure(Swift.CancellationError())
  /// // prints sw failure(Swift.CancellationError())
  /// // prints swift success(["swift", "swiftly"])
  /// ```
  ///
  /// Put `latest()` on the whole pipeline whose results reach the screen,
  /// `(search +> rank).latest()`, rather than on a stage inside it: a superseded run then
  /// stops before its later stages start.
  ///
  /// Don't block a thread in a completion waiting for another run of the same function: a
  /// delivery waits for the one before it to return.
  ///
  /// - Returns: A function with this one's input and output, described as `f.latest()`.
  /// - Complexity: O(1) per run, plus the cancellation of the run it supersedes.
  public func latest() -> AsyncFunc {
    let (runs, inner) = (Supersession(), program)
    let label = Label(name: "latest", fileID: #fileID, line: #line)
    // Erased from end to end: nothing here runs generic over the output. A step of its own in
    // a trace, so a superseded run shows as cancelled there.
    return AsyncFunc(modifying: inner, call: "latest()", label: label) {
      input, token, completion in
      let (child, link) = token.makeChild()
      let generation = runs.begin(child)
      // Owns its cancellation, unlike `Program.start`'s nested run: a superseded run completes
      // at once, not when its body returns. Its stages count themselves on `child`, as any
      // stage does.
      Run(token: child, ownsCancellation: true) { result in
        link.remove()
        runs.deliver(result, of: generation, to: completion)
      }
      .start(inner, input)
    }
  }
}
