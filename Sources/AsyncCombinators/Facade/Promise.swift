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
  /// A block that returns a promise goes to ``flatMap(on:_:)`` instead.
  ///
  /// It consumes this promise, so that a chain nothing else holds (one written as a single
  /// expression, say) keeps its consecutive `then` blocks in one object. A promise you use
  /// again afterwards is copied, and stays as it was.
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
  @inlinable  // So that a link's body is boxed with its types known.
  public consuming func then<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> U
  ) -> Promise<U> {
    // Consumed, so that a chain nothing else holds grows in place: a link is then a queue and
    // a body in the chain's buffer, not an object of its own (see `Program.chaining`).
    // Both moved, not copied, into `chaining`, in an unoptimized build too: a copy would hold
    // the chain while it checks that nothing else does. The link is built in the call: a named
    // value holding an existential is copied into a consuming parameter even when optimized.
    let program = chain.program
    _ = consume self
    return Promise<U>(
      AsyncFunc(
        program: .chaining(
          ChainedBlock(queue: queue, body: TypedBlock(body)),
          after: consume program)))
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
  /// - Parameters:
  ///   - queue: Where `body` runs; a global queue when `nil`.
  ///   - body: Cleanup, such as hiding a spinner.
  /// - Returns: A new chain that wraps this one.
  public func always(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () -> Void
  ) -> Promise {
    Promise(
      AsyncFunc(wrapping: chain, call: "always { … }") { _, token, complete in
        chain.run((), token: token) { result in
          (queue ?? defaultBlockQueue).async {
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
      (queue ?? defaultBlockQueue).async { body(error) }
    }
  }

  /// Starts the chain and awaits its value. Cancelling the awaiting task cancels the chain.
  public var value: Value {
    get async throws { try await chain() }
  }
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

/// Where blocks run when no queue is given. Looked up once: `DispatchQueue.global()` costs
/// more than the rest of building a link.
@usableFromInline let defaultBlockQueue = DispatchQueue.global()

extension Promise where Value == Void {
  /// The empty chain: `firstly` is a `then` on it.
  static var start: Promise { Promise(.identity) }
}

extension AsyncFunc {
  /// A stage that runs a synchronous body on `queue` (a global one by default); it skips the
  /// body when the run was cancelled while it waited for the queue. `name` is the facade
  /// method, so that a promise describes as its blocks: `firstly +> then +> flatMap`.
  ///
  /// Inlinable, so the caller's specialization finds `BlockNode`'s type metadata in a cache of
  /// its own rather than asking the runtime for it once per link.
  @inlinable
  static func block(
    on queue: DispatchQueue?, name: String = "then",
    _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc {
    // A hop that runs the body as a synchronous stage: the run parks before the block is
    // queued, and goes on on the queue's thread, as a hand-written hop does. The run checks
    // the token there and skips the body when it was cancelled meanwhile.
    let label = Label(name: name, fileID: #fileID, line: #line)
    return AsyncFunc(program: .hop(BlockNode(queue ?? defaultBlockQueue, label: label, body: body)))
  }

  /// A block whose body returns a promise, which then runs as part of the same run: the
  /// stage of `flatMap`, and of a `firstly` whose body is a promise.
  static func flatBlock(
    on queue: DispatchQueue?, name: String,
    _ body: @escaping @Sendable (Input) throws -> Promise<Output>
  ) -> AsyncFunc {
    AsyncFunc(name: name) { input, token, complete in
      (queue ?? defaultBlockQueue).async {
        guard !token.isCancelled else { return complete(.failure(CancellationError())) }
        let promise: Promise<Output>
        do { promise = try body(input) } catch { return complete(.failure(error)) }
        promise.chain.run((), token: token, completion: complete)
      }
    }
  }
}
