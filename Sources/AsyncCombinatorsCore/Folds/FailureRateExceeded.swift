import AsyncCombinatorsKernel

/// The error of a fold (``AsyncFunc/concurrentMap(limit:acceptableFailure:progress:file:line:)``
/// and its relatives) whose elements failed beyond its ``FailureTolerance``: each failed
/// element's index and error.
///
/// The map fails as soon as the failure beyond tolerance happens, and cancels the elements
/// still running, so `failures` holds the failures seen until then (at least one more than
/// tolerated), in the order they happened.
///
/// ```swift
/// do {
///   _ = try await upload.concurrentMap(limit: 4)(files)
/// } catch let error as FailureRateExceeded {
///   print(error.failures.map(\.index))
/// }
/// // prints [3]
/// ```
public struct FailureRateExceeded: Error, CustomStringConvertible {
  /// One element's failure: its index in the input and its error.
  public struct Failure: Sendable {
    /// The element's position in the input array, or in the source for a stream.
    public let index: Int
    /// What the element failed with.
    public let error: any Error
  }

  /// Every failure seen, in the order they happened: the tolerated ones and the one beyond.
  public let failures: [Failure]
  /// How many elements the map had; for a stream, how many the source had produced when the
  /// tolerance was exceeded.
  public let count: Int
  /// The tolerance that was exceeded.
  public let tolerance: FailureTolerance

  /// One line for a log: the failure count against the tolerance, then the first few failed
  /// indices with their errors, each error on one line and cut short; ``failures`` holds them
  /// all.
  ///
  /// ```swift
  /// struct Offline: Error {}
  /// let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { id in
  ///   if id % 2 == 1 { throw Offline() }
  ///   return id
  /// }
  /// do {
  ///   _ = try await fetch.concurrentMap(limit: 1, acceptableFailure: .count(3))(Array(0..<10))
  /// } catch {
  ///   print(error)
  /// }
  /// // prints FailureRateExceeded: 4 of 10 elements failed, tolerance .count(3) (#1: Offline(), #3: Offline(), #5: Offline(), and 1 more)
  /// ```
  public var description: String {
    let shown = failures.prefix(Self.failuresDescribed).map {
      "#\($0.index): \(oneLine($0.error, atMost: Self.errorLengthDescribed))"
    }
    let more = failures.count - shown.count
    let list = shown.joined(separator: ", ") + (more > 0 ? ", and \(more) more" : "")
    return
      "FailureRateExceeded: \(failures.count) of \(count) elements failed, tolerance "
      + "\(tolerance) (\(list))"
  }

  /// How many failures ``description`` shows: enough to see what went wrong, few enough for a
  /// log line.
  static let failuresDescribed = 3
  /// How many characters of each failure's error ``description`` shows.
  static let errorLengthDescribed = 100

}

/// `error`'s description on one line, cut to `limit` characters with an ellipsis: an error
/// that prints a response body or a stack must not turn a log line into a page.
func oneLine(_ error: any Error, atMost limit: Int) -> String {
  var text = String(describing: error)
  if text.contains(where: \.isNewline) {
    text = text.split(whereSeparator: \.isNewline).joined(separator: " ")
  }
  guard text.count > limit else { return text }
  return String(text.prefix(limit - 1)) + "…"
}
