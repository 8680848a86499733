import Dispatch

// A PromiseKit-style facade, built on nothing but `AsyncFunc`, `+>`, `<>` and their folds.
// A `Promise` is a description of a chain, like the `AsyncFunc` it wraps: every method returns
// a new one, and nothing runs until `error` (or `value`) starts it.

/// A chain of work that starts when you attach its ``error(on:_:)`` handler.
public struct Promise<Value: Sendable>: Sendable {
  /// The whole chain as one function.
  public let chain: AsyncFunc<Void, Value>

  /// Wraps a function that needs no input.
  public init(_ chain: AsyncFunc<Void, Value>) {
    self.chain = chain
  }

  /// Runs `body` on the chain's value once the chain so far has succeeded.
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> U
  ) -> Promise<U> {
    Promise<U>(chain +> .block(on: queue, body))
  }

  /// Runs `body` on the chain's value, then the promise it returns.
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Promise<U>
  ) -> Promise<U> {
    Promise<U>(chain +> .block(on: queue, body) +> .flatten)
  }

  /// Runs `body` once the chain so far has finished: succeeded, failed or been cancelled.
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
  @discardableResult
  public func error(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (any Error) -> Void
  ) -> CancellationToken {
    chain.run { result in
      guard case .failure(let error) = result, !(error is CancellationError) else { return }
      (queue ?? .global()).async { body(error) }
    }
  }

  /// Starts the chain and awaits its value.
  public var value: Value {
    get async throws { try await chain() }
  }
}

/// Starts a chain with `body`.
public func firstly<T>(
  on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () throws -> T
) -> Promise<T> {
  Promise.start.then(on: queue) { _ in try body() }
}

/// Starts a chain with the promise `body` returns.
public func firstly<T>(
  on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () throws -> Promise<T>
) -> Promise<T> {
  Promise.start.then(on: queue) { _ in try body() }
}

/// Runs both bodies at once; the promise's value is the pair of their results.
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

/// Runs every promise at once; the value is the tuple of their values.
public func when<A, B, C, each D>(
  _ a: Promise<A>, _ b: Promise<B>, _ c: Promise<C>, _ d: repeat Promise<each D>
) -> Promise<(A, B, C, repeat each D)> {
  Promise<(A, B, C, repeat each D)>(parallel(a.chain, b.chain, c.chain, repeat (each d).chain))
}

/// Runs every promise at once; the values keep the array's order.
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
