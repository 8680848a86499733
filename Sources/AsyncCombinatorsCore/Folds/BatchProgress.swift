import AsyncCombinatorsKernel

/// How far a batch fold or a concurrent-map stream has got: what a progress closure receives
/// as elements finish.
///
/// ``AsyncFunc/concurrentMap(limit:acceptableFailure:progress:file:line:)``,
/// ``AsyncFunc/concurrentFilter(limit:acceptableFailure:progress:file:line:)``,
/// ``AsyncFunc/concurrentForEach(limit:acceptableFailure:progress:file:line:)``,
/// ``AsyncFunc/concurrentCompactMap(limit:acceptableFailure:progress:file:line:)``,
/// ``AsyncFunc/concurrentMapResults(limit:acceptableFailure:progress:file:line:)`` and
/// ``AsyncFunc/concurrentMap(over:limit:ordered:acceptableFailure:progress:file:line:)`` call
/// their `progress` closure on a lane of its own, never on the thread that finished an element,
/// so a slow closure holds up no element. Reports that pile up while it runs are coalesced into
/// the newest. The calls never overlap, `completed` goes up at each call, and the last call
/// returns before the fold's result is delivered (or before the stream ends).
/// ``WorkQueue/progress`` counts a queue's jobs the same way.
///
/// ```swift
/// let progress = BatchProgress(completed: 3, failed: 1, inFlight: 2, total: 10)
/// print(progress)
/// print(progress.fractionCompleted ?? 0)
/// // prints 3/10 done (1 failed, 2 in flight)
/// // prints 0.3
/// ```
public struct BatchProgress: Sendable, Hashable, CustomStringConvertible {
  /// Every element that has finished, failed or not.
  public var completed: Int
  /// The finished elements that failed, tolerated or not.
  public var failed: Int
  /// The elements in flight as the reported element finished: those started and not yet
  /// finished, and those the slot just freed starts next. A saturated batch with a limit of 8
  /// reads 8, not 7, until fewer than 8 are left. In a stream, an element not yet pulled from
  /// the source is not counted.
  public var inFlight: Int
  /// How many elements there are: the array's count, or `nil` for a stream, whose length is
  /// not known until it ends.
  public var total: Int?

  /// Creates a progress value; the folds make these, tests and previews may too.
  ///
  /// - Parameters:
  ///   - completed: Every finished element.
  ///   - failed: The finished elements that failed.
  ///   - inFlight: The elements running, or starting in the slot just freed.
  ///   - total: The number of elements, `nil` when unknown.
  public init(completed: Int, failed: Int, inFlight: Int, total: Int?) {
    self.completed = completed
    self.failed = failed
    self.inFlight = inFlight
    self.total = total
  }

  /// `completed / total`, or `nil` when the total is unknown or zero.
  public var fractionCompleted: Double? {
    guard let total, total > 0 else { return nil }
    return Double(completed) / Double(total)
  }

  /// `3/10 done (1 failed, 2 in flight)`; a stream shows `3 done (...)`.
  public var description: String {
    let done = total.map { "\(completed)/\($0) done" } ?? "\(completed) done"
    return "\(done) (\(failed) failed, \(inFlight) in flight)"
  }
}
