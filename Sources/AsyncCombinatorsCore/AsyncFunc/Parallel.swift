import AsyncCombinatorsKernel

/// Runs both functions on the same input at once and pairs their results: parallel composition.
///
/// The two results are joined exactly once, however the completions interleave across
/// threads: each branch writes its own slot, then counts down; the last one assembles the pair. The first failure completes the whole at once and cancels the other side;
/// its late completion is ignored. The named twin is ``parallel(_:)``.
///
/// Not Haskell's semigroup `<>`: this one runs functions in parallel.
///
/// ```swift
/// let avatar = AsyncFunc<Int, String>.async(name: "avatar") { "avatar\($0).png" }
/// let profile = AsyncFunc<Int, String>.async(name: "profile") { "user \($0)" }
/// let both = avatar <> profile
/// print(both, try await both(7))
/// // prints avatar <> profile ("avatar7.png", "user 7")
/// ```
///
/// - Complexity: O(1) to build; a run starts both sides before waiting for either.
@inlinable
public func <> <A, B, C>(first: AsyncFunc<A, B>, second: AsyncFunc<A, C>)
  -> AsyncFunc<A, (B, C)>
{
  let label = Label(name: nil, fileID: #fileID, line: #line)
  return AsyncFunc(
    program: ForkJoin.stage([first.program, second.program], label: label) { values in
      (unbox(values[0], as: B.self), unbox(values[1], as: C.self))
    })
}

/// Runs every function on the same input at once and returns their results as one flat tuple.
/// With two functions, commonly written as `first <> second`.
///
/// ```swift
/// let all = parallel(avatar, profile, friends)
/// let (image, name, count) = try await all(7)
/// ```
///
/// - Returns: A function whose output has one element per function, in argument order. The
///   first failure fails it and cancels the others.
@inlinable
public func parallel<Input: Sendable, each Output: Sendable>(
  _ functions: repeat AsyncFunc<Input, each Output>
) -> AsyncFunc<Input, (repeat each Output)> {
  var programs: [Program] = []
  for function in repeat each functions { programs.append(function.program) }
  let label = Label(name: nil, fileID: #fileID, line: #line)
  return AsyncFunc(
    program: ForkJoin.stage(programs, label: label, spelling: .tuple) { values in
      var index = 0
      func next<Element>(_: Element.Type) -> Element {
        defer { index += 1 }
        return unbox(values[index])
      }
      return (repeat next((each Output).self))
    })
}

extension AsyncFunc {
  /// Runs every function on the same input at once; the results keep the array's order.
  ///
  /// ```swift
  /// let sizes = [small, medium, large]  // AsyncFunc<URL, Int> each
  /// print(try await AsyncFunc.parallel(sizes)(url))
  /// // prints [120, 480, 1920]
  /// ```
  ///
  /// The first failure fails the whole and cancels the branches still running; no branch
  /// starts after it. An empty array completes at once with `[]`.
  ///
  /// - Complexity: O(*n*) to start; the join is a countdown, one atomic decrement per branch.
  @inlinable
  public static func parallel(_ functions: [AsyncFunc]) -> AsyncFunc<Input, [Output]> {
    let label = Label(name: nil, fileID: #fileID, line: #line)
    return AsyncFunc<Input, [Output]>(
      program: ForkJoin.stage(functions.map(\.program), label: label, spelling: .array) {
        values in
        values.map { unbox($0, as: Output.self) }
      })
  }
}
