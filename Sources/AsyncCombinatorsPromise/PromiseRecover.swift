import AsyncCombinatorsCore
import AsyncCombinatorsKernel
import Dispatch

// What the article's facade lacked to be practical: recovering from a failure, and wrapping
// a callback API without first writing an `AsyncFunc`. Still nothing but the public API.

extension Promise {
  /// Wraps a callback API: `body` starts the work and calls `complete` exactly once.
  ///
  /// Like every promise it is cold: `body` runs each time the chain starts, not now.
  ///
  /// ```swift
  /// let answer = Promise<Int> { complete in
  ///   DispatchQueue.global().async { complete(.success(42)) }
  /// }
  /// print(try await answer.then { $0 + 1 }.value)
  /// // prints 43
  /// ```
  ///
  /// - Parameter body: Starts the work and calls `complete` with its result, from any thread.
  public init(
    _ body: @escaping @Sendable (_ complete: @escaping AsyncFunc<Void, Value>.Completion) -> Void
  ) {
    self.init(AsyncFunc(name: "Promise") { _, complete in body(complete) })
  }

  /// Turns a failure of the chain so far into a value: `body` gets the error and returns the
  /// value instead, or throws the failure to report.
  ///
  /// A success passes through and `body` does not run. Cancellation is not a failure and is
  /// never recovered: a `CancellationError` passes through untouched.
  ///
  /// ```swift
  /// let avatar = firstly { () throws -> String in throw URLError(.notConnectedToInternet) }
  ///   .recover { _ in "placeholder.png" }
  /// print(try await avatar.value)
  /// // prints placeholder.png
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Maps the error to a value; a throw is the new failure.
  /// - Returns: A new chain that wraps this one.
  public func recover(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (any Error) throws -> Value
  ) -> Promise {
    Promise(
      AsyncFunc(wrapping: chain, call: "recover { … }") { _, token, complete in
        chain.run((), token: token) { result in
          guard case .failure(let error) = result, !(error is CancellationError) else {
            return complete(result)
          }
          (queue ?? blockQueue).async {
            complete(token.isCancelled ? .failure(CancellationError()) : Result { try body(error) })
          }
        }
      })
  }

  /// Turns a failure of the chain so far into the promise `body` returns, which then runs as
  /// part of the same run: ``recover(on:_:)`` for a block that returns a promise.
  ///
  /// A success passes through and `body` does not run; cancellation is never recovered. The
  /// name is `Result.flatMapError`'s, which likewise turns a failure into a new result that
  /// may succeed. It is a base name of its own, not a second `recover`, for the same reason
  /// `flatMap` is not a second `then`: a method with one overload keeps a chain's type-check
  /// time linear in its length (<doc:Performance>).
  ///
  /// ```swift
  /// let primary = firstly { () throws -> String in throw URLError(.timedOut) }
  /// let page = primary.flatMapError { _ in firstly { "mirror copy" } }
  /// print(try await page.value)
  /// // prints mirror copy
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Maps the error to the promise to run instead; a throw is the new failure.
  /// - Returns: A new chain that wraps this one.
  public func flatMapError(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (any Error) throws -> Promise
  ) -> Promise {
    let fallback = AsyncFunc<any Error, Value>.flatBlock(on: queue, name: "flatMapError", body)
    return Promise(
      AsyncFunc(wrapping: chain, call: "flatMapError { … }") { _, token, complete in
        chain.run((), token: token) { result in
          guard case .failure(let error) = result, !(error is CancellationError) else {
            return complete(result)
          }
          fallback.run(error, token: token, completion: complete)
        }
      })
  }

  /// A block that returns a promise goes to ``flatMap(on:_:)``, which runs that promise.
  ///
  /// This overload only turns the mistake into an error that names the fix; it cannot be
  /// called. It costs the type checker nothing measurable (see <doc:Performance>).
  ///
  /// ```swift
  /// firstly { 1 }.then { x in firstly { x * 2 } }.then { $0 + 1 }
  /// // error: 'then(on:_:)' has been renamed to 'flatMap(on:_:)': a block that returns a promise goes to flatMap, which runs it
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: A block that returns a promise.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, renamed: "flatMap(on:_:)",
    message: "a block that returns a promise goes to flatMap, which runs it"
  )
  public func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Promise<U>
  ) -> Promise<U> {
    flatMap(on: queue, body)
  }
}
