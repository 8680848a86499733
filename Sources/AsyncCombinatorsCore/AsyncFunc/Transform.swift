import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Transforms the output with a synchronous function; a throw is the failure.
  ///
  /// ```swift
  /// let length = AsyncFunc<String, String>.sync { $0 }.map { $0.count }
  /// length.run("four") { print($0) }
  /// // prints success(4)
  /// ```
  public func map<NewOutput>(
    name: String = "map", fileID: String = #fileID, line: Int = #line,
    _ transform: @escaping @Sendable (Output) throws -> NewOutput
  ) -> AsyncFunc<Input, NewOutput> {
    self +> .sync(name: name, fileID: fileID, line: line, transform)
  }

  /// Fixes the input: partial application. The result runs this function on `input`.
  ///
  /// ```swift
  /// let fetchUser = AsyncFunc<Int, String>.sync(name: "fetchUser") { "user\($0)" }
  /// let fetchSeven: AsyncFunc<Void, String> = fetchUser.bind(7)
  /// fetchSeven.run { print($0) }
  /// // prints success("user7")
  /// ```
  public func bind(_ input: Input) -> AsyncFunc<Void, Output> {
    let label = Label(name: nil, fileID: #fileID, line: #line)
    let constant = AsyncFunc<Void, Input>(
      program: .direct(DirectStage(shape: .hidden, label: label) { _ in input }))
    return constant +> self
  }
}
