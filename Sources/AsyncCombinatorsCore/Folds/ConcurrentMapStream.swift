import AsyncCombinatorsKernel

extension AsyncFunc {
  /// Runs this function on every element of an asynchronous sequence, at most `limit` at a
  /// time, and delivers the outputs as another asynchronous sequence, pulling from `source`
  /// only as fast as the consumer takes.
  ///
  /// Nothing happens until the first `next()`. Elements are pulled by the consumer's own task,
  /// inside its `next()` calls (which keep `limit` running before handing out an output), and
  /// started directly as the array fold starts them; no task or thread per element, and the source's iterator
  /// never leaves the consumer's task. At most `limit` elements run at once, counted as the
  /// array fold counts them: an element's slot is held until its callback bodies have all
  /// called back, so one that timed out while its body ignores cancellation keeps its slot
  /// until that body is done. The stream never holds more than `limit` elements that the
  /// consumer has not taken, plus, when `ordered`, a reorder window of `limit` more, which
  /// holds outputs that finished while an earlier element still runs and elements pulled ahead
  /// to start as soon as a slot frees. So at any moment it has pulled at most `limit`
  /// (unordered) or `2 * limit` (ordered) elements beyond those taken or skipped.
  ///
  /// Failures within `acceptableFailure` are skipped. The first one beyond it ends the stream
  /// with ``FailureRateExceeded`` (indices are positions in `source`), cancels the running
  /// elements and pulls no more. A `.count(n)` tolerance is judged as for an array; a `.ratio`
  /// is judged against the elements finished so far once
  /// ``FailureTolerance/minimumFinishedBeforeJudgingRatio`` of them have finished, and, once
  /// the source ends, against its total. An element that fails with `CancellationError` ends
  /// the stream with `CancellationError`, whatever the tolerance.
  ///
  /// If the source throws, the running elements are cancelled and the stream ends with that
  /// error. If the consumer stops (breaks out of its loop, or its task is cancelled, in which
  /// case `next()` throws `CancellationError`), the running elements are cancelled, nothing
  /// more is pulled and the source's iteration ends. An early end drops the outputs not yet
  /// taken.
  ///
  /// ```swift
  /// let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
  /// let numbers = AsyncStream<Int> { continuation in
  ///   for number in 1...4 { continuation.yield(number) }
  ///   continuation.finish()
  /// }
  /// for try await squared in square.concurrentMap(over: numbers, limit: 2) {
  ///   print(squared)
  /// }
  /// // prints 1
  /// // prints 4
  /// // prints 9
  /// // prints 16
  /// ```
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - source: The inputs; throwing or not. Its iterator need not be `Sendable`.
  ///   - limit: The most elements running at once; at least 1.
  ///   - ordered: `true` to yield outputs in the order of their inputs, `false` to yield them
  ///     as they finish.
  ///   - acceptableFailure: How many elements may fail before the stream does.
  ///   - progress: Called as elements finish, as the array folds call it (on a lane of its own,
  ///     never two calls at once, reports that pile up coalesced), with `total` `nil`; the last
  ///     call returns before the stream ends. `nil` (the default) for no reports.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  /// - Returns: The outputs, as a sequence that can throw.
  /// - Complexity: O(1) memory in the length of `source` (O(`limit`) in all), and per element
  ///   the function's own start, a few lock round trips and at most one suspension of the
  ///   consumer.
  public func concurrentMap<Source: AsyncSequence & Sendable>(
    over source: Source, limit: Int, ordered: Bool = true,
    acceptableFailure: FailureTolerance = .zero,
    progress: (@Sendable (BatchProgress) -> Void)? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> ConcurrentMapSequence<Source, Output> where Source.Element == Input {
    require(
      limit >= 1, "concurrentMap(over:limit: \(limit)): the limit must be at least 1", file: file,
      line: line)
    return ConcurrentMapSequence(
      base: source, program: program, limit: limit, ordered: ordered,
      tolerance: acceptableFailure, progress: progress)
  }
}

/// The outputs of
/// ``AsyncFunc/concurrentMap(over:limit:ordered:acceptableFailure:progress:file:line:)``: a function
/// run over an asynchronous sequence, a bounded number of elements at a time.
///
/// Each iteration (each `makeAsyncIterator()`) iterates the source afresh and runs its own
/// elements. The iterator is not `Sendable`: iterate from one task, as `for try await` does.
///
/// ```swift
/// let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
/// let (numbers, input) = AsyncStream.makeStream(of: Int.self)
/// for number in 1...3 { input.yield(number) }
/// input.finish()
/// let doubled: ConcurrentMapSequence<AsyncStream<Int>, Int> =
///   double.concurrentMap(over: numbers, limit: 2)
/// var outputs: [Int] = []
/// for try await output in doubled { outputs.append(output) }
/// print(outputs)
/// // prints [2, 4, 6]
/// ```
public struct ConcurrentMapSequence<Base: AsyncSequence & Sendable, Output: Sendable>:
  AsyncSequence, Sendable
where Base.Element: Sendable {
  /// The function's output: one per input that did not fail within the tolerance.
  public typealias Element = Output

  private let base: Base
  private let program: Program
  private let limit: Int
  private let ordered: Bool
  private let tolerance: FailureTolerance
  private let progress: (@Sendable (BatchProgress) -> Void)?

  init(
    base: Base, program: Program, limit: Int, ordered: Bool, tolerance: FailureTolerance,
    progress: (@Sendable (BatchProgress) -> Void)?
  ) {
    self.base = base
    self.program = program
    self.limit = limit
    self.ordered = ordered
    self.tolerance = tolerance
    self.progress = progress
  }

  /// Starts an iteration; nothing is pulled until its first `next()`.
  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(
      lifetime: Lifetime(
        storage: ConcurrentMapStorage(
          program: program, limit: limit, ordered: ordered, tolerance: tolerance,
          progress: progress)),
      source: base.makeAsyncIterator())
  }

  /// Takes the outputs one at a time, pulling from the source as it goes.
  public struct AsyncIterator: AsyncIteratorProtocol {
    @usableFromInline let lifetime: Lifetime
    /// The source's iterator: used only by this iterator's `next()`, on the consumer's task.
    @usableFromInline var source: Base.AsyncIterator?
    /// The last output came with a pull reserved: the next call makes it first.
    @usableFromInline var pullReserved = false

    fileprivate init(lifetime: Lifetime, source: Base.AsyncIterator) {
      self.lifetime = lifetime
      self.source = source
    }

    /// The next output, or `nil` once the source has ended and every output has been taken.
    ///
    /// - Throws: ``FailureRateExceeded`` beyond the tolerance, the source's error,
    ///   `CancellationError` when an element cancelled itself or the calling task is cancelled.
    @inlinable
    public mutating func next() async throws -> Output? {
      try await next(isolation: nil)
    }

    /// The next output, pulling from the source in the caller's isolation: what `for try await`
    /// calls, so that a loop on an actor (the main actor, say) pulls without leaving it.
    ///
    /// - Parameter actor: The caller's actor, or `nil` outside one.
    /// - Throws: As ``next()``.
    @inlinable
    public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Output? {
      let storage = lifetime.storage
      // Once a call, not at every step: a wait below sees a later cancellation through its
      // handler, and a source that ends because of it is checked where it ends.
      if Task.isCancelled { storage.consumerGone() }
      var step: ConcurrentMapStateMachine.Step
      if pullReserved {
        pullReserved = false
        step = storage.mayPull ? await pull(into: storage, isolation: actor) : storage.nextStep()
      } else {
        step = storage.nextStep()
      }
      while true {
        switch step {
        case .output(let output):
          return unbox(output, as: Output.self)
        case .outputAndPull(let output):
          pullReserved = true
          return unbox(output, as: Output.self)
        case .end(let failure):
          // At the end, however it came, the source's iteration ends: its iterator goes.
          source = nil
          if let failure { throw failure }
          return nil
        case .pull:
          step = await pull(into: storage, isolation: actor)
        case .wait:
          await storage.waitForProgress()
          step = storage.nextStep()
        }
      }
    }

    /// Pulls one element from the source and hands it, its end or its error to `storage`;
    /// returns the step that comes next.
    ///
    /// The element is unwrapped here, where its type is known, and handed over erased, never as an
    /// erased optional (Performance.md, "What the code's shape buys, and the check that holds it").
    @inlinable
    mutating func pull(into storage: ConcurrentMapStorage, isolation actor: isolated (any Actor)?)
      async -> ConcurrentMapStateMachine.Step
    {
      do {
        if let input = try await source?.next(isolation: actor) {
          return storage.pulled(input)
        } else {
          return storage.sourceEnded()
        }
      } catch {
        return storage.sourceFailed(error)
      }
    }
  }

  /// Ends the iteration when the last copy of its iterator goes away: the consumer broke
  /// out of its loop.
  @usableFromInline
  final class Lifetime: Sendable {
    @usableFromInline let storage: ConcurrentMapStorage

    init(storage: ConcurrentMapStorage) {
      self.storage = storage
    }

    deinit {
      storage.consumerGone()
    }
  }
}

@available(*, unavailable)
extension ConcurrentMapSequence.AsyncIterator: Sendable {}
