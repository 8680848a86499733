import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs `cleanup` with this function's input after this function finishes, whether it
  /// succeeded or failed, then delivers this function's result.
  ///
  /// HoneyBee's `finally`, used for per-item progress. The result waits for the cleanup.
  /// When this function fails, its error is the result whatever the cleanup does; when it
  /// succeeds and the cleanup fails, the cleanup's error is. A cancelled run is over: the
  /// cleanup does not start.
  ///
  /// ```swift
  /// let progress = AsyncFunc<String, Void>.sync(name: "progress") { print("done with \($0)") }
  /// let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }.finally(progress)
  /// print(upload)
  /// print(try await upload("a.mov"))
  /// // prints upload.finally(progress)
  /// // prints done with a.mov
  /// // prints 5
  /// ```
  ///
  /// - Parameter cleanup: Runs after this function, with its input.
  /// - Returns: A function with the same input and output.
  public func finally(_ cleanup: AsyncFunc<Input, Void>) -> AsyncFunc {
    let (inner, cleanup) = (program, cleanup.program)
    let call = "finally(\(cleanup.structure))"
    return AsyncFunc(modifying: inner, call: call) {
      input, token, report in
      inner.start(input, token: token, parent: Cleanup(report, cleanup, input, token))
    }
  }
}

extension AsyncFunc {
  /// Calls `cleanup` with this function's input after this function finishes, succeeded or
  /// failed, then delivers this function's result: `finally(_:)` with a function
  /// for a synchronous cleanup, without lifting it first.
  ///
  /// ```swift
  /// let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }
  ///   .finally { file in print("done with \(file)") }
  /// print(try await upload("a.mov"))
  /// // prints done with a.mov
  /// // prints 5
  /// ```
  ///
  /// - Parameter cleanup: Runs after this function, with its input; a cancelled run skips it.
  /// - Returns: A function with the same input and output.
  public func finally(_ cleanup: @escaping @Sendable (Input) -> Void) -> AsyncFunc {
    finally(AsyncFunc<Input, Void>.sync(name: "{ … }", cleanup))
  }

  /// Calls `body` with the input and the result of every run of this function, then passes
  /// the result on unchanged: for per-item progress and logging.
  ///
  /// PromiseKit's `tap`, with the input too. `body` runs once the function is over, on the
  /// thread that finished it; it sees failures, and the `CancellationError` of a cancelled run
  /// once the body that was running has called back.
  ///
  /// ```swift
  /// let upload = AsyncFunc<String, Int>.sync(name: "upload") { $0.count }
  ///   .tap { file, result in print(file, result) }
  /// _ = try await upload("a.mov")
  /// // prints a.mov success(5)
  /// ```
  ///
  /// - Parameter body: Sees each run's input and result.
  /// - Returns: A function with the same input and output.
  public func tap(
    _ body: @escaping @Sendable (Input, Result<Output, any Error>) -> Void
  ) -> AsyncFunc {
    let inner = program
    let observe: @Sendable (AnyValue, AnyResult) -> Void = { input, result in
      body(unbox(input), result.map { unbox($0) })
    }
    return AsyncFunc(modifying: inner, call: "tap { … }") { input, token, report in
      inner.start(input, token: token, parent: Tap(report, input, observe))
    }
  }
}

/// Where a `tap` stage's inner function reports: the body sees the result on its way through.
private final class Tap: StageParent {
  private let report: ModifierReport
  private let input: AnyValue
  private let observe: @Sendable (AnyValue, AnyResult) -> Void

  init(
    _ report: ModifierReport, _ input: AnyValue,
    _ observe: @escaping @Sendable (AnyValue, AnyResult) -> Void
  ) {
    self.report = report
    self.input = input
    self.observe = observe
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    let value = value
    observe(input, .success(value))
    report.succeed(value)
  }

  func childFailed(_ error: any Error, tag _: Int) {
    observe(input, .failure(error))
    report.fail(error)
  }
}

/// Where a `finally` stage's two functions report: the inner one tagged phase 0, then the
/// cleanup tagged phase 1, which delivers the inner result unless only the cleanup failed.
///
/// `value` and `failure` (the inner result, one of them set) are written before the cleanup
/// starts and read when the cleanup reports, which the cleanup's completion orders after that
/// start: that is what makes `@unchecked Sendable` safe.
private final class Cleanup: StageParent, @unchecked Sendable {
  private let report: ModifierReport
  private let cleanup: Program
  private let input: AnyValue
  private let token: CancellationToken
  private var value: AnyValue?
  private var failure: (any Error)?

  init(
    _ report: ModifierReport, _ cleanup: Program, _ input: AnyValue,
    _ token: CancellationToken
  ) {
    self.report = report
    self.cleanup = cleanup
    self.input = input
    self.token = token
  }

  func childSucceeded(_ value: consuming AnyValue, tag phase: Int) {
    guard phase == 0 else {
      if let failure = failure.take() { return report.fail(failure) }
      return report.succeed(self.value.take()!)
    }
    self.value = value
    cleanup.start(input, token: token, parent: self, tag: 1)
  }

  func childFailed(_ error: any Error, tag phase: Int) {
    guard phase == 0 else {
      // The inner function's failure wins over the cleanup's.
      value = nil
      return report.fail(failure.take() ?? error)
    }
    // A cancelled run is over: `start` sees the token and the cleanup does not begin.
    failure = error
    cleanup.start(input, token: token, parent: self, tag: 1)
  }
}
