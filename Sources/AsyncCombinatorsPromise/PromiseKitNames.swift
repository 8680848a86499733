import AsyncCombinatorsCore
import AsyncCombinatorsKernel
import Dispatch

// The names a PromiseKit user types first, each turned into an error that names our spelling.
// None can be called. Each is the only declaration of its name on `Promise`, so no chain
// method gains an overload and a chain's type-check time does not change.

extension Promise {
  /// PromiseKit's `done` is ``then(on:_:)`` here: a block that returns nothing.
  ///
  /// ```swift
  /// firstly { 1 }.done { print($0) }
  /// // error: 'done(on:_:)' has been renamed to 'then(on:_:)': PromiseKit's done is then here; attach error(on:_:) to start the chain
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The block.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, renamed: "then(on:_:)",
    message: "PromiseKit's done is then here; attach error(on:_:) to start the chain"
  )
  public func done(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Void
  ) -> Promise<Void> {
    then(on: queue, body)
  }

  /// PromiseKit's `catch` is ``error(on:_:)`` here: it starts the chain and ends it.
  ///
  /// ```swift
  /// firstly { 1 }.catch { print($0) }
  /// // error: 'catch(on:_:)' has been renamed to 'error(on:_:)': PromiseKit's catch is error here; it starts the chain and returns its token
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The error handler.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, renamed: "error(on:_:)",
    message: "PromiseKit's catch is error here; it starts the chain and returns its token"
  )
  @discardableResult
  public func `catch`(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (any Error) -> Void
  ) -> CancellationToken {
    error(on: queue, body)
  }

  /// PromiseKit's `ensure` is ``always(on:_:)`` here.
  ///
  /// ```swift
  /// firstly { 1 }.ensure { print("done") }.error { print($0) }
  /// // error: 'ensure(on:_:)' has been renamed to 'always(on:_:)': PromiseKit's ensure is always here
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The cleanup.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, renamed: "always(on:_:)", message: "PromiseKit's ensure is always here"
  )
  public func ensure(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () -> Void
  ) -> Promise {
    always(on: queue, body)
  }

  /// PromiseKit's `finally` is ``always(on:_:)`` here, placed before ``error(on:_:)``.
  ///
  /// ```swift
  /// firstly { 1 }.finally { print("done") }.error { print($0) }
  /// // error: 'finally(on:_:)' has been renamed to 'always(on:_:)': PromiseKit's finally is always here, written before error
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The cleanup.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, renamed: "always(on:_:)",
    message: "PromiseKit's finally is always here, written before error"
  )
  public func finally(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable () -> Void
  ) -> Promise {
    always(on: queue, body)
  }

  /// PromiseKit's `map` is ``then(on:_:)`` here: a block that returns a value.
  ///
  /// ```swift
  /// firstly { 1 }.map { $0 + 1 }.error { print($0) }
  /// // error: 'map(on:_:)' has been renamed to 'then(on:_:)': PromiseKit's map is then here
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The transform.
  /// - Returns: Nothing: it is unavailable.
  @available(*, unavailable, renamed: "then(on:_:)", message: "PromiseKit's map is then here")
  public func map<U>(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> U
  ) -> Promise<U> {
    then(on: queue, body)
  }

  /// PromiseKit's `get` is ``tap(on:_:)`` here, whose block sees the result: the value or the
  /// error.
  ///
  /// ```swift
  /// firstly { 1 }.get { print($0) }.error { print($0) }
  /// // error: 'get(on:_:)' is unavailable: PromiseKit's get is tap here; its block takes a Result, the value or the error
  /// ```
  ///
  /// - Parameters:
  ///   - queue: Where `body` would run.
  ///   - body: The block that sees the value.
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable,
    message: "PromiseKit's get is tap here; its block takes a Result, the value or the error"
  )
  public func get(
    on queue: DispatchQueue? = nil, _ body: @escaping @Sendable (Value) throws -> Void
  ) -> Promise {
    tap(on: queue) { result in _ = result.map { try? body($0) } }
  }

  /// PromiseKit's `wait()` is ``value`` here, awaited rather than blocking a thread.
  ///
  /// ```swift
  /// let answer = try firstly { 42 }.wait()
  /// // error: 'wait()' is unavailable: await value instead: try await promise.value
  /// ```
  ///
  /// - Returns: Nothing: it is unavailable.
  @available(*, unavailable, message: "await value instead: try await promise.value")
  public func wait() throws -> Value {
    fatalError("unavailable")
  }

  /// PromiseKit's `cauterize()` is an ``error(on:_:)`` whose block ignores the error.
  ///
  /// ```swift
  /// firstly { 1 }.cauterize()
  /// // error: 'cauterize()' is unavailable: attach error { _ in } to start the chain and ignore its failure
  /// ```
  ///
  /// - Returns: Nothing: it is unavailable.
  @available(
    *, unavailable, message: "attach error { _ in } to start the chain and ignore its failure"
  )
  @discardableResult
  public func cauterize() -> CancellationToken {
    error { _ in }
  }
}
