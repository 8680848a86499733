import Dispatch

/// A value flowing between stages once their types have been erased.
@usableFromInline typealias AnyValue = any Sendable
@usableFromInline typealias AnyResult = Result<AnyValue, any Error>

/// What a function is called and where it was made: for diagnostics, descriptions, timelines.
@usableFromInline
struct Label: Sendable {
  @usableFromInline var name: String?
  @usableFromInline var fileID: String
  @usableFromInline var line: Int

  @inlinable
  init(name: String?, fileID: String, line: Int) {
    self.name = name
    self.fileID = fileID
    self.line = line
  }

  /// `name` when given, else `File.swift:12`.
  var display: String { name ?? "\(Label.fileName(fileID)):\(line)" }

  static func fileName(_ fileID: String) -> Substring {
    fileID.split(separator: "/").last ?? Substring(fileID)
  }
}

/// How a stage shows up in `String(describing:)` of the function that contains it.
@usableFromInline
enum Shape: Sendable {
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
enum ParallelSpelling: Sendable {
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
enum Program: Sendable {
  /// A callback stage: it completes through a `StageCompletion`, maybe on another thread.
  case callback(CallbackStage)
  /// A synchronous stage that returns or throws; it cannot break the callback contract.
  case direct(DirectStage)
  /// A library modifier's stage: like a callback stage, but it reports through a
  /// `StageReport` rather than a completion object.
  case modifier(ModifierStage)
  /// `first +> second`, boxed in a class whose `deinit` takes deep chains apart without
  /// recursing.
  case serial(SerialNode)
  /// The serial fold of an array; empty is the identity.
  case sequence([Program])
  /// A hop: the run parks, and the performer resumes it, running the node's block first when
  /// it is a promise block. Nothing can complete twice or race the start, so it needs no
  /// completion object.
  case hop(HopNode)
  /// `node.previous +> .hop(node)` in one object: a promise's run of `then` blocks, a
  /// `BlockChain` that makes one hop a link (see `Program.chaining`).
  case then(HopNode)

  var shape: Shape {
    switch self {
    case .callback(let stage): stage.shape
    case .direct(let stage): stage.shape
    case .modifier(let stage): stage.shape
    case .hop(let node): node.shape
    case .serial, .sequence, .then: .hidden
    }
  }

  /// `first +> second`. (A promise's `then` links in place instead: see `chaining`.)
  @usableFromInline
  static func serial(_ first: Program, _ second: Program) -> Program {
    .serial(SerialNode(first, second))
  }

  /// `program` followed by one more promise block: appended in place to the chain that ends
  /// `program` when nothing else holds it, else the first link of a new chain.
  ///
  /// A promise's `then` consumes the promise it extends, so a chain written in one expression,
  /// or grown in a loop of `promise = promise.then { … }` in an optimized build, reaches here
  /// holding its chain alone: its links share one object and one growing buffer, and building
  /// or freeing a link allocates nothing. A chain that other promises still hold is never
  /// touched: the new link starts a chain of its own that follows it.
  @usableFromInline
  static func chaining(
    _ link: consuming ChainedBlock, after program: consuming Program
  ) -> Program {
    // Matched without binding first, then taken out of the consumed value: a binding in a
    // `switch` holds a reference of its own in an unoptimized build, and the node would never
    // look unique.
    guard case .then = program else { return .then(BlockChain(following: program, link)) }
    guard case .then(var node) = consume program else { fatalError() }
    if node.isChain, isKnownUniquelyReferenced(&node) {
      let chain = unsafeDowncast(consume node, to: BlockChain.self)
      chain.append(link)
      return .then(chain)
    }
    return .then(BlockChain(following: .then(node), link))
  }
}

/// The two sides of a `+>`.
///
/// A left-nested chain of 100,000 `+>` is a tree 100,000 nodes deep. Swift releases nested
/// enums recursively, which overflows a small stack, so this `deinit` detaches uniquely held
/// children onto an explicit worklist first: each node then dies with nothing left to release
/// below it. `first` and `second` are only ever mutated there, on a node nothing else holds,
/// which is what makes the `@unchecked Sendable` safe, and what makes the dynamic exclusivity
/// checks redundant: every other access is a read, and they cost the interpreter two runtime
/// calls per `+>` it walks.
@usableFromInline
final class SerialNode: @unchecked Sendable {
  @exclusivity(unchecked) private(set) var first: Program
  @exclusivity(unchecked) private(set) var second: Program

  init(_ first: Program, _ second: Program) {
    self.first = first
    self.second = second
  }

  deinit {
    // Most nodes die with no uniquely held chain node below them: the worklist then never
    // allocates.
    var pending: [ChainLink] = []
    ChainLink.detach(&first, into: &pending)
    ChainLink.detach(&second, into: &pending)
    ChainLink.tearDown(&pending)
  }

  fileprivate func detachChildren(into pending: inout [ChainLink]) {
    ChainLink.detach(&first, into: &pending)
    ChainLink.detach(&second, into: &pending)
  }
}

/// A node that links one program to the next, `SerialNode` or a `then` hop: what a long chain
/// nests, and what must be taken apart without recursing when it dies.
private enum ChainLink {
  case serial(SerialNode)
  case then(HopNode)

  /// Moves `program`'s node onto `pending` when this is its last reference.
  static func detach(_ program: inout Program, into pending: inout [ChainLink]) {
    // Matched without binding first, then taken out: a `switch` on `program` would hold a
    // reference of its own in an unoptimized build, and no node would look unique.
    if case .serial = program {
      guard case .serial(var node) = consume program else { fatalError() }
      program = .identity  // Leaves `node` as the only reference, if nothing else shares it.
      if isKnownUniquelyReferenced(&node) { pending.append(.serial(node)) }
    } else if case .then = program {
      guard case .then(var node) = consume program else { fatalError() }
      program = .identity
      if isKnownUniquelyReferenced(&node) { pending.append(.then(node)) }
    }
  }

  /// Takes every pending node's children off it before it is released, so that each dies
  /// with nothing left to release below it.
  static func tearDown(_ pending: inout [ChainLink]) {
    while let link = pending.popLast() {
      switch link {
      case .serial(let node): node.detachChildren(into: &pending)
      case .then(let node): node.detachPrevious(into: &pending)
      }
    }  // Each node is released here, childless, so its own `deinit` has nothing to walk.
  }
}

extension Program {
  /// The empty serial fold: completes with its input.
  static let identity = Program.sequence([])
}

/// A function written as a callback body: it completes through a `StageCompletion`, maybe on
/// another thread.
@usableFromInline
final class CallbackStage: Sendable {
  /// The stage's shape: what descriptions and timeline events call it.
  let shape: Shape
  let label: Label
  let body: @Sendable (AnyValue, CancellationToken, StageCompletion) -> Void

  @usableFromInline
  init(
    shape: Shape, label: Label,
    body: @escaping @Sendable (AnyValue, CancellationToken, StageCompletion) -> Void
  ) {
    self.shape = shape
    self.label = label
    self.body = body
  }
}

@usableFromInline
final class ModifierStage: Sendable {
  let shape: Shape
  let body: @Sendable (AnyValue, CancellationToken, StageReport) -> Void

  init(shape: Shape, body: @escaping @Sendable (AnyValue, CancellationToken, StageReport) -> Void) {
    self.shape = shape
    self.body = body
  }
}

@usableFromInline
final class DirectStage: Sendable {
  let shape: Shape
  let label: Label
  let body: @Sendable (AnyValue) throws -> AnyValue

  @usableFromInline
  init(shape: Shape, label: Label, body: @escaping @Sendable (AnyValue) throws -> AnyValue) {
    self.shape = shape
    self.label = label
    self.body = body
  }
}

/// Where a `.hop` resumes its run. On its own a hop passes its value through; a promise block
/// is a `BlockNode`, which runs its body there first.
///
/// No lock makes it safe: every stored property but `previous` (and `BlockChain`'s `rest`) is a
/// `let` of a `Sendable` type, here and in the subclasses, and those are written only while one
/// reference holds the node: by `Program.chaining` before it hands the node out, and
/// (`previous`) by a `deinit` taking a chain apart. A run that reads a node holds a reference
/// of its own, so nothing writes a node while a run reads it. A class that can be subclassed
/// cannot say so to the compiler, hence `@unchecked`.
@usableFromInline
class HopNode: @unchecked Sendable {
  let performer: any BlockPerformer
  let shape: Shape
  /// Whether the node is a `BlockChain`, which a promise's next `then` may extend.
  let isChain: Bool
  /// What a `.then` runs before this hop; the identity while the node is a plain `.hop`.
  @exclusivity(unchecked) private(set) var previous = Program.sequence([])

  init(_ performer: any BlockPerformer, shape: Shape = .hidden, isChain: Bool = false) {
    self.performer = performer
    self.shape = shape
    self.isChain = isChain
  }

  deinit {
    // A promise chain is `then` links all the way down: they are taken apart in a loop, each
    // link's predecessor detached before the link itself is released, with no worklist. A
    // link that follows a `+>` leaves that node to take itself apart.
    var link = Self.detachIfUniqueLink(&previous)
    while let node = link { link = Self.detachIfUniqueLink(&node.previous) }
  }

  /// Takes `program` out when it is a `then` link held nowhere else, leaving the identity.
  private static func detachIfUniqueLink(_ program: inout Program) -> HopNode? {
    // Matched without binding first, then taken out, as `ChainLink.detach` does.
    guard case .then = program else { return nil }
    guard case .then(var node) = consume program else { fatalError() }
    program = .identity
    return isKnownUniquelyReferenced(&node) ? node : nil
  }

  /// Makes the node `first +> self`; only while nothing else holds it.
  fileprivate func follow(_ first: Program) {
    previous = first
  }

  fileprivate func detachPrevious(into pending: inout [ChainLink]) {
    ChainLink.detach(&previous, into: &pending)
  }

  /// How many hops the node makes in a row, each running its block: one, or a chain's links.
  var hopCount: Int { 1 }

  /// Hands `run` to the performer of hop `index`, which resumes it there.
  func hop(_ index: Int, resuming run: Run) { performer.perform { run.resumeAfterHop() } }

  /// What runs on the performer of hop `index` before the rest of the run.
  func run(_ value: AnyValue, at index: Int) throws -> AnyValue { try run(value) }

  /// What runs on the performer before the rest of the run.
  func run(_ value: AnyValue) throws -> AnyValue { value }
}

/// A promise block on its own (the head `firstly` makes): a hop and a synchronous body in one
/// object. `@unchecked` for the reason `HopNode` gives: no lock, because its own `body` is a
/// `let` and what `HopNode` writes is written only while one reference holds the node. Typed,
/// so the body is stored as the caller wrote it, with no erasing closure around it.
@usableFromInline
final class BlockNode<Input: Sendable, Output: Sendable>: HopNode, @unchecked Sendable {
  let body: @Sendable (Input) throws -> Output

  @usableFromInline
  init(
    _ performer: any BlockPerformer, label: Label,
    body: @escaping @Sendable (Input) throws -> Output
  ) {
    self.body = body
    super.init(performer, shape: .stage(label))
  }

  override func run(_ value: AnyValue) throws -> AnyValue { try body(unbox(value)) }
}

/// Takes a value back out of its erased form.
///
/// The interpreter only ever hands a stage the output of the stage before it, so the dynamic
/// type is `Value` by construction. Opening the existential and reinterpreting skips the
/// general-purpose `as!` machinery, which costs more than a whole synchronous stage. The one
/// exception is a `Value` that is itself an existential, such as the `any Error` a
/// `recover(with:)` fallback takes: boxing opens it to the concrete type inside, so that case
/// (told apart by one comparison of type metadata) takes the checked cast.
@inlinable
func unbox<Value>(_ value: AnyValue, as _: Value.Type = Value.self) -> Value {
  func open<Contained>(_ contained: Contained) -> Value {
    guard Contained.self == Value.self else { return contained as! Value }
    return unsafeBitCast(contained, to: Value.self)
  }
  return open(value)
}

/// A run of promise `then` blocks in one object: each link is a hop to its queue and a
/// synchronous body there, as a `BlockNode` is, kept by value in one buffer.
///
/// A chain of `BlockNode`s costs an object per link, made on the building thread and freed
/// on whichever thread drops the chain: the allocation, the `free` into another thread's arena
/// and the teardown of each node cost more than the hop itself. Here a link is a queue and a
/// body (no allocation: a closure fits an existential's inline buffer), appended while one
/// reference holds the chain (`Program.chaining`). No lock makes it safe: `rest` is written
/// only then, and read only by runs, which hold references of their own, so no run can be
/// reading it while it grows (see `HopNode`).
@usableFromInline
final class BlockChain: HopNode, @unchecked Sendable {
  /// The first link, kept in the object: a chain that never grows, as every link of a chain
  /// grown from promises held elsewhere is, then costs one allocation, as a `BlockNode` did.
  private let first: ChainedBlock
  @exclusivity(unchecked) private var rest: ContiguousArray<ChainedBlock> = []

  init(following previous: Program, _ link: consuming ChainedBlock) {
    let queue = link.queue ?? defaultBlockQueue
    first = link
    super.init(queue, shape: ChainedBlock.shape, isChain: true)
    follow(previous)
  }

  /// Adds a link at the end; only while nothing else holds the chain.
  func append(_ link: consuming ChainedBlock) {
    rest.append(link)
  }

  override var hopCount: Int { 1 + rest.count }

  override func hop(_ index: Int, resuming run: Run) {
    guard let queue = index == 0 ? first.queue : rest[index - 1].queue else {
      return DefaultQueueHop.resume(run)
    }
    // Unretained: the caller holds this node, and so its links' queues, for the whole call.
    Unmanaged.passUnretained(queue)._withUnsafeGuaranteedRef {
      $0.async { run.resumeAfterHop() }
    }
  }

  override func run(_ value: AnyValue, at index: Int) throws -> AnyValue {
    guard index > 0 else { return try first.body.run(value) }
    return try rest[index - 1].body.run(value)
  }
}

/// One `then` of a `BlockChain`: where it runs (a global queue when `nil`, which then costs
/// the link no reference to count) and what it runs.
@usableFromInline
struct ChainedBlock: Sendable {
  @usableFromInline let queue: DispatchQueue?
  @usableFromInline let body: any ErasedBlock

  @inlinable
  init(queue: DispatchQueue?, body: some ErasedBlock) {
    self.queue = queue
    self.body = body
  }

  /// What every link describes and traces as: the facade's `then`.
  static let shape = Shape.stage(Label(name: "then", fileID: #fileID, line: #line))
}

/// A block's body with its types erased, kept by value: a closure fits an existential's
/// inline buffer, so a link allocates nothing to hold it.
@usableFromInline
protocol ErasedBlock: Sendable {
  func run(_ value: AnyValue) throws -> AnyValue
}

/// A `then` body as the caller wrote it.
@usableFromInline
struct TypedBlock<Input: Sendable, Output: Sendable>: ErasedBlock {
  @usableFromInline let body: @Sendable (Input) throws -> Output

  @inlinable
  init(_ body: @escaping @Sendable (Input) throws -> Output) {
    self.body = body
  }

  @usableFromInline
  func run(_ value: AnyValue) throws -> AnyValue { try body(unbox(value)) }
}
