import AsyncCombinators
import Synchronization

/// A few thousand fake photos and a flaky fake uploader: which fail, and why, follows from
/// each file's number, so the summary can be checked.
enum LargeBatchWork {
  static let fileCount = 2_400

  struct Rejected: Error, CustomStringConvertible {
    var description: String { "rejected" }
  }

  struct Dropped: Error, CustomStringConvertible {
    var description: String { "connection dropped" }
  }

  static func name(_ number: Int) -> String {
    "photo-" + String(number).leftPadded(to: 4) + ".jpg"
  }

  /// Every 29th file is rejected by the server, every time.
  static func isRejected(_ number: Int) -> Bool { number % 29 == 0 }
  /// Every 7th file (from the 3rd) loses its first connection; a retry gets it through.
  static func isFlaky(_ number: Int) -> Bool { number % 7 == 3 }

  /// Uploads in 2 ms; the first attempt of a flaky file and every attempt of a rejected one
  /// fail.
  static func upload() -> AsyncFunc<Int, String> {
    let attempts = Attempts()
    return FakeNetwork.stage("upload", milliseconds: 2) { (number: Int) throws -> String in
      let attempt = attempts.next(number)
      if isRejected(number) { throw Rejected() }
      if isFlaky(number) && attempt == 1 { throw Dropped() }
      return name(number)
    }
  }

  /// The summary a correct run prints, from the rules alone.
  static func expectedSummary() -> [String] {
    let rejected = (0..<fileCount).filter(isRejected)
    return summary(
      uploaded: fileCount - rejected.count, failed: rejected.map { ($0, "rejected") })
  }

  static func summary(uploaded: Int, failed: [(Int, String)]) -> [String] {
    let percent = Double(failed.count * 1000 / fileCount) / 10
    let shown = failed.prefix(4).map { "\(name($0.0)) (\($0.1))" }.joined(separator: ", ")
    return [
      "\(fileCount) files: \(uploaded) uploaded, \(failed.count) failed (\(percent)%, "
        + "within .ratio(0.1))",
      "failed: \(shown), … and \(failed.count - min(failed.count, 4)) more",
    ]
  }

  private final class Attempts: Sendable {
    private let counts = Mutex<[Int: Int]>([:])

    func next(_ number: Int) -> Int {
      counts.withLock { counts in
        counts[number, default: 0] += 1
        return counts[number]!
      }
    }
  }
}

extension String {
  fileprivate func leftPadded(to width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}

extension Tour {
  /// Where the Tour draws live progress; `nil` (the default, and in tests) draws nothing.
  @TaskLocal public static var liveProgress: (@Sendable (String) -> ProgressBar)? = nil

  /// A batch of 2,400 fake files, 8 at a time, tolerating 10% failures, with a live progress
  /// bar and then every element's outcome summarised.
  public static let largeBatch = Scenario(
    title: "a large batch, with progress",
    story: """
      2,400 fake photos through a flaky fake uploader, at most 8 at once, each upload retried \
      once, and success while no more than 10% fail. concurrentMapResults keeps every file's \
      outcome, and its progress closure draws the bar: one line redrawn on a terminal, a few \
      plain lines elsewhere. Every 7th file loses its first connection and gets through on the \
      retry; every 29th is rejected every time: 83 of 2,400 (3.4%) fail, within tolerance.
      """
  ) {
    let bar = liveProgress?("uploads")
    let uploadOne = LargeBatchWork.upload().retry(1)
    let batch = uploadOne.concurrentMapResults(limit: 8, acceptableFailure: .ratio(0.1)) {
      bar?.update($0)
    }
    let result = await withCheckedContinuation { continuation in
      batch.run(Array(0..<LargeBatchWork.fileCount)) { continuation.resume(returning: $0) }
    }
    let printed: String
    var log: [String] = []
    switch result {
    case .success(let outcomes):
      let failed = outcomes.enumerated().compactMap { number, outcome -> (Int, String)? in
        guard case .failure(let error) = outcome else { return nil }
        return (number, "\(error)")
      }
      printed = "success(\(outcomes.count) outcomes)"
      log = LargeBatchWork.summary(uploaded: outcomes.count - failed.count, failed: failed)
    case .failure(let error):
      printed = "failure(\(error))"
    }
    return [
      Traced(
        label: "largeBatch", structure: String(describing: batch), result: printed,
        timeline: Timeline(), log: log,
        expectations: [.logged(LargeBatchWork.expectedSummary())])
    ]
  }
}
