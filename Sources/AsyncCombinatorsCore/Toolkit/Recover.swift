import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Turns a failure into a value: when this function fails, `transform` gets the error and
  /// returns the output instead, or throws the failure to report.
  ///
  /// `CancellationError` is not a failure and is never recovered.
  ///
  /// ```swift
  /// let avatarOrPlaceholder = avatar.recover { _ in .placeholder }
  /// let cached = fetch.recover { error in
  ///   guard error is URLError else { throw error }
  ///   return cache.last
  /// }
  /// print(AsyncFunc<Int, Int>.sync(name: "parse") { _ in throw ParseError() }.recover { _ in 0 })
  /// // prints parse.recover { … }
  /// ```
  ///
  /// - Parameter transform: Maps an error to an output; a throw is the new failure.
  /// - Returns: A function with the same input and output.
  public func recover(
    _ transform: @escaping @Sendable (any Error) throws -> Output
  ) -> AsyncFunc {
    let inner = program
    let recovery: @Sendable (any Error) throws -> AnyValue = { try transform($0) }
    let call = "recover { … }"
    return AsyncFunc(modifying: inner, call: call) { input, token, report in
      inner.start(input, token: token, parent: Recovery(report, recovery))
    }
  }
}

extension AsyncFunc {
  /// Recovers asynchronously: when this function fails, `fallback` gets the error and its
  /// result is the result, as part of the same run (cancelling the run cancels the fallback).
  ///
  /// PromiseKit's promise-returning `recover`. `CancellationError` is not a failure: it is
  /// never handed to the fallback.
  ///
  /// ```swift
  /// struct Outage: Error {}
  /// let primary = AsyncFunc<String, String>.sync(name: "primary") { _ in throw Outage() }
  /// let mirror = AsyncFunc<any Error, String>.sync(name: "mirror") { _ in "from the mirror" }
  /// let fetch = primary.recover(with: mirror)
  /// print(fetch)
  /// print(try await fetch("a.txt"))
  /// // prints primary.recover(with: mirror)
  /// // prints from the mirror
  /// ```
  ///
  /// - Parameter fallback: Runs with the error; its success is the output, its failure the
  ///   new failure.
  /// - Returns: A function with the same input and output.
  public func recover(with fallback: AsyncFunc<any Error, Output>) -> AsyncFunc {
    let (inner, fallback) = (program, fallback.program)
    return AsyncFunc(modifying: inner, call: "recover(with: \(fallback.structure))") {
      input, token, report in
      inner.start(input, token: token, parent: Fallback(report, fallback, token))
    }
  }
}

/// Where a `recover(with:)` stage's inner function reports: a failure other than cancellation
/// starts the fallback, which reports to the stage's own completion.
private final class Fallback: StageParent {
  private let report: ModifierReport
  private let fallback: Program
  private let token: CancellationToken

  init(_ report: ModifierReport, _ fallback: Program, _ token: CancellationToken) {
    self.report = report
    self.fallback = fallback
    self.token = token
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) { report.succeed(value) }

  func childFailed(_ error: any Error, tag _: Int) {
    guard !(error is CancellationError) else { return report.fail(error) }
    fallback.continueStage(error, token: token, report: report)
  }
}

/// Where a `recover` stage's inner function reports: a failure other than cancellation goes
/// through the transform.
private final class Recovery: StageParent {
  private let report: ModifierReport
  private let transform: @Sendable (any Error) throws -> AnyValue

  init(
    _ report: ModifierReport, _ transform: @escaping @Sendable (any Error) throws -> AnyValue
  ) {
    self.report = report
    self.transform = transform
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) { report.succeed(value) }

  func childFailed(_ error: any Error, tag _: Int) {
    guard !(error is CancellationError) else { return report.fail(error) }
    let recovered: AnyValue
    do { recovered = try transform(error) } catch { return report.fail(error) }
    report.succeed(recovered)
  }
}
