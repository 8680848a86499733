import Synchronization

@testable import AsyncCombinators

/// Records every contract violation the process reports, and says nothing.
///
/// `ContractViolation.faultResponse` is global and tests run in parallel, so no test sets it
/// for itself. A test touches `FaultRecorder.shared`, which installs the recorder once, and
/// looks only for violations of functions it named uniquely.
final class FaultRecorder: Sendable {
  static let shared: FaultRecorder = {
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
  func violations(named name: String) -> [ContractViolation] {
    reported.withLock { $0.filter { $0.name == name } }
  }
}
