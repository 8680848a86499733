import AsyncCombinatorsKernel
import Synchronization

/// A long-lived queue of jobs: at most `limit` run at once, higher priority first and in
/// arrival order within a priority, with pause, resume and a wait for the queue to drain.
///
/// Submit `async` jobs with ``submit(priority:_:)`` (or ``run(priority:_:)`` to await one), and
/// run callback-style functions through it with ``AsyncFunc/queued(on:priority:)``; both wait
/// in the same queue. A job's failure is its own and never stops the queue. No thread is
/// blocked while a job waits.
///
/// ```swift
/// let downloads = WorkQueue(limit: 2)
/// let sizes = (1...3).map { n in downloads.submit { n * 100 } }
/// for size in sizes { print(try await size.value) }
/// await downloads.drained()
/// print(downloads.progress)
/// // prints 100
/// // prints 200
/// // prints 300
/// // prints 3/3 done (0 failed, 0 in flight)
/// ```
public final class WorkQueue: Sendable {
  /// Which waiting job starts first: the higher, and among equals the one submitted first.
  public struct Priority: Sendable, Hashable, Comparable, CustomStringConvertible {
    let value: Int

    /// Below ``normal``.
    public static let low = Priority(-1)
    /// The default.
    public static let normal = Priority(0)
    /// Above ``normal``.
    public static let high = Priority(1)

    /// A priority of your own: `Priority(2)` starts before ``high``.
    ///
    /// - Parameter value: Higher starts sooner.
    public init(_ value: Int) { self.value = value }

    /// Orders by value.
    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.value < rhs.value }

    /// `low`, `normal`, `high`, or the value.
    public var description: String {
      switch value {
      case -1: "low"
      case 0: "normal"
      case 1: "high"
      default: "\(value)"
      }
    }
  }

  let gate: Admission<LimitedRun>
  private let capacityLimit: QueueLimit

  /// A queue that runs at most `limit` jobs at once.
  ///
  /// - Precondition: `limit` is at least 1; otherwise the program stops with a message naming the
  ///   caller's line.
  /// - Parameters:
  ///   - limit: How many jobs run at once; at least 1.
  ///   - capacity: How many jobs may wait, and for how long (on the continuous clock); a job
  ///     turned away fails with ``LimitExceeded``, the lowest priority first.
  ///   - file: The caller's file, named when `limit` is out of range.
  ///   - line: The caller's line, named when `limit` is out of range.
  public init(
    limit: Int = 1, capacity: QueueLimit = .unbounded,
    file: StaticString = #fileID, line: UInt = #line
  ) {
    require(
      limit >= 1, "WorkQueue(limit: \(limit)): the limit must be at least 1", file: file,
      line: line)
    var clock: AdmissionClock?
    if capacity.needsClock { clock = AdmissionClock(ContinuousClock()) }
    gate = Admission(capacity: limit, queue: capacity, clock: clock)
    capacityLimit = capacity
  }

  /// Queues `operation` and returns the task that awaits its result.
  ///
  /// The job enters the queue now, in the order of the calls. Cancelling the task before the
  /// job starts removes the job before `cancel()` returns (where `Task.immediate` is available:
  /// Linux, and Apple platforms from the 26 releases; before those, once the task first runs):
  /// it never runs, leaves ``progress``, and the task throws `CancellationError` at once. Cancelling it after the job starts cancels the operation, and the task throws
  /// `CancellationError` at once; the job keeps its place among the running until the
  /// operation returns.
  ///
  /// - Parameters:
  ///   - priority: Where the job waits.
  ///   - operation: The job.
  /// - Returns: The task that ends with the job's result.
  @discardableResult
  public func submit<T: Sendable>(
    priority: Priority = .normal, _ operation: @escaping @Sendable () async throws -> T
  ) -> Task<T, any Error> {
    let result = JobResult<T>()
    let token = CancellationToken()
    AsyncFunc<Void, T>.async(name: "job") { _ in try await operation() }
      .queued(on: self, priority: priority)
      .run((), token: token) { result.deliver($0) }
    let awaitResult: @Sendable () async throws -> T = {
      try await withTaskCancellationHandler {
        try await result.value()
      } onCancel: {
        token.cancel()
      }
    }
    // Started in place, the task has its cancellation handler before it is returned, so that
    // `cancel()` takes a waiting job out of the queue (and out of `progress`) before it returns.
    // A task started later would hear of its cancellation only once a thread runs it.
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
      return Task.immediate(operation: awaitResult)
    }
    return Task(operation: awaitResult)
  }

  /// Queues `operation` and awaits its result; cancelling the caller cancels the job as
  /// cancelling ``submit(priority:_:)``'s task does.
  ///
  /// - Parameters:
  ///   - priority: Where the job waits.
  ///   - operation: The job.
  /// - Returns: The job's result.
  public func run<T: Sendable>(
    priority: Priority = .normal, _ operation: @escaping @Sendable () async throws -> T
  ) async throws -> T {
    try await AsyncFunc<Void, T>.async(name: "job") { _ in try await operation() }
      .queued(on: self, priority: priority)(())
  }

  /// Starts no new job until ``resume()``; running jobs go on, and jobs submitted meanwhile
  /// keep their order.
  public func pause() { gate.setPaused(true) }

  /// Starts waiting jobs again, as many as the limit allows.
  public func resume() { gate.setPaused(false) }

  /// Whether the queue is paused.
  public var isPaused: Bool { gate.isPaused }

  /// How many jobs run at once. Setting it takes effect at once: raising it starts that many
  /// more waiting jobs; lowering it lets running jobs finish and starts none until fewer run.
  ///
  /// - Precondition: At least 1; otherwise the program stops with a message. A setter takes no
  ///   `file:` or `line:`, so the message names this line of the library, not the caller's.
  public var limit: Int {
    get { gate.capacity }
    set {
      require(
        newValue >= 1, "WorkQueue.limit = \(newValue): the limit must be at least 1",
        file: #fileID, line: #line)
      gate.setCapacity(newValue)
    }
  }

  /// Returns once no job waits and none runs: at once if that is so now; otherwise after the
  /// last job's operation has ended. A paused queue with jobs waiting is not drained. Jobs
  /// cancelled before they start do not count. Cancelling the task that waits does not end the
  /// wait.
  public func drained() async {
    await withCheckedContinuation { continuation in
      gate.whenIdle { continuation.resume() }
    }
  }

  /// The jobs finished so far (`completed`, failed or not; `failed` of them failed), those
  /// running, and in `total` all of these with those waiting: `total` − `completed` −
  /// `inFlight` are waiting, as in ``BatchProgress``. A job counts as finished once it has
  /// given back its slot, and is in flight until then. Jobs cancelled or rejected before they
  /// started are in none of them, from the moment their cancellation returns.
  ///
  /// ```swift
  /// let jobs = WorkQueue(limit: 2)
  /// struct Oops: Error {}
  /// for n in 1...5 { jobs.submit { if n > 3 { throw Oops() } } }
  /// await jobs.drained()
  /// print(jobs.progress, jobs.progress.fractionCompleted ?? 0)
  /// // prints 5/5 done (2 failed, 0 in flight) 1.0
  /// ```
  public var progress: BatchProgress {
    let (running, waiting, succeeded, failed) = gate.counts
    let finished = succeeded + failed
    return BatchProgress(
      completed: finished, failed: failed, inFlight: running,
      total: finished + running + waiting)
  }
}

extension WorkQueue: CustomStringConvertible {
  /// `WorkQueue(limit: 2, capacity: unbounded)`.
  public var description: String { "WorkQueue(limit: \(limit), capacity: \(capacityLimit))" }
}

extension AsyncFunc {
  /// Runs this function as a job of `queue`, with the same rules as a submitted job.
  ///
  /// Cancellation passes both ways: cancelling a run that waits takes it out of the queue and
  /// fails it with `CancellationError` at once; a running one is cancelled and keeps its place
  /// among the running until every callback body it started has called back.
  ///
  /// ```swift
  /// let uploads = WorkQueue(limit: 1)
  /// let upload = AsyncFunc<Int, Int>.sync(name: "upload") { $0 * 10 }
  /// print(try await upload.queued(on: uploads, priority: .high)(4))
  /// // prints 40
  /// ```
  ///
  /// - Parameters:
  ///   - queue: The work queue.
  ///   - priority: Where its runs wait.
  /// - Returns: A function with the same input and output, queued.
  public func queued(on queue: WorkQueue, priority: WorkQueue.Priority = .normal) -> AsyncFunc {
    let function = LimitedFunction(
      queue.gate, program, priority: priority.value, deliversFirst: true, countsOutcomes: true)
    return limitedStage(function, call: "queued(on: \(queue), priority: \(priority))")
  }
}

/// A submitted job's result, handed from its run to the task that awaits it, whichever comes
/// first.
private final class JobResult<T: Sendable>: Sendable {
  private enum State {
    case pending
    case awaited(UnsafeContinuation<T, any Error>)
    case delivered(Result<T, any Error>)
  }

  private let state = Locked(State.pending)

  func deliver(_ result: Result<T, any Error>) {
    let waiter = state.withLock { state -> UnsafeContinuation<T, any Error>? in
      guard case .awaited(let continuation) = state else {
        state = .delivered(result)
        return nil
      }
      state = .delivered(result)
      return continuation
    }
    waiter?.resume(with: result)
  }

  func value() async throws -> T {
    try await withUnsafeThrowingContinuation { continuation in
      let result = state.withLock { state -> Result<T, any Error>? in
        guard case .delivered(let result) = state else {
          state = .awaited(continuation)
          return nil
        }
        return result
      }
      if let result { continuation.resume(with: result) }
    }
  }
}
