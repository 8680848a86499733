import Dispatch

/// Something that runs blocks of work in its own context: a dispatch queue, a Core Data
/// context's `perform`, a run loop, a test's recording executor.
///
/// `AsyncFunc.on(_:)` and `AsyncFunc.sync(on:name:fileID:line:_:)` use it to run a function
/// where the function needs to run.
///
/// ```swift
/// struct ContextPerformer: BlockPerformer {
///   let context: NSManagedObjectContext
///   func perform(_ work: @escaping @Sendable () -> Void) { context.perform(work) }
/// }
/// ```
public protocol BlockPerformer: Sendable {
  /// Runs `work` once, soon, in this performer's context; returns without waiting for it.
  func perform(_ work: @escaping @Sendable () -> Void)
}

extension DispatchQueue: BlockPerformer {
  /// Runs `work` asynchronously on the queue.
  public func perform(_ work: @escaping @Sendable () -> Void) {
    async(execute: work)
  }
}

/// A synchronous body that runs on a performer: the stage hands the performer one block, which
/// runs the body there and goes on with the run on the performer's thread. No completion
/// object, and the block captures the run alone: everything else it needs travels in the
/// run's baton (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// Built by `AsyncFunc.sync(on:…)`, and by `on(_:)` around a synchronous stage.
@usableFromInline
package final class HopStage: Sendable {
  /// What descriptions and traces call the stage. A hop cannot break the callback contract,
  /// so it keeps no label of its own for reports.
  package let shape: Shape
  package let performer: any BlockPerformer
  package let body: @Sendable (AnyValue) throws -> AnyValue

  @usableFromInline
  package init(
    shape: Shape, performer: any BlockPerformer,
    body: @escaping @Sendable (AnyValue) throws -> AnyValue
  ) {
    self.shape = shape
    self.performer = performer
    self.body = body
  }

  /// Calls the body on `input`, telling `observer`, if any, when it starts and how it ends.
  func call(_ input: AnyValue, observedBy observer: (any StageObserver)?) throws -> AnyValue {
    try callObserved(shape, body, input, observer)
  }
}

extension Program {
  /// This synchronous stage run on `performer` instead of in place: a hop stage described by
  /// `shape`. `nil` for any other program, which `on(_:)` wraps in a modifier instead.
  package func hopping(to performer: any BlockPerformer, shape: Shape) -> Program? {
    guard case .direct(let stage) = self else { return nil }
    return .hop(
      HopStage(shape: shape, performer: performer, body: stage.body))
  }
}

/// Calls a synchronous stage's body on `input`, telling `observer`, if any, when it starts and
/// how it ends: the one place a direct or hop stage is traced.
@inline(__always)
func callObserved(
  _ shape: Shape, _ body: @Sendable (AnyValue) throws -> AnyValue, _ input: AnyValue,
  _ observer: (any StageObserver)?
) throws -> AnyValue {
  guard let observer else { return try body(input) }
  let event = StageEvent.begin(shape, observer)
  do {
    let value = try body(input)
    event?.end(.succeeded)
    return value
  } catch {
    event?.end(StageOutcome(error))
    throw error
  }
}
