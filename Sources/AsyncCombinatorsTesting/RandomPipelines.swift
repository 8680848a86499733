import AsyncCombinators
import Dispatch
import Synchronization

/// The error a failing ``RandomStage`` fails with: it names the stage.
public struct PipelineStageError: Error, Equatable, CustomStringConvertible {
  /// The ``RandomStage/id`` of the stage that failed.
  public let stage: Int
  /// The error of stage `stage`.
  public init(stage: Int) { self.stage = stage }
  /// `stage 3 failed`, say.
  public var description: String { "stage \(stage) failed" }
}

/// What a pipeline of random stages must end with, according to the reference model.
///
/// The model is the plain, synchronous meaning of the operators: `+>` applies stages in turn
/// and stops at the first failure; `<>` runs both sides and fails if either does (with
/// either's error: which failure is first is a race).
///
/// ```swift
/// let expected = PipelineOutcome.both(.value([1]), .failed([4]))
/// print(expected)
/// print(expected.admits(.failure(PipelineStageError(stage: 4))))
/// // prints failed with one of [4]
/// // prints true
/// ```
public enum PipelineOutcome: Equatable, CustomStringConvertible {
  /// Succeeded with these values, in order.
  case value([Int])
  /// Failed with the error of one of these stages.
  case failed(Set<Int>)

  /// `value [3]` or `failed with one of [1, 4]`.
  public var description: String {
    switch self {
    case .value(let values): "value \(values)"
    case .failed(let ids): "failed with one of \(ids.sorted())"
    }
  }

  /// Whether an actual result is one this outcome allows.
  ///
  /// - Parameter result: What the pipeline ended with.
  /// - Returns: `true` when the values are equal, or the error is one of the expected stages'.
  public func admits(_ result: Result<[Int], any Error>) -> Bool {
    switch (self, result) {
    case (.value(let expected), .success(let actual)): expected == actual
    case (.failed(let ids), .failure(let error as PipelineStageError)): ids.contains(error.stage)
    default: false
    }
  }

  /// The outcome of running two pipelines in parallel (`<>`) and joining their values.
  ///
  /// - Returns: Both values, first then second; or the failures of either.
  public static func both(_ first: PipelineOutcome, _ second: PipelineOutcome) -> PipelineOutcome {
    switch (first, second) {
    case (.value(let a), .value(let b)): .value(a + b)
    case (.failed(let a), .failed(let b)): .failed(a.union(b))
    case (.failed(let a), _), (_, .failed(let a)): .failed(a)
    }
  }
}

/// How a random stage delivers its result: SwiftCheck's `ArrowOf` idea, for callbacks.
public enum StageDelivery: CaseIterable, Sendable {
  /// A `.sync` lift.
  case sync
  /// A callback body that completes before returning.
  case inlineCallback
  /// A callback body that completes later, on another thread.
  case queuedCallback
  /// An `.async` lift, completing from a task.
  case task
}

/// Where random stages run: the queue they complete on, and what they did.
///
/// One lab can serve many pipelines. ``settle()`` waits until no queued completion is still
/// returning, so a check made after it sees everything the stages will ever do.
public final class PipelineLab: Sendable {
  /// Where `.queuedCallback` stages complete.
  public let queue = testQueue("laws")
  /// Which stages started, by id, in order; kept only when asked for (by this package's own
  /// tests).
  package let started: Recorder<Int>?
  /// Queued completions not yet returned from.
  let inFlight = Atomic<Int>(0)

  /// A lab for any number of pipelines.
  public convenience init() { self.init(recordsStarts: false) }

  /// A lab; `recordsStarts` keeps ``started`` (for labs that run one pipeline at a time).
  package init(recordsStarts: Bool) {
    started = recordsStarts ? Recorder() : nil
  }

  /// Suspends until every queued completion has returned.
  public func settle() async {
    while inFlight.load(ordering: .acquiring) > 0 {
      await withCheckedContinuation { done in queue.async(flags: .barrier) { done.resume() } }
    }
  }
}

/// One random stage over `Int`: `x * factor + offset`, or a failure, delivered some way.
///
/// ```swift
/// let stage = RandomStage(id: 0, factor: 2, offset: 1, fails: false, delivery: .sync)
/// print(stage, stage.apply(5))
/// // prints s0:sync(x*2+1) 11
/// ```
public struct RandomStage: CustomStringConvertible, Sendable {
  /// Names the stage in errors and in ``PipelineLab/started``.
  public let id: Int
  /// What the input is multiplied by.
  public let factor: Int
  /// What is added after.
  public let offset: Int
  /// Whether the stage fails (with ``PipelineStageError``) instead.
  public let fails: Bool
  /// How it delivers.
  public let delivery: StageDelivery

  /// A stage with these parts.
  public init(id: Int, factor: Int, offset: Int, fails: Bool, delivery: StageDelivery) {
    self.id = id
    self.factor = factor
    self.offset = offset
    self.fails = fails
    self.delivery = delivery
  }

  /// `s3:task(x*2+1)` or `s3:sync!fail`.
  public var description: String {
    "s\(id):\(delivery)" + (fails ? "!fail" : "(x*\(factor)+\(offset))")
  }

  /// What the stage computes, in the model (wrapping on overflow).
  public func apply(_ x: Int) -> Int { x &* factor &+ offset }

  /// The stage as a function that runs in `lab`.
  public func function(in lab: PipelineLab) -> AsyncFunc<Int, Int> {
    let spec = self
    let result: @Sendable (Int) -> Result<Int, any Error> = { x in
      lab.started?.record(spec.id)
      return spec.fails ? .failure(PipelineStageError(stage: spec.id)) : .success(spec.apply(x))
    }
    switch delivery {
    case .sync:
      return .sync(name: "s\(id)") { try result($0).get() }
    case .inlineCallback:
      return AsyncFunc(name: "s\(id)") { x, complete in complete(result(x)) }
    case .queuedCallback:
      return AsyncFunc(name: "s\(id)") { x, complete in
        lab.inFlight.add(1, ordering: .relaxed)
        lab.queue.async {
          complete(result(x))
          lab.inFlight.subtract(1, ordering: .releasing)
        }
      }
    case .task:
      return .async(name: "s\(id)") { try result($0).get() }
    }
  }
}

/// A random serial chain of stages, and its model.
///
/// ```swift
/// let chain = RandomChain(stages: [
///   RandomStage(id: 0, factor: 2, offset: 0, fails: false, delivery: .sync),
///   RandomStage(id: 1, factor: 1, offset: 3, fails: false, delivery: .task),
/// ])
/// print(chain, chain.expected(5))
/// // prints [s0:sync(x*2+0) +> s1:task(x*1+3)] value [13]
/// ```
public struct RandomChain: CustomStringConvertible, Sendable {
  /// The stages, first to last.
  public let stages: [RandomStage]

  /// A chain of `stages`.
  public init(stages: [RandomStage]) { self.stages = stages }

  /// `[s0:sync(x*2+0) +> s1:task!fail]`.
  public var description: String {
    "[" + stages.map(\.description).joined(separator: " +> ") + "]"
  }

  /// The chain as `+>` of its stages, run in `lab`.
  public func function(in lab: PipelineLab) -> AsyncFunc<Int, Int> {
    AsyncFunc.serial(stages.map { $0.function(in: lab) })
  }

  /// What the chain must end with on `x`: the stages applied in turn, or the first failure.
  public func expected(_ x: Int) -> PipelineOutcome {
    var value = x
    for stage in stages {
      if stage.fails { return .failed([stage.id]) }
      value = stage.apply(value)
    }
    return .value([value])
  }
}

/// Draws random stages and chains from a seeded generator; every stage gets a new id.
///
/// ```swift
/// var generate = PipelineGenerator(random: SplitMix64(seed: 1))
/// let chain = generate.chain()
/// print((1...4).contains(chain.stages.count))
/// // prints true
/// ```
public struct PipelineGenerator {
  /// The generator draws come from; put it back into `forAll`'s after drawing.
  public var random: SplitMix64
  /// The id the next stage gets.
  public var nextID = 0
  /// The ways stages may deliver.
  public var deliveries: [StageDelivery] = StageDelivery.allCases
  /// One stage in how many fails.
  public var failureOdds = 8

  /// A generator drawing from `random`.
  public init(random: SplitMix64) { self.random = random }

  /// A stage with factor in -3...3, offset in -9...9, failing one time in ``failureOdds``.
  public mutating func stage() -> RandomStage {
    defer { nextID += 1 }
    return RandomStage(
      id: nextID, factor: Int.random(in: -3...3, using: &random),
      offset: Int.random(in: -9...9, using: &random),
      fails: Int.random(in: 0..<failureOdds, using: &random) == 0,
      delivery: deliveries.randomElement(using: &random)!)
  }

  /// A chain of one to `maximumLength` stages.
  public mutating func chain(maximumLength: Int = 4) -> RandomChain {
    RandomChain(
      stages: (0..<Int.random(in: 1...max(1, maximumLength), using: &random)).map { _ in stage() })
  }
}
