import Synchronization

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A callback function broke the rule that its completion is called exactly once.
///
/// A completion that is released without being called fails its run with this error, so the
/// chain goes on to its error handling instead of hanging. A completion called a second time
/// is dropped and reported to ``ContractViolation/faultResponse`` instead.
///
/// ```swift
/// let forgetful = AsyncFunc<Int, Int>(name: "forgetful") { _, _ in }
/// forgetful.run(1) { print($0) }
/// // prints failure(forgetful (Example.swift:1) released its completion without calling it)
/// ```
public struct ContractViolation: Error, Sendable, Equatable, CustomStringConvertible {
  /// Which part of the contract was broken.
  public enum Kind: Sendable, Equatable {
    /// The completion was released without ever being called.
    case completionNeverCalled
    /// The completion was called again after the first call.
    case completionCalledTwice
    /// An Objective-C style callback passed neither a value nor an error.
    case neitherValueNorError
    /// A batch function given `keys` keys returned `results` results, where `batched` needs
    /// exactly one per key, in order. The violation names the batch function, and the file and
    /// line of the `batched` call that was given it.
    case resultCountMismatch(keys: Int, results: Int)
  }

  /// Which part of the contract was broken.
  public let kind: Kind
  /// The function's `name:`, or `nil` when it was not given one.
  public let name: String?
  /// The file that created the function, as `#fileID`.
  public let fileID: String
  /// The line that created the function.
  public let line: Int

  /// Creates a violation report.
  public init(kind: Kind, name: String?, fileID: String, line: Int) {
    self.kind = kind
    self.name = name
    self.fileID = fileID
    self.line = line
  }

  @inlinable
  package init(_ kind: Kind, _ label: Label) {
    self.init(kind: kind, name: label.name, fileID: label.fileID, line: label.line)
  }

  /// The function, by name when it has one, and where it was made.
  public var function: String {
    let location = "\(Label.fileName(fileID)):\(line)"
    return name.map { "\($0) (\(location))" } ?? location
  }

  /// The function and the part of the contract it broke, in one sentence.
  public var description: String {
    switch kind {
    case .completionNeverCalled: "\(function) released its completion without calling it"
    case .completionCalledTwice: "\(function) called its completion more than once"
    case .neitherValueNorError: "\(function) called back with neither a value nor an error"
    case .resultCountMismatch(let keys, let results):
      "\(function) returned \(results) results for a batch of \(keys) keys"
    }
  }
}

extension ContractViolation {
  /// What the library does when a completion is called more than once.
  ///
  /// The extra call is always dropped; this decides how it is reported. Set it once, early
  /// (in `main` or a test's setup): it is global to the process.
  ///
  /// ```swift
  /// ContractViolation.faultResponse = .custom { violation in log.error("\(violation)") }
  /// ```
  public static var faultResponse: FaultResponse {
    get { currentResponse.withLock { $0 } }
    set { currentResponse.withLock { $0 = newValue } }
  }

  private static let currentResponse = Locked(FaultResponse.warn)

  static func report(_ violation: ContractViolation) {
    faultResponse.handle(violation)
  }
}

/// How a broken callback contract is reported. See ``ContractViolation/faultResponse``.
public struct FaultResponse: Sendable {
  package let handle: @Sendable (ContractViolation) -> Void

  /// Writes one line to standard error naming the function and where it was made (the default).
  public static let warn = FaultResponse { violation in
    let line = "AsyncCombinators warning: \(violation)\n"
    var bytes = Array(line.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
  }

  /// Says nothing.
  public static let ignore = FaultResponse { _ in }

  /// Stops the process with the violation's description, as HoneyBee does by default.
  public static let crash = FaultResponse { violation in
    fatalError("AsyncCombinators: \(violation)")
  }

  /// Hands each violation to your own code, on the thread that made the extra call.
  public static func custom(_ handle: @escaping @Sendable (ContractViolation) -> Void)
    -> FaultResponse
  {
    FaultResponse(handle: handle)
  }
}
