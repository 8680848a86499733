import Dispatch

// A PromiseKit-style facade, built on nothing but `AsyncFunc`, `+>`, `<>` and their folds.
// A `Promise` is a description of a chain, like the `AsyncFunc` it wraps: every method returns
// a new one, and nothing runs until `error` (or `value`) starts it.

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
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> U
  ) -> Promise<U> {
    Promise<U>(chain +> .block(on: queue, body))
  }

  /// Runs `body` on the chain's value, then the promise it returns: the result is flattened.
  ///
  /// The returned promise runs as part of the same run, so cancelling cancels it too.
  ///
  /// ```swift
  /// print(try await firstly { 2 }.then { x in when(firstly { x }, firstly { x + 1 }) }.value)
  /// // prints (2, 3)
  /// ```
  ///
  /// - Returns: A new chain whose value is the value of the promise `body` returns.
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Promise<U>
  ) -> Promise<U> {
    Promise<U>(chain +> .block(on: queue, body) +> .flatten)
  }

  /// Runs `body` once the chain so far has finished: succeeded, failed or been cancelled.
  ///
  /// It runs before ``error(on:_:)``, and passes the chain's result on unchanged.
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Cleanup, such as hiding a spinner.
  /// - Returns: A new chain that wraps this one.
  public func always(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () -> Void
  ) -> Promise {
    Promise(
      AsyncFunc(name: "always") { _, token, complete in
        chain.run((), token: token) { result in
          (queue ?? .global()).async {
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
    chain.run { result in
      guard case .failure(let error) = result, !(error is CancellationError) else { return }
      (queue ?? .global()).async { body(error) }
    }
  }

  /// Starts the chain and awaits its value. Cancelling the awaiting task cancels the chain.
  public var value: Value {
    get async throws { try await chain() }
  }
}

/// Starts a chain with `body`, which runs on `queue` (a global one when `nil`).
///
/// ```swift
/// let answer = firstly { 6 * 7 }
/// print(try await answer.value)
/// // prints 42
/// ```
public func firstly<T>(
  on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () throws -> T
) -> Promise<T> {
  Promise.start.then(on: queue) { _ in try body() }
}

/// Starts a chain with the promise `body` returns, as in `firstly { when(a, b) }`.
public func firstly<T>(
  on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () throws -> Promise<T>
) -> Promise<T> {
  Promise.start.then(on: queue) { _ in try body() }
}

/// Runs both bodies at once, each on `queue` (a global one when `nil`); the value is the pair.
///
/// No thread waits for the other body: the pair completes when the slower body finishes.
///
/// ```swift
/// print(try await when({ "avatar" }, { 7 }).value)
/// // prints ("avatar", 7)
/// ```
public func when<A, B>(
  on queue: DispatchQueue? = nil, _ a: @escaping @Sendable () throws -> A,
  _ b: @escaping @Sendable () throws -> B
) -> Promise<(A, B)> {
  when(firstly(on: queue, a), firstly(on: queue, b))
}

/// Runs both promises at once; the value is the pair of their values.
public func when<A, B>(_ a: Promise<A>, _ b: Promise<B>) -> Promise<(A, B)> {
  Promise<(A, B)>(a.chain <> b.chain)
}

/// Runs three or more promises at once; the value is the tuple of their values.
public func when<A, B, C, each D>(
  _ a: Promise<A>, _ b: Promise<B>, _ c: Promise<C>, _ d: repeat Promise<each D>
) -> Promise<(A, B, C, repeat each D)> {
  Promise<(A, B, C, repeat each D)>(parallel(a.chain, b.chain, c.chain, repeat (each d).chain))
}

/// Runs every promise at once; the values keep the array's order. The first failure fails
/// the whole and cancels the rest.
public func when<T>(_ promises: [Promise<T>]) -> Promise<[T]> {
  Promise<[T]>(AsyncFunc.parallel(promises.map(\.chain)))
}

extension Promise where Value == Void {
  /// The empty chain: `firstly` is a `then` on it.
  fileprivate static var start: Promise { Promise(.identity) }
}

extension AsyncFunc {
  /// A stage that runs a synchronous body on `queue` (a global one by default); it skips the
  /// body when the run was cancelled while it waited for the queue.
  fileprivate static func block(
    on queue: DispatchQueue?, _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc {
    AsyncFunc(name: "then") { input, token, complete in
      (queue ?? .global()).async {
        complete(token.isCancelled ? .failure(CancellationError()) : Result { try body(input) })
      }
    }
  }
}

extension AsyncFunc where Input == Promise<Output> {
  /// A stage that runs the promise it receives, as part of the same run.
  fileprivate static var flatten: AsyncFunc {
    AsyncFunc(name: "flatten") { promise, token, complete in
      promise.chain.run((), token: token, completion: complete)
    }
  }
}
