import AsyncCombinatorsCore
import AsyncCombinatorsKernel
import Dispatch

// The heads of a chain: the builder of `firstly`'s body, and the `when` of two bodies.
//
// A head takes a body that returns a value (`firstly { 7 }`) or a promise (the article's
// `firstly { when(a, b) }`, which runs the `when` and goes on with its value). Two plain
// overloads on the body's result type would make every chain around them slow to
// type-check: the solver would try both at each head, together with every one-line block of
// the chain. So the
// preferred overload builds its body with `PromiseHeadBuilder`, whose body the compiler
// type-checks on its own, before the chain; the plain overload, marked disfavored, takes
// what the builder cannot: bodies with `return`, or an explicit `() -> T in` signature.
// <doc:Performance> says how the type-check budget is kept.

/// Builds the body of `firstly` and of the two-body `when` into a promise.
///
/// You do not use it by name: a one-expression body such as `{ 7 }` becomes a promise of its
/// value, and a body that is a promise, such as `{ when(a, b) }`, is that promise. A body
/// with `return` statements is not built; the plain overload of `firstly` takes it instead.
///
/// ```swift
/// let seven = firstly { 7 }  // a Promise<Int>
/// let pair = firstly { when(firstly { 1 }, firstly { "a" }) }  // a Promise<(Int, String)>
/// print(try await seven.value, try await pair.value)
/// // prints 7 (1, "a")
/// ```
@resultBuilder
public enum PromiseHeadBuilder {
  /// Makes a promise of a value the body computed.
  ///
  /// The value is already computed when the built body runs, inside the chain, so the
  /// promise completes at once with it.
  ///
  /// ```swift
  /// print(try await firstly { 6 * 7 }.value)
  /// // prints 42
  /// ```
  ///
  /// - Parameter value: The body's value.
  /// - Returns: A promise that completes with `value`.
  @_disfavoredOverload  // A promise is kept, never wrapped: `firstly { firstly { 1 } }`.
  public static func buildExpression<T>(_ value: T) -> Promise<T> {
    Promise(.sync { _ in value })
  }

  /// Keeps a promise the body returns as it is, so that the head is flattened.
  ///
  /// ```swift
  /// let inner = firstly { "deep" }
  /// let head = firstly { inner }  // a Promise<String>, not a promise of a promise
  /// print(try await head.value)
  /// // prints deep
  /// ```
  ///
  /// - Parameter promise: The promise the body made.
  /// - Returns: `promise` itself.
  public static func buildExpression<T>(_ promise: Promise<T>) -> Promise<T> {
    promise
  }

  /// Makes the one expression of a body its result.
  ///
  /// ```swift
  /// print(try await firstly { "one expression" }.value)
  /// // prints one expression
  /// ```
  ///
  /// - Parameter promise: The body's expression, as a promise.
  /// - Returns: `promise` itself.
  public static func buildBlock<T>(_ promise: Promise<T>) -> Promise<T> {
    promise
  }
}

/// Runs both bodies at once, each on `queue` (a global one when `nil`); the value is the pair.
///
/// No thread waits for the other body: the pair completes when the slower body finishes.
/// A body that returns a promise is flattened, as in `firstly`.
///
/// ```swift
/// print(try await when({ "avatar" }, { 7 }).value)
/// // prints ("avatar", 7)
/// ```
///
/// - Parameters:
///   - queue: Where the bodies run; a global queue when `nil`.
///   - a: Makes the first value.
///   - b: Makes the second value.
/// - Returns: A promise of both values.
public func when<A, B>(
  on queue: DispatchQueue? = nil,
  @PromiseHeadBuilder _ a: @escaping @Sendable () throws -> Promise<A>,
  @PromiseHeadBuilder _ b: @escaping @Sendable () throws -> Promise<B>
) -> Promise<(A, B)> {
  when(firstly(on: queue, a), firstly(on: queue, b))
}

/// Runs both bodies at once; the overload for bodies with `return` statements.
///
/// ```swift
/// let both = when({ () -> Int in
///   let base = 6
///   return base * 7
/// }, { "answer" })
/// print(try await both.value)
/// // prints (42, "answer")
/// ```
///
/// - Parameters:
///   - queue: Where the bodies run; a global queue when `nil`.
///   - a: Makes the first value.
///   - b: Makes the second value.
/// - Returns: A promise of both values.
@_disfavoredOverload
public func when<A, B>(
  on queue: DispatchQueue? = nil, _ a: @escaping @Sendable () throws -> A,
  _ b: @escaping @Sendable () throws -> B
) -> Promise<(A, B)> {
  when(
    Promise(.sync(on: queue ?? blockQueue, name: "firstly") { _ in try a() }),
    Promise(.sync(on: queue ?? blockQueue, name: "firstly") { _ in try b() }))
}
