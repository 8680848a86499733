// Lifts: turn functions of other shapes into `AsyncFunc`s. Each is a static factory with its
// own label, so a closure's shape never makes the call ambiguous or slow to type-check.

extension AsyncFunc {
  /// Lifts a synchronous function: it runs on the thread that reaches it, and a throw is the
  /// failure.
  ///
  /// A synchronous stage costs a few nanoseconds and no allocation.
  ///
  /// ```swift
  /// let parse = AsyncFunc<String, Int>.sync(name: "parse") { text in
  ///   guard let number = Int(text) else { throw ParseError.notANumber(text) }
  ///   return number
  /// }
  /// parse.run("42") { print($0) }
  /// // prints success(42)
  /// ```
  @inlinable
  public static func sync(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input) throws -> Output
  ) -> AsyncFunc {
    let label = Label(name: name, fileID: fileID, line: line)
    return AsyncFunc(
      program: .direct(DirectStage(shape: .stage(label), label: label) { try body(unbox($0)) }))
  }

  /// Lifts an `async` function. It runs in a new `Task`; cancelling the run cancels that task.
  ///
  /// ```swift
  /// let fetch = AsyncFunc<URL, Data>.async(name: "fetch") { url in
  ///   try await URLSession.shared.data(from: url).0
  /// }
  /// ```
  public static func async(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (Input) async throws -> Output
  ) -> AsyncFunc {
    AsyncFunc(label: Label(name: name, fileID: fileID, line: line)) { input, token, complete in
      let link = CancellationLink()
      let task = Task {
        let result: Result<Output, any Error>
        do { result = .success(try await body(input)) } catch { result = .failure(error) }
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

extension AsyncFunc where Output == Void {
  /// Lifts a callback that reports only an error, or `nil` for success.
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
