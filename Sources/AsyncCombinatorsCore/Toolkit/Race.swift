import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs every function on the same input at once; the first to succeed wins and the
  /// others are cancelled.
  ///
  /// Failures do not end the race while another function may still succeed; when all have
  /// failed, the race fails with the last failure, the one that decided it. Cancellation is
  /// not a failure: a contender that ends with `CancellationError` ends the race with it at
  /// once, and the others are cancelled, as a branch of `<>` does.
  ///
  /// ```swift
  /// let mirror1 = AsyncFunc<String, String>.async(name: "mirror1") { path in
  ///   try await Task.sleep(for: .seconds(1))
  ///   return "mirror1/\(path)"
  /// }
  /// let mirror2 = AsyncFunc<String, String>.async(name: "mirror2") { "mirror2/\($0)" }
  /// let fastest = AsyncFunc.race([mirror1, mirror2])
  /// print(fastest)
  /// print(try await fastest("swift.tar.gz"))
  /// // prints race(mirror1, mirror2)
  /// // prints mirror2/swift.tar.gz
  /// ```
  ///
  /// - Precondition: `functions` is not empty; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - functions: The contenders; at least one.
  ///   - file: The caller's file, named when `functions` is empty.
  ///   - line: The caller's line, named when `functions` is empty.
  /// - Returns: A function with the contenders' input and output.
  /// - Complexity: Starts all *n* functions at once; O(*n*) to start, O(1) per result.
  public static func race(
    _ functions: [AsyncFunc], file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc {
    require(
      !functions.isEmpty, "race([]): a race needs at least one function", file: file, line: line)
    let name = "race(\(functions.map(\.description).joined(separator: ", ")))"
    let contenders = functions.map(\.program)
    // A join that reports through a `ModifierReport`: it decides exactly once by construction,
    // so it needs no completion object to enforce it. Described as written, not as a call.
    let shape = Shape.stage(Label(name: name, fileID: #fileID, line: #line))
    return AsyncFunc(
      program: .make(shape) { input, token, report in
        let join = RaceJoin(count: contenders.count, token: token, report: report)
        for contender in contenders {
          // Decided or cancelled already: start no more; a cancelled race completes as such.
          if join.token.isCancelled { return join.withdraw() }
          contender.start(input, token: join.token, parent: join)
        }
      })
  }
}
