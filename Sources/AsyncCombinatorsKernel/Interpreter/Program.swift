import Dispatch

/// A value flowing between stages once their types have been erased.
@usableFromInline package typealias AnyValue = any Sendable
@usableFromInline package typealias AnyResult = Result<AnyValue, any Error>

/// What a function is called and where it was made: for diagnostics, descriptions, timelines.
@usableFromInline
package struct Label: Sendable {
  @usableFromInline package var name: String?
  @usableFromInline package var fileID: String
  @usableFromInline package var line: Int

  @inlinable
  package init(name: String?, fileID: String, line: Int) {
    self.name = name
    self.fileID = fileID
    self.line = line
  }

  /// `name` when given, else `File.swift:12`.
  package var display: String { name ?? "\(Label.fileName(fileID)):\(line)" }

  package static func fileName(_ fileID: String) -> Substring {
    fileID.split(separator: "/").last ?? Substring(fileID)
  }
}

/// How a stage shows up in `String(describing:)` of the function that contains it.
@usableFromInline
package enum Shape: Sendable {
  /// A primitive stage: its name or where it was made.
  case stage(Label)
  /// Plumbing that adds nothing a reader needs to see (the constant stage of `bind`).
  case hidden
  /// Branches that run at once, and how the code that made them spelled it: `<>` pairs, while
  /// `parallel(a, b, c)` and `AsyncFunc.parallel([a, b, c])` have other output types, so each
  /// describes as written.
  case parallel(Branches, ParallelSpelling)
  /// An operation applied to one inner function, shown as the call that made it:
  /// `fetch.retry(2)`, `(a +> b).timeout(.seconds(1))`.
  case modified(Program, String)
}

/// How a fork-join was written, for its description.
@usableFromInline
package enum ParallelSpelling: Sendable {
  /// `a <> b`: a pair.
  case pairOperator
  /// `parallel(a, b, c)`: a flat tuple.
  case tuple
  /// `AsyncFunc.parallel([a, b, c])`: an array.
  case array
}

/// The erased form of every ``AsyncFunc``: a tree the interpreter in `Run` walks with an
/// explicit stack, so running it never recurses once per stage.
@usableFromInline
package enum Program: Sendable {
  /// A callback stage: it completes through a `CallbackCompletion`, maybe on another thread.
  case callback(CallbackStage)
  /// A synchronous stage that returns or throws; it cannot break the callback contract.
  case direct(DirectStage)
  /// A synchronous stage that runs on a performer: one block, and the run goes on there.
  case hop(HopStage)
  /// A library modifier's stage: like a callback stage, but it reports through a
  /// `ModifierReport` rather than a completion object.
  case modifier(ModifierStage)
  /// `first +> second`, boxed in a class whose `deinit` takes deep chains apart without
  /// recursing.
  case serial(SerialNode)
  /// The serial fold of an array; empty is the identity.
  case sequence([Program])

  package var shape: Shape {
    switch self {
    case .callback(let stage): stage.shape
    case .direct(let stage): stage.shape
    case .hop(let stage): stage.shape
    case .modifier(let stage): stage.shape
    case .serial, .sequence: .hidden
    }
  }

  /// `first +> second`.
  @usableFromInline
  package static func serial(_ first: Program, _ second: Program) -> Program {
    .serial(SerialNode(first, second))
  }

  /// The empty serial fold: completes with its input.
  package static let identity = Program.sequence([])
}

/// The two sides of a `+>`.
///
/// A left-nested chain of 100,000 `+>` is a tree 100,000 nodes deep. Swift releases nested
/// enums recursively, which overflows a small stack, so this `deinit` detaches uniquely held
/// children onto an explicit worklist first: each node then dies with nothing left to release
/// below it. `first` and `second` are only ever mutated there, on a node nothing else holds,
/// which is what makes the `@unchecked Sendable` safe, and what lets their accesses go
/// unchecked for exclusivity: the loop reads them once per stage (Performance.md).
@usableFromInline
package final class SerialNode: @unchecked Sendable {
  @exclusivity(unchecked) private(set) var first: Program
  @exclusivity(unchecked) private(set) var second: Program

  package init(_ first: Program, _ second: Program) {
    self.first = first
    self.second = second
  }

  deinit {
    var pending: [SerialNode] = []
    Self.detach(&first, into: &pending)
    Self.detach(&second, into: &pending)
    // Each node is released here, childless, so its own `deinit` has nothing to walk.
    while let node = pending.popLast() {
      Self.detach(&node.first, into: &pending)
      Self.detach(&node.second, into: &pending)
    }
  }

  /// Moves `program`'s node onto `pending` when this is its last reference.
  private static func detach(_ program: inout Program, into pending: inout [SerialNode]) {
    // Matched without binding first, then taken out: a `switch` on `program` would hold a
    // reference of its own in an unoptimized build, and no node would look unique.
    guard case .serial = program else { return }
    guard case .serial(var node) = consume program else { fatalError() }
    // Leaves `node` as the only reference, if nothing else shares it. Spelled out rather
    // than `.identity`, whose lazy global would be checked once per node.
    program = .sequence([])
    if isKnownUniquelyReferenced(&node) { pending.append(node) }
  }
}

/// A function written as a callback body: it completes through a `CallbackCompletion`, maybe on
/// another thread.
@usableFromInline
package final class CallbackStage: Sendable {
  /// The stage's shape: what descriptions and timeline events call it.
  package let shape: Shape
  package let label: Label
  package let body: @Sendable (AnyValue, CancellationToken, CallbackCompletion) -> Void

  @usableFromInline
  package init(
    shape: Shape, label: Label,
    body: @escaping @Sendable (AnyValue, CancellationToken, CallbackCompletion) -> Void
  ) {
    self.shape = shape
    self.label = label
    self.body = body
  }
}

/// A library modifier's or join's stage: it completes through a `ModifierReport`, not a
/// completion object. Built only through `Program.make(_:reporting:)`.
@usableFromInline
package final class ModifierStage: Sendable {
  package let shape: Shape
  package let body: @Sendable (AnyValue, CancellationToken, ModifierReport) -> Void

  package init(
    shape: Shape, body: @escaping @Sendable (AnyValue, CancellationToken, ModifierReport) -> Void
  ) {
    self.shape = shape
    self.body = body
  }
}

@usableFromInline
package final class DirectStage: Sendable {
  package let shape: Shape
  package let label: Label
  package let body: @Sendable (AnyValue) throws -> AnyValue

  @usableFromInline
  package init(shape: Shape, label: Label, body: @escaping @Sendable (AnyValue) throws -> AnyValue)
  {
    self.shape = shape
    self.label = label
    self.body = body
  }
}

// MARK: Building a library stage

/// The one way the library builds a modifier or a join (`retry`, `timeout`, `limit`, `race`,
/// `latest`, `<>`, the folds, `delay`…): a stage that starts its inner work with
/// `Program.start`. It comes in two kinds, the one choice a modifier makes:
///
/// - `make(_:reporting:)`: the stage completes through a `ModifierReport`. It completes exactly
///   once by construction, so it needs no completion object, and it is not a step of its own
///   in a trace: what it runs is.
/// - `make(_:label:completing:)`: the stage completes through a `CallbackCompletion`, which
///   traces it as a step of its own (a fork-join, a fold, `latest`, `delay`) and checks the
///   callback contract.
///
/// Either way the stage counts as one body in flight while it runs, as every stage does; the
/// start path (`Program.start`) decides that, not the modifier.
extension Program {
  /// A modifier or join stage that completes through a `ModifierReport`.
  package static func make(
    _ shape: Shape,
    reporting body: @escaping @Sendable (AnyValue, CancellationToken, ModifierReport) -> Void
  ) -> Program {
    .modifier(ModifierStage(shape: shape, body: body))
  }

  /// A modifier or join stage that is a step of its own in a trace, and completes through a
  /// `CallbackCompletion`.
  package static func make(
    _ shape: Shape, label: Label,
    completing body: @escaping @Sendable (AnyValue, CancellationToken, CallbackCompletion) -> Void
  ) -> Program {
    .callback(CallbackStage(shape: shape, label: label, body: body))
  }
}
