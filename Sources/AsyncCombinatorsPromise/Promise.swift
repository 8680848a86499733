import AsyncCombinatorsCore
import AsyncCombinatorsKernel
import Dispatch

// A PromiseKit-style facade written as a client of the library: every file of this module uses
// only the public API of `AsyncCombinators`, and CI builds them in a module of their own
// (`.ci/facade-as-client`). A `Promise` is a description of a chain, like the `AsyncFunc` it
// wraps: every method returns a new one, and nothing runs until `error` (or `value`) starts it.

/// A chain of blocks that starts when you attach its ``error(on:_:)`` handler.
///
/// A promise is cold: it describes work, like the ``AsyncFunc`` it wraps. Building it runs
/// nothing; ``error(on:_:)`` or ``value`` runs it, and each start runs every block again.
/// Blocks run on a global queue unless you pass one. See <doc:PromiseFAQ>.
///
/// ```swift
/// firstly { 20 }.then { $0 + 1 }.always { print("done") }.error { print("failed:", $0) }
/// // prints done
/// ```
public struct Promise<Value: Sendable>: Sendable {
  /// The whole chain as one function.
  public let chain: AsyncFunc<Void, Value>

  /// Wraps a function that needs no input.
  public init(_ chain: AsyncFunc<Void, Value>) {
    self.chain = chain
  }

  /// Runs `body` on the chain's value once the chain so far has succeeded.
  ///
  /// A throw fails the chain: the later `then` blocks are skipped and ``error(on:_:)`` runs.
  /// A block that returns a promise goes to ``flatMap(on:_:)`` instead. The link is one
  /// hop after the chain, `chain +> .sync(on: queue, body)`: one block on `queue`, which
  /// runs `body` and goes on with the chain there.
  ///
  /// ```swift
  /// print(try await firstly { 2 }.then { $0 * 21 }.value)
  /// // prints 42
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Turns the value into the next one.
  /// - Returns: A new chain, this one followed by `body`.
  /// - Complexity: O(1) to build; one queue hop per run.
  @inlinable  // So that the link's closure is specialized for the caller's types.
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> U
  ) -> Promise<U> {
    Promise<U>(chain +> .sync(on: queue ?? blockQueue, name: "then", body))
  }

  /// Runs `body` on the chain's value, then the promise it returns: the result is flattened.
  ///
  /// The returned promise runs as part of the same run, so cancelling cancels it too. This is
  /// `then` for a block that returns a promise; each has one overload, so a chain of them
  /// type-checks in time linear in its length (see <doc:Performance>).
  ///
  /// ```swift
  /// print(try await firstly { 2 }.flatMap { x in when(firstly { x }, firstly { x + 1 }) }.value)
  /// // prints (2, 3)
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Turns the value into the promise whose value comes next.
  /// - Returns: A new chain whose value is the value of the promise `body` returns.
  public func flatMap<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Promise<U>
  ) -> Promise<U> {
    Promise<U>(chain +> .flatBlock(on: queue, name: "flatMap", body))
  }

  /// Runs `body` once the chain so far has finished: succeeded, failed or been cancelled.
  ///
  /// It runs before ``error(on:_:)``, and passes the chain's result on unchanged.
  ///
  /// ```swift
  /// _ = try? await firstly { 1 }.always { print("spinner hidden") }.value
  /// // prints spinner hidden
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Cleanup, such as hiding a spinner.
  /// - Returns: A new chain that wraps this one.
  public func always(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () -> Void
  ) -> Promise {
    // A wrapper, not a hop: it runs the chain on the run's token and sees every outcome,
    // cancellation included, which ends the outer run at once. A hop is a stage of the run,
    // and a cancelled run's stages never start, so the block is handed to its queue here.
    Promise(
      AsyncFunc(wrapping: chain, call: "always { … }") { _, token, complete in
        chain.run((), token: token) { result in
          (queue ?? blockQueue).async {
            body()
            complete(result)
          }
        }
      })
  }

  /// Starts the chain; `body` receives its failure. Cancellation is not a failure.
  ///
  /// This ends a chain: it returns a token, not a promise, so nothing can follow it.
  ///
  /// ```swift
  /// let token = firstly { try load() }.error { print("failed:", $0) }
  /// token.cancel()  // `always` blocks still run; this `error` block does not.
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Receives the first error a block threw.
  /// - Returns: The run's token: cancelling it stops the chain.
  @discardableResult
  public func error(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (any Error) -> Void
  ) -> CancellationToken {
    // The chain's outcome as a value, then one hop: a cancelled run has no outcome to settle,
    // and its hop never runs.
    let handled =
      chain.settled()
      +> .sync(on: queue ?? blockQueue, name: "error") { result in
        if case .failure(let error) = result { body(error) }
      }
    return handled.run { _ in }
  }

  /// Starts the chain and awaits its value. Cancelling the awaiting task cancels the chain.
  public var value: Value {
    get async throws { try await chain() }
  }
}

/// Starts a chain with `body`, which runs on `queue` (a global one when `nil`).
///
/// A body that returns a promise, as in `firstly { when(a, b) }`, is flattened: the chain
/// runs that promise and goes on with its value. Its body is built by ``PromiseHeadBuilder``;
/// bodies with `return` statements are taken by the plain overload, and behave the same.
///
/// ```swift
/// let answer = firstly { 6 * 7 }
/// print(try await answer.value)
/// // prints 42
/// ```
///
/// - Parameters:
///   - queue: Where `body` runs; a global queue when `nil`.
///   - body: Makes the chain's first value, or the promise of it.
/// - Returns: A chain whose value is the body's value.
public func firstly<T>(
  on queue: DispatchQueue? = nil,
  @PromiseHeadBuilder _ body: @escaping @Sendable () throws -> Promise<T>
) -> Promise<T> {
  Promise(.flatBlock(on: queue, name: "firstly") { _ in try body() })
}

/// Starts a chain with `body`, a body with statements, such as `return`, that
/// ``PromiseHeadBuilder`` does not build.
///
/// ```swift
/// let answer = firstly { () -> Int in
///   print("computing")
///   return 6 * 7
/// }
/// print(try await answer.value)
/// // prints computing
/// // prints 42
/// ```
///
/// - Parameters:
///   - queue: Where `body` runs; a global queue when `nil`.
///   - body: Makes the chain's first value.
/// - Returns: A chain whose value is the body's value.
@_disfavoredOverload
public func firstly<T>(
  on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () throws -> T
) -> Promise<T> {
  Promise(.sync(on: queue ?? blockQueue, name: "firstly") { _ in try body() })
}

/// Runs both promises at once; the value is the pair of their values.
public func when<A, B>(_ a: Promise<A>, _ b: Promise<B>) -> Promise<(A, B)> {
  Promise<(A, B)>(a.chain <> b.chain)
}

/// Runs three promises at once; the value is the triple of their values.
public func when<A, B, C>(_ a: Promise<A>, _ b: Promise<B>, _ c: Promise<C>) -> Promise<(A, B, C)> {
  Promise<(A, B, C)>(parallel(a.chain, b.chain, c.chain))
}

/// Runs four promises at once; the value is the tuple of their values.
public func when<A, B, C, D>(
  _ a: Promise<A>, _ b: Promise<B>, _ c: Promise<C>, _ d: Promise<D>
) -> Promise<(A, B, C, D)> {
  Promise<(A, B, C, D)>(parallel(a.chain, b.chain, c.chain, d.chain))
}

/// Runs five or more promises at once; the value is the tuple of their values.
///
/// Three and four promises have overloads of their own: a parameter pack is much slower to
/// type-check at the head of a long chain (see <doc:Performance>).
public func when<A, B, C, D, E, each F>(
  _ a: Promise<A>, _ b: Promise<B>, _ c: Promise<C>, _ d: Promise<D>, _ e: Promise<E>,
  _ f: repeat Promise<each F>
) -> Promise<(A, B, C, D, E, repeat each F)> {
  Promise<(A, B, C, D, E, repeat each F)>(
    parallel(a.chain, b.chain, c.chain, d.chain, e.chain, repeat (each f).chain))
}

/// Runs every promise at once; the values keep the array's order. The first failure fails
/// the whole and cancels the rest.
public func when<T>(_ promises: [Promise<T>]) -> Promise<[T]> {
  Promise<[T]>(AsyncFunc.parallel(promises.map(\.chain)))
}

/// Where blocks run when no queue is given. Looked up once rather than at every link: on
/// Linux, each `DispatchQueue.global()` is a new wrapper object.
@usableFromInline let blockQueue = DispatchQueue.global()

extension AsyncFunc {
  /// A block whose body returns a promise, which then runs on the same token, as part of the
  /// same run: the stage of `flatMap`, and of a `firstly` whose body is a promise.
  static func flatBlock(
    on queue: DispatchQueue?, name: String,
    _ body: @escaping @Sendable (Input) throws -> Promise<Output>
  ) -> AsyncFunc {
    let queue = queue ?? blockQueue
    return AsyncFunc(name: name) { input, token, complete in
      queue.async {
        guard !token.isCancelled else { return complete(.failure(CancellationError())) }
        let promise: Promise<Output>
        do { promise = try body(input) } catch { return complete(.failure(error)) }
        promise.chain.run((), token: token, completion: complete)
      }
    }
  }
}
