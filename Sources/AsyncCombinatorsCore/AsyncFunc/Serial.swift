import AsyncCombinatorsKernel

/// Runs `first`, then `second` on its output: serial composition.
///
/// A failure of `first` short-circuits: `second` never starts and the failure is the result.
/// The named twin is ``serial(_:_:)``; the method form is ``AsyncFunc/then(_:)``.
///
/// ```swift
/// let parse = AsyncFunc<String, Int>.sync(name: "parse") { Int($0)! }
/// let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
/// let pipeline = parse +> double
/// print(pipeline, try await pipeline("21"))
/// // prints parse +> double 42
/// ```
///
/// - Complexity: O(1) to build. Running it adds no stack depth: a chain of a million
///   synchronous stages runs in one frame.
// Inlinable, built with the types known, as a chain is built link by link:
// Performance.md, "What the code's shape buys, and the check that holds it".
@inlinable
public func +> <A, B, C>(first: AsyncFunc<A, B>, second: AsyncFunc<B, C>) -> AsyncFunc<A, C> {
  AsyncFunc(program: .serial(first.program, second.program))
}

/// Runs `first`, then `second` on its output. Commonly written as `first +> second`.
public func serial<A, B, C>(_ first: AsyncFunc<A, B>, _ second: AsyncFunc<B, C>)
  -> AsyncFunc<A, C>
{
  first +> second
}

extension AsyncFunc {
  /// Runs this function, then `next` on its output. Commonly written as `self +> next`.
  public func then<Next>(_ next: AsyncFunc<Output, Next>) -> AsyncFunc<Input, Next> {
    self +> next
  }
}

extension AsyncFunc where Input == Output {
  /// The function that completes at once with its input: the unit of `+>`.
  ///
  /// `identity +> f`, `f +> identity` and `f` behave the same.
  public static var identity: AsyncFunc { AsyncFunc(program: .sequence([])) }

  /// Runs `functions` one after another, each on the previous one's output: the fold of `+>`
  /// over the array, starting from ``identity``.
  ///
  /// ```swift
  /// let steps = (1...3).map { n in AsyncFunc<Int, Int>.sync { $0 * 10 + n } }
  /// print(try await AsyncFunc.serial(steps)(0))
  /// // prints 123
  /// ```
  ///
  /// - Complexity: O(*n*) to build; running it uses constant stack depth.
  public static func serial(_ functions: [AsyncFunc]) -> AsyncFunc {
    AsyncFunc(program: .sequence(functions.map(\.program)))
  }
}
