import AsyncCombinatorsKernel

extension AsyncFunc {
  /// A function that ignores its input and always succeeds with `value`.
  ///
  /// Its stage is named `just(…)` after the value, so descriptions read as the call that made
  /// it. Useful as a stand-in for a stage in a test, as the fallback of a choice in
  /// ``flatMap(_:)``, or as the head of a chain that needs no input.
  ///
  /// ```swift
  /// let greeting = AsyncFunc<Void, String>.just("hello") +> .sync(name: "shout") { $0.uppercased() }
  /// print(greeting)
  /// print(try await greeting())
  /// // prints just("hello") +> shout
  /// // prints HELLO
  /// ```
  ///
  /// - Parameter value: The output of every run.
  /// - Returns: A function that completes at once, on the thread that reaches it.
  public static func just(_ value: Output) -> AsyncFunc {
    .sync(name: "just(\(shortDescription(String(reflecting: value))))") { _ in value }
  }

  /// A function that ignores its input and always fails with `error`.
  ///
  /// Its stage is named `fail(…)` after the error. Useful as a stand-in for a failing stage in
  /// a test, or as the branch of a choice in ``flatMap(_:)`` that has nothing to run.
  ///
  /// ```swift
  /// struct UnknownID: Error {}
  /// let missing = AsyncFunc<Int, String>.fail(UnknownID())
  /// print(missing)
  /// missing.run(7) { print($0) }
  /// // prints fail(UnknownID())
  /// // prints failure(App.UnknownID())
  /// ```
  ///
  /// - Parameter error: The failure of every run.
  /// - Returns: A function that completes at once, on the thread that reaches it.
  public static func fail(_ error: any Error) -> AsyncFunc {
    .sync(name: "fail(\(shortDescription(String(describing: error))))") { _ in throw error }
  }
}

/// A description cut to one short line, so a constant's name never floods a description.
private func shortDescription(_ text: String) -> String {
  let line = text.prefix { $0 != "\n" }
  return line.count <= 40 && line.count == text.count ? text : line.prefix(39) + "…"
}
