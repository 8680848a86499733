import AsyncCombinators

/// Records every contract violation the process reports, and says nothing.
///
/// ``ContractViolation/faultResponse`` is global and tests run in parallel, so no test should
/// set it for itself. Touching ``shared`` installs one recorder, once, for the whole process;
/// each test then looks only for violations of functions it named uniquely. The
/// ``ContractChecker`` reads the same recorder.
///
/// ```swift
/// let recorder = FaultRecorder.shared
/// let twice = AsyncFunc<Int, Int>(name: "twice-example") { x, complete in
///   complete(.success(x))
///   complete(.success(x))
/// }
/// twice.run(1) { _ in }
/// print(recorder.violations(named: "twice-example").map(\.kind))  // [.completionCalledTwice]
/// ```
///
/// (The doc tests only type-check this example: they run every example in one process, where
/// others set the fault response themselves.)
public final class FaultRecorder: Sendable {
  /// The process's recorder; the first use installs it as the fault response.
  public static let shared: FaultRecorder = {
    let recorder = FaultRecorder()
    ContractViolation.faultResponse = .custom { recorder.record($0) }
    return recorder
  }()

  private let reported = Locked<[ContractViolation]>([])

  private init() {}

  private func record(_ violation: ContractViolation) {
    reported.withLock { $0.append(violation) }
  }

  /// The violations reported so far for the function named `name`.
  ///
  /// - Parameter name: The function's `name:`.
  /// - Returns: Its violations, in the order they were reported.
  public func violations(named name: String) -> [ContractViolation] {
    reported.withLock { $0.filter { $0.name == name } }
  }

  /// How many violations have been reported in all: a mark for ``violations(since:)``.
  public var count: Int { reported.withLock { $0.count } }

  /// The violations reported after the first `mark`, from ``count``.
  ///
  /// - Parameter mark: A value of ``count`` read earlier.
  /// - Returns: The violations reported since, in order.
  public func violations(since mark: Int) -> [ContractViolation] {
    reported.withLock { Array($0.dropFirst(mark)) }
  }
}
