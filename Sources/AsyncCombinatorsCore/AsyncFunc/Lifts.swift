import AsyncCombinatorsKernel

// Lifts: turn functions of other shapes into `AsyncFunc`s. Each is a static factory with its
// own label, so a closure's shape never makes the call ambiguous.
//
// `sync` alone has two overloads. The preferred one, without a name, builds its body with
// `SyncBodyBuilder`, which only makes the compiler type-check a one-expression body on its
// own instead of together with the whole expression around it, so inline `.sync { $0 + 1 }`
// lifts joined by `<>` and `+>` stay within the type-check budget (<doc:Performance>). The
// plain overload, marked disfavored, takes a `name:` and whatever the builder cannot build.

extension AsyncFunc {
  /// Lifts a synchronous function, unnamed: it runs on the thread that reaches it, and a throw
  /// is the failure.
  ///
  /// The same as ``sync(on:name:fileID:line:_:)`` without a name; its body is built with
  /// ``SyncBodyBuilder`` so that inline lifts joined by operators type-check quickly.
  ///
  /// ```swift
  /// let step: AsyncFunc<Int, Int> = .sync { $0 + 1 } <> .sync { $0 * 2 } +> .sync { $0 + $1 }
  /// step.run(3) { print($0) }
  /// // prints success(10)
  /// ```
  ///
  /// - Parameters:
  ///   - fileID: The file that made the function, for descriptions and reports.
  ///   - line: The line that made the function.
  ///   - body: The function to lift.
  /// - Returns: A function that runs `body`.
  @inlinable
  public static func sync(
    fileID: String = #fileID, line: Int = #line,
    @SyncBodyBuilder _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc {
    sync(name: nil, fileID: fileID, line: line, body)
  }

  /// Lifts a synchronous function: it runs on the thread that reaches it, or on `performer`,
  /// and a throw is the failure.
  ///
  /// Without a performer, the stage runs inline in the run's loop: no completion object, no
  /// hop. With one, the stage is a hop: it hands the performer one block, which runs `body`
  /// and goes on with the run there, so what follows runs on the performer too. It never
  /// waits for the performer: `sync` names the body, not the call. A hop costs one
  /// `queue.async` and no completion object (<doc:Performers>); `.sync(body).on(performer)`
  /// is the same stage. A run cancelled while the block waits never runs `body`.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
  ///   guard let number = Int(text) else { throw ParseError.notANumber(text) }
  ///   return number
  /// }
  /// parse.run("42") { print($0) }
  /// // prints success(42)
  ///
  /// let resize = AsyncFunc<Int, Int>.sync(on: DispatchQueue.global(), name: "resize") { $0 / 2 }
  /// print(try await (parse +> resize)("42"))
  /// // prints 21
  /// ```
  ///
  /// - Parameters:
  ///   - performer: Where `body` runs, such as a `DispatchQueue`; in place when `nil`.
  ///   - name: What descriptions, timelines and contract reports call the function.
  ///   - fileID: The file that made the function, for descriptions and reports.
  ///   - line: The line that made the function.
  ///   - body: The function to lift.
  /// - Returns: A function that runs `body`.
  @_disfavoredOverload
  @inlinable
  public static func sync(
    on performer: (any BlockPerformer)? = nil, name: String? = nil, fileID: String = #fileID,
    line: Int = #line, _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc {
    let label = Label(name: name, fileID: fileID, line: line)
    let erased: @Sendable (AnyValue) throws -> AnyValue = { try body(unbox($0)) }
    guard let performer else {
      return AsyncFunc(
        program: .direct(DirectStage(shape: .stage(label), label: label, body: erased)))
    }
    return AsyncFunc(
      program: .hop(
        HopStage(shape: .stage(label), performer: performer, body: erased)))
  }

  /// Lifts an `async` function. It runs in a new `Task`; cancelling the run cancels that task.
  ///
  /// The body runs with the run's token in scope: an ``AsyncFunc`` it awaits starts on a child
  /// of that token, so it has the run's deadlines, and the run's cancellation and its cause
  /// reach it.
  ///
  /// ```swift
  /// let fetch = AsyncFunc<URL, Data>.async(name: "fetch") { url in
  ///   try await URLSession.shared.data(from: url).0
  /// }
  /// ```
  @inlinable  // So that the task and its result are built with their types known.
  public static func async(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input) async throws -> Output
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, token, complete in
      let link = CancellationLink()
      let task = Task {
        let result: Result<Output, any Error>
        do {
          result = .success(
            try await CancellationToken.withCurrent(token) { try await body(input) })
        } catch { result = .failure(error) }
        link.finish()
        complete(result)
      }
      link.connect(token, to: task)
    }
  }

  /// Lifts an Objective-C style callback that passes a value or an error.
  ///
  /// An error wins over a value; a call with neither fails with ``ContractViolation``
  /// (``ContractViolation/Kind/neitherValueNorError``).
  ///
  /// ```swift
  /// let load = AsyncFunc<String, Data>.valueOrError(name: "load") { path, callback in
  ///   legacyLoader.load(path) { data, error in callback(data, error) }
  /// }
  /// ```
  @inlinable  // As `async`: the callback adapter is built with its types known.
  public static func valueOrError(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body:
      @escaping @Sendable (Input, @escaping @Sendable (Output?, (any Error)?) -> Void)
      -> Void
  ) -> AsyncFunc {
    let label = Label(name: name, fileID: fileID, line: line)
    return AsyncFunc(label: label) { input, _, complete in
      body(input) { value, error in
        if let error {
          complete(.failure(error))
        } else if let value {
          complete(.success(value))
        } else {
          complete(.failure(ContractViolation(.neitherValueNorError, label)))
        }
      }
    }
  }

  /// Lifts a callback that always succeeds with a value.
  @inlinable  // As `async`: the callback adapter is built with its types known.
  public static func infallible(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input, @escaping @Sendable (Output) -> Void) -> Void
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, _, complete in
      body(input) { complete(.success($0)) }
    }
  }

  /// Lifts a legacy API that starts a request and returns a handle to cancel it.
  ///
  /// Cancelling the run calls the handle's `cancel()`; a callback that arrives after that is
  /// dropped.
  ///
  /// ```swift
  /// let download = AsyncFunc<URL, Data>.cancellable(name: "download") { url, complete in
  ///   client.get(url) { complete($0) }  // returns a request that conforms to Cancellable
  /// }
  /// ```
  @inlinable  // As `async`: the callback adapter is built with its types known.
  public static func cancellable(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input, @escaping Completion) -> any Cancellable
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, token, complete in
      let link = CancellationLink()
      let request = body(input) { result in
        link.finish()
        complete(result)
      }
      link.connect(token, to: request)
    }
  }
}

extension AsyncFunc {
  /// Lifts a callback API whose start returns the way to cancel it: the body starts the work
  /// and returns a closure that cancels it, such as a `URLSessionTask`'s `cancel`.
  ///
  /// Cancelling the run calls the returned closure once, unless the work has already called
  /// back; a callback that arrives after the cancellation is dropped, and the run completes
  /// with `CancellationError` at once. ``cancellable(name:fileID:line:_:)`` does the same
  /// with a request that conforms to ``Cancellable``; this takes any closure, so no
  /// conformance has to be added to a type you do not own.
  ///
  /// ```swift
  /// let nap = AsyncFunc<Int, String>.withCancel(name: "nap") { seconds, complete in
  ///   let sleeper = Task {
  ///     try? await Task.sleep(for: .seconds(seconds))
  ///     complete(.success("slept \(seconds) s"))  // after a cancel: dropped
  ///   }
  ///   return {
  ///     print("waking the sleeper")
  ///     sleeper.cancel()
  ///   }
  /// }
  /// let token = nap.run(60) { print($0) }
  /// token.cancel()
  /// // prints waking the sleeper   (in any order)
  /// // prints failure(Swift.CancellationError())   (in any order)
  /// ```
  ///
  /// - Parameters:
  ///   - name: How the function shows in descriptions and traces.
  ///   - fileID: Where the function was made, shown when it has no name.
  ///   - line: Where the function was made, shown when it has no name.
  ///   - body: Starts the work on an input, with the completion to call exactly once, and
  ///     returns what cancels the work.
  /// - Returns: The function.
  @inlinable  // As `async`: the callback adapter is built with its types known.
  public static func withCancel(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input, @escaping Completion) -> @Sendable () -> Void
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, token, complete in
      let link = CancellationLink()
      let cancel = body(input) { result in
        link.finish()
        complete(result)
      }
      link.connect(token, to: CancelClosure(cancel))
    }
  }
}

/// A cancel closure as a ``Cancellable``, for ``AsyncFunc/withCancel(name:fileID:line:_:)``.
@usableFromInline
struct CancelClosure: Cancellable {
  @usableFromInline let action: @Sendable () -> Void

  @inlinable
  init(_ action: @escaping @Sendable () -> Void) { self.action = action }

  @inlinable
  func cancel() { action() }
}

extension AsyncFunc where Output == Void {
  /// Lifts a callback that reports only an error, or `nil` for success.
  @inlinable  // As `async`: the callback adapter is built with its types known.
  public static func errorOnly(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input, @escaping @Sendable ((any Error)?) -> Void) -> Void
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, _, complete in
      body(input) { error in complete(error.map { .failure($0) } ?? .success(())) }
    }
  }
}

// MARK: Several inputs

extension AsyncFunc {
  /// Lifts a synchronous function of two inputs; the input becomes a pair.
  ///
  /// ```swift
  /// let add = AsyncFunc<(Int, Int), Int>.sync2 { $0 + $1 }
  /// add.run((2, 3)) { print($0) }
  /// // prints success(5)
  /// ```
  public static func sync2<A, B>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B) throws -> Output
  ) -> AsyncFunc where Input == (A, B) {
    sync(name: name, fileID: fileID, line: line) { try body($0.0, $0.1) }
  }

  /// Lifts a synchronous function of three inputs; the input becomes a triple.
  public static func sync3<A, B, C>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B, C) throws -> Output
  ) -> AsyncFunc where Input == (A, B, C) {
    sync(name: name, fileID: fileID, line: line) { try body($0.0, $0.1, $0.2) }
  }

  /// Lifts an `async` function of two inputs; the input becomes a pair.
  public static func async2<A, B>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B) async throws -> Output
  ) -> AsyncFunc where Input == (A, B) {
    async(name: name, fileID: fileID, line: line) { try await body($0.0, $0.1) }
  }

  /// Lifts an `async` function of three inputs; the input becomes a triple.
  public static func async3<A, B, C>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B, C) async throws -> Output
  ) -> AsyncFunc where Input == (A, B, C) {
    async(name: name, fileID: fileID, line: line) { try await body($0.0, $0.1, $0.2) }
  }

  /// Lifts a callback function of two inputs; the input becomes a pair.
  public static func callback2<A, B>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B, @escaping Completion) -> Void
  ) -> AsyncFunc where Input == (A, B) {
    AsyncFunc(name: name, fileID: fileID, line: line) { input, complete in
      body(input.0, input.1, complete)
    }
  }

  /// Lifts a callback function of three inputs; the input becomes a triple.
  public static func callback3<A, B, C>(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (A, B, C, @escaping Completion) -> Void
  ) -> AsyncFunc where Input == (A, B, C) {
    AsyncFunc(name: name, fileID: fileID, line: line) { input, complete in
      body(input.0, input.1, input.2, complete)
    }
  }
}

/// Builds the body of an unnamed ``AsyncFunc/sync(fileID:line:_:)`` lift: it is the body's
/// one expression, unchanged.
///
/// It exists for the type checker only. A one-expression closure is otherwise type-checked
/// together with the whole expression around it; with a builder, the compiler checks it on
/// its own once its input type is known. A body with `return` statements, or several
/// statements, is not built and behaves as any closure.
///
/// ```swift
/// let double: AsyncFunc<Int, Int> = .sync { $0 * 2 }
/// double.run(21) { print($0) }
/// // prints success(42)
/// ```
@resultBuilder
public enum SyncBodyBuilder {
  /// Passes the body's expression through.
  ///
  /// ```swift
  /// print(SyncBodyBuilder.buildExpression(42))
  /// // prints 42
  /// ```
  ///
  /// - Parameter value: The expression's value.
  /// - Returns: `value`.
  @inlinable
  public static func buildExpression<T>(_ value: T) -> T { value }

  /// Makes the body's one expression its result.
  ///
  /// ```swift
  /// print(SyncBodyBuilder.buildBlock("one"))
  /// // prints one
  /// ```
  ///
  /// - Parameter value: The expression's value.
  /// - Returns: `value`.
  @inlinable
  public static func buildBlock<T>(_ value: T) -> T { value }
}
