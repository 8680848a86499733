import AsyncCombinatorsKernel
import Synchronization

extension AsyncFunc {
  /// Performs a side effect with the output, unless the run has been cancelled; then passes
  /// the output on.
  ///
  /// Use it for the step that changes the world — write a cache, post analytics, save a
  /// file — so a cancelled run never commits a stale result. Every stage already checks for
  /// cancellation before it starts; `commit` also makes the check and the side effect one step
  /// against a concurrent `cancel()`. The side effect runs under a lock that the run's
  /// cancellation handler also takes, so when `cancel()` returns, the side effect has either
  /// finished or will never start. That lets the canceller clean up after the cancelled run —
  /// clear a cache on sign-out — knowing no late write lands after the cleanup. A side effect
  /// that had begun when `cancel()` was called finishes; the run still completes with
  /// `CancellationError`, like every cancelled run.
  ///
  /// ```swift
  /// let refresh = fetchProfile.commit(name: "saveProfile") { cache.save($0) }
  /// let token = refresh.run(userID) { print($0) }
  /// token.cancel()
  /// cache.removeAll()  // no write of the cancelled run can follow this line
  /// // prints failure(Swift.CancellationError())
  /// ```
  ///
  /// Keep the side effect short and synchronous: `cancel()` waits for it. It must not cancel
  /// its own run, which would wait for itself.
  ///
  /// - Parameters:
  ///   - name: What the description calls the step: `fetchProfile +> saveProfile`.
  ///   - fileID: The file that made the step, for descriptions and reports.
  ///   - line: The line that made the step.
  ///   - sideEffect: Runs with the output on the thread that completed the previous stage; a
  ///     throw fails the run.
  /// - Returns: A function with this one's output, after the side effect has been performed.
  public func commit(
    name: String = "commit", fileID: String = #fileID, line: Int = #line,
    _ sideEffect: @escaping @Sendable (Output) throws -> Void
  ) -> AsyncFunc {
    let label = Label(name: name, fileID: fileID, line: line)
    return self
      +> AsyncFunc<Output, Output>(label: label) { value, token, complete in
        let barrier = CommitBarrier()
        let registration = token.onCancel { barrier.close() }
        let result = barrier.pass { () -> Result<Output, any Error> in
          guard !token.isCancelled else { return .failure(CancellationError()) }
          return Result {
            try sideEffect(value)
            return value
          }
        }
        registration.remove()
        complete(result)
      }
  }
}

/// The lock a commit holds while it runs, and its run's cancellation takes to close it.
private final class CommitBarrier: Sendable {
  private let isClosed = Locked(false)

  /// Runs `commit` unless the barrier is closed; `close()` waits for it to return.
  func pass<T: Sendable>(_ commit: () -> Result<T, any Error>) -> Result<T, any Error> {
    isClosed.withLock { isClosed in
      isClosed ? .failure(CancellationError()) : commit()
    }
  }

  func close() {
    isClosed.withLock { $0 = true }
  }
}
