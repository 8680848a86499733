/// How a modifier or a join starts the functions it runs: as part of its own stage, without a
/// run of its own when it can. The one start path below the run's loop.
///
/// A started function that is one callback stage (the common case: `fetch.retry(2)`) is
/// started directly, with a completion that reports to `parent`; a synchronous stage is called
/// in place. Anything larger gets a nested `Run`, which registers nothing on the token: the
/// run or join that started the modifier's stage delivers the cancellation itself. Either
/// way the modifier makes one small object per run, not a run, a registration and closures
/// (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// Whether the started stage counts as work in flight is decided in one place,
/// `ModifierReport.admitted(on:_:)`, by the `StageCounting` each entry point names: a new start
/// joins its token's count (`start(_:token:parent:tag:)`), the rest of a stage takes over
/// the count the stage joined (`continueStage(_:token:report:)`).
///
/// Who calls whom: a callback stage's body calls its `CallbackCompletion`, a modifier's body
/// its `ModifierReport`; both call the `StageParent` that started the stage, handing back the
/// `tag` it chose (a fork-join's branch, a fold's element, a hedge's attempt, `finally`'s
/// phase; 0 when the parent starts one thing).
extension Program {
  /// Starts this program as a new stage that reports to `parent`, with `tag`: a modifier's
  /// inner function, a join's branch, a fold's element. A callback or modifier stage joins the
  /// token's count of bodies in flight.
  @usableFromInline
  package func start(
    _ input: AnyValue, token: CancellationToken, parent: some StageParent, tag: Int = 0
  ) {
    launch(
      input, token: token, report: ModifierReport(parent: parent, tag: tag, counted: nil),
      counting: .joinsToken)
  }

  /// Starts this program as the rest of a modifier's stage: it reports through `report`, and
  /// takes over the stage's count of work in flight rather than adding one of its own. A
  /// single callback stage then needs only its own completion, and a modifier inside it none.
  package func continueStage(
    _ input: AnyValue, token: CancellationToken, report: ModifierReport
  ) {
    launch(input, token: token, report: report, counting: .continuesStage)
  }

  @inline(__always)
  private func launch(
    _ input: AnyValue, token: CancellationToken, report: ModifierReport, counting: StageCounting
  ) {
    switch self {
    case .callback(let stage):
      guard let report = report.admitted(on: token, counting) else { return }
      let completion = CallbackCompletion(
        parent: report.parent, tag: report.tag, stage: stage, token: token,
        counted: report.counted)
      stage.body(input, token, completion)
    case .modifier(let stage):
      guard let report = report.admitted(on: token, counting) else { return }
      stage.body(input, token, report)
    case .direct(let stage):
      // Synchronous: over before anything could count it.
      if token.isCancelled { return report.fail(CancellationError()) }
      let value: AnyValue
      do {
        value = try stage.call(input, observedBy: token.observer)
      } catch {
        return report.fail(error)
      }
      report.succeed(value)
    case .hop(let stage):
      guard let report = report.admitted(on: token, counting) else { return }
      stage.performer.perform {
        // Cancelled while the block waited for its performer: the body never starts.
        if token.isCancelled { return report.fail(CancellationError()) }
        let value: AnyValue
        do {
          value = try stage.call(input, observedBy: token.observer)
        } catch {
          return report.fail(error)
        }
        report.succeed(value)
      }
    case .serial, .sequence:
      // Each stage of the nested run counts itself, as in any run.
      Run(token: token, ownsCancellation: false) { result in report.complete(result) }
        .start(self, input)
    }
  }
}

/// How a callback, modifier or hop stage that is about to start counts as work in flight.
enum StageCounting {
  /// A new stage: it joins its token's count of bodies in flight (`beginStage()`), as every
  /// stage of a run does.
  case joinsToken
  /// The rest of a modifier's stage (`on`'s hop, `recover(with:)`'s fallback): it takes over
  /// the count the stage joined when it started, and adds none.
  case continuesStage
}

extension ModifierReport {
  /// The report a stage starting on `token` completes through, counted as `counting` says, or
  /// `nil` when the token is cancelled, after failing this report with `CancellationError`:
  /// the one place a start decides its counting.
  @inline(__always)
  fileprivate func admitted(on token: CancellationToken, _ counting: StageCounting)
    -> ModifierReport?
  {
    switch counting {
    case .continuesStage:
      guard token.isCancelled else { return self }
    case .joinsToken:
      if let start = token.beginStage() {
        return ModifierReport(parent: parent, tag: tag, counted: start.counted)
      }
    }
    fail(CancellationError())
    return nil
  }
}

/// A stage allowed to start: the count of bodies in flight it joined, if its token has one.
struct StageStart {
  let counted: (any InFlightWork)?
}

extension CancellationToken {
  /// Lets a callback or modifier stage start on this token, unless it is cancelled.
  ///
  /// The stage joins the token's count of bodies in flight first, then checks: so a limit
  /// that sees no body in flight and gives its slot back is ordered before the check, which
  /// then sees the cancellation that ended it. A stage that must not start leaves the count
  /// again.
  ///
  /// - Returns: The stage's start, or `nil` when it must fail with `CancellationError`.
  func beginStage() -> StageStart? {
    let counted = inFlight.flatMap { $0.enter() ? $0 : nil }
    guard isCancelled else { return StageStart(counted: counted) }
    counted?.leave()
    return nil
  }
}

extension DirectStage {
  /// Calls the body on `input`, telling `observer`, if any, when it starts and how it ends.
  func call(_ input: AnyValue, observedBy observer: (any StageObserver)?) throws -> AnyValue {
    try callObserved(shape, body, input, observer)
  }
}

/// How a library modifier's or join's stage completes: it tells the parent that started it
/// (a run, a join or another modifier), and gives back the stage's count of work in flight.
///
/// A value, kept by the modifier's own `StageParent` object, in place of a
/// `CallbackCompletion`: the
/// library's modifiers complete exactly once by construction, so they need no object to
/// enforce it (Performance.md, "What the code's shape buys, and the check that holds it"). A
/// modifier calls exactly one of these, exactly once.
@usableFromInline
package struct ModifierReport: Sendable {
  package let parent: any StageParent
  package let tag: Int
  /// The count this stage entered when it started, if it runs within one.
  package let counted: (any InFlightWork)?

  @usableFromInline
  package func succeed(_ value: consuming AnyValue) {
    counted?.leave()
    parent.childSucceeded(value, tag: tag)
  }

  @usableFromInline
  package func fail(_ error: any Error) {
    counted?.leave()
    parent.childFailed(error, tag: tag)
  }

  package func complete(_ result: AnyResult) {
    switch result {
    case .success(let value): succeed(value)
    case .failure(let error): fail(error)
    }
  }
}

extension CallbackCompletion: StageParent {
  @usableFromInline package func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    succeed(value)
  }
  @usableFromInline package func childFailed(_ error: any Error, tag _: Int) { fail(error) }
}
