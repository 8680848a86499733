import AsyncCombinatorsKernel

/// A callback-style asynchronous function, as a value you can compose.
///
/// An `AsyncFunc` takes an `Input` and eventually calls back, once, with a
/// `Result<Output, any Error>`. Nothing happens when you create one: it is a description of
/// work. Compose descriptions with `+>` (one after the other) and `<>` (both at once), then
/// ``run(_:completion:)`` the whole, or `await` it.
///
/// ```swift
/// let fetchUser = AsyncFunc<Int, String>(name: "fetchUser") { id, complete in
///   DispatchQueue.global().async { complete(.success("user\(id)")) }
/// }
/// let greet = AsyncFunc<String, String>.sync(name: "greet") { "Hello, \($0)!" }
/// let pipeline = fetchUser +> greet
/// print(pipeline)
/// print(try await pipeline(7))
/// // prints fetchUser +> greet
/// // prints Hello, user7!
/// ```
///
/// The completion must be called exactly once. The library enforces that: a second call is
/// dropped and reported to ``ContractViolation/faultResponse``, and a completion released
/// without being called fails the run with ``ContractViolation``.
public struct AsyncFunc<Input: Sendable, Output: Sendable>: Sendable {
  /// The callback a function calls, exactly once, with its result.
  public typealias Completion = @Sendable (Result<Output, any Error>) -> Void

  @usableFromInline let program: Program

  @usableFromInline
  init(program: Program) {
    self.program = program
  }

  /// Creates a function from a body that calls `complete` exactly once.
  ///
  /// ```swift
  /// let double = AsyncFunc<Int, Int>(name: "double") { x, complete in
  ///   complete(.success(x * 2))
  /// }
  /// double.run(21) { print($0) }
  /// // prints success(42)
  /// ```
  ///
  /// - Parameters:
  ///   - name: What descriptions, timelines and contract reports call the function.
  ///   - fileID: The file that made the function, for descriptions and reports.
  ///   - line: The line that made the function.
  ///   - body: Starts the work for `input` and calls `complete` when it is done, from any thread.
  @inlinable
  public init(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable (_ input: Input, _ complete: @escaping Completion) -> Void
  ) {
    // The stage calls `body` itself rather than through the three-argument form, which would
    // wrap it in an adapter closure of its own.
    let label = Label(name: name, fileID: fileID, line: line)
    let stage = CallbackStage(shape: .stage(label), label: label) { input, _, completion in
      body(unbox(input), completion.typed(Output.self))
    }
    self.init(program: .callback(stage))
  }

  /// Creates a function whose body can see, and react to, the run's cancellation.
  ///
  /// ```swift
  /// let wait = AsyncFunc<Int, Int>(name: "wait") { x, token, complete in
  ///   let registration = token.onCancel { print("wait saw the cancellation") }
  ///   DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
  ///     registration.remove()
  ///     complete(.success(x))  // too late: dropped
  ///   }
  /// }
  /// wait.run(1) { print($0) }.cancel()
  /// // prints failure(Swift.CancellationError())
  /// // prints wait saw the cancellation
  /// ```
  ///
  /// - Parameters:
  ///   - name: What descriptions, timelines and contract reports call the function.
  ///   - fileID: The file that made the function, for descriptions and reports.
  ///   - line: The line that made the function.
  ///   - body: Starts the work; `token` fires its handlers when the run is cancelled.
  @inlinable
  public init(
    name: String? = nil, fileID: String = #fileID, line: Int = #line,
    _ body:
      @escaping @Sendable (
        _ input: Input, _ token: CancellationToken, _ complete: @escaping Completion
      ) -> Void
  ) {
    self.init(label: Label(name: name, fileID: fileID, line: line), body: body)
  }

  /// A callback stage whose body works on the erased input and the stage's own completion.
  init(
    label: Label,
    body: @escaping @Sendable (AnyValue, CancellationToken, CallbackCompletion) -> Void
  ) {
    self.init(program: .callback(CallbackStage(shape: .stage(label), label: label, body: body)))
  }

  /// Creates a function that wraps another, described as a call on it: `fetch.logged()`.
  ///
  /// For your own modifiers, so that descriptions and timelines show the function inside.
  ///
  /// ```swift
  /// extension AsyncFunc {
  ///   func logged() -> AsyncFunc {
  ///     AsyncFunc(wrapping: self, call: "logged()") { input, token, complete in
  ///       print("start", input)
  ///       self.run(input, token: token, completion: complete)
  ///     }
  ///   }
  /// }
  /// print(AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }.logged())
  /// // prints fetch.logged()
  /// ```
  ///
  /// - Parameters:
  ///   - wrapped: The function the body runs, shown before the call.
  ///   - call: How the call reads after the dot, such as `logged()`.
  ///   - fileID: The file that made the function, for contract reports.
  ///   - line: The line that made the function.
  ///   - body: Starts the work, usually by running `wrapped` on `token`.
  public init<WrappedInput, WrappedOutput>(
    wrapping wrapped: AsyncFunc<WrappedInput, WrappedOutput>, call: String,
    fileID: String = #fileID, line: Int = #line,
    _ body:
      @escaping @Sendable (
        _ input: Input, _ token: CancellationToken, _ complete: @escaping Completion
      ) -> Void
  ) {
    self.init(
      label: Label(name: nil, fileID: fileID, line: line),
      shape: .modified(wrapped.program, call), body: body)
  }

  @inlinable
  init(
    label: Label, shape: Shape? = nil,
    body: @escaping @Sendable (Input, CancellationToken, @escaping Completion) -> Void
  ) {
    let stage = CallbackStage(shape: shape ?? .stage(label), label: label) {
      input, token, completion in
      body(unbox(input), token, completion.typed(Output.self))
    }
    self.init(program: .callback(stage))
  }

  // MARK: Running

  /// Starts the function and calls `completion` exactly once with its result.
  ///
  /// The returned token cancels the run: `completion` then receives `CancellationError` at once,
  /// stages that have not started never start, and a value that arrives later is dropped.
  ///
  /// ```swift
  /// let token = pipeline.run(7) { result in print(result) }
  /// token.cancel()
  /// // prints failure(Swift.CancellationError())
  /// ```
  ///
  /// - Parameters:
  ///   - input: The input of the first stage.
  ///   - completion: Called exactly once, on the thread that finished the last stage (or the
  ///     thread that cancelled).
  /// - Returns: The run's cancellation token.
  @discardableResult
  public func run(_ input: Input, completion: @escaping Completion) -> CancellationToken {
    let token = CancellationToken()
    run(input, token: token, completion: completion)
    return token
  }

  /// Starts the function as part of an existing token's lifetime.
  ///
  /// Cancelling `token` cancels this run as ``run(_:completion:)``'s own token would. Use it
  /// to tie several runs to one cancellation, or to run a function inside another's body.
  @inlinable
  public func run(_ input: Input, token: CancellationToken, completion: @escaping Completion) {
    let run = Run(token: token, ownsCancellation: true) { result in
      completion(result.map { unbox($0) })
    }
    run.start(program, input)
  }

  /// Runs the function as part of a stage of another run, on that run's token.
  ///
  /// Unlike ``run(_:token:completion:)``, the run registers nothing on the token: the run or
  /// join that started the enclosing stage reacts to cancellation itself and delivers
  /// `CancellationError` at once, so a modifier makes no registration, and none that other
  /// runs on a shared token must step over. `completion` is called once this run is over:
  /// when its last stage has called back, or, if the token is cancelled first, when the stage
  /// that was running then calls back (with `CancellationError`).
  @inlinable
  func runNested(_ input: Input, token: CancellationToken, completion: @escaping Completion) {
    let run = Run(token: token, ownsCancellation: false) { result in
      completion(result.map { unbox($0) })
    }
    run.start(program, input)
  }

  /// Starts the function and reports each stage's start and end to `observer`.
  ///
  /// - Returns: The run's cancellation token.
  @discardableResult
  public func run(
    _ input: Input, observer: any RunObserver, completion: @escaping Completion
  ) -> CancellationToken {
    let token = CancellationToken(observedBy: observer)
    run(input, token: token, completion: completion)
    return token
  }
}

extension AsyncFunc where Input == Void {
  /// Starts a function that needs no input. See ``run(_:completion:)``.
  @discardableResult
  public func run(completion: @escaping Completion) -> CancellationToken {
    run((), completion: completion)
  }
}

extension AsyncFunc: CustomStringConvertible {
  /// The function's structure, from the names its stages were given, such as
  /// `(load <> other) +> decode +> dewarp`. An unnamed stage shows where it was made.
  public var description: String { program.structure }
}

extension AsyncFunc {
  /// The library's one modifier builder (see `Program.make(_:reporting:)`): a stage described
  /// as a call on `inner`, whose `body` works on erased values and reports through a
  /// `ModifierReport`: no typed closures around every run, as a public initializer wraps, and
  /// no completion object (Performance.md, "What the code's shape buys, and the check that holds it").
  @usableFromInline
  init(
    modifying inner: Program, call: String,
    body: @escaping @Sendable (AnyValue, CancellationToken, ModifierReport) -> Void
  ) {
    self.init(program: .make(.modified(inner, call), reporting: body))
  }

  /// The builder for a modifier that is a step of its own in a trace (a fold, `latest`):
  /// `body` completes through the stage's `CallbackCompletion`. See
  /// `Program.make(_:label:completing:)`.
  init(
    modifying inner: Program, call: String, label: Label,
    body: @escaping @Sendable (AnyValue, CancellationToken, CallbackCompletion) -> Void
  ) {
    self.init(program: .make(.modified(inner, call), label: label, completing: body))
  }
}
