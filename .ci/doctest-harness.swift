// The doc-test harness: captures what each example prints and reports it to .ci/doctest.
// Not part of the prelude: examples never call it; the generated program does.
import AsyncCombinators
import Foundation
import Synchronization

/// Shadows `Swift.print` for every example: the text goes to the example that is running.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
  DocTest.capture(items.map { String(describing: $0) }.joined(separator: separator) + terminator)
}

/// Shadows `Swift.debugPrint` likewise.
func debugPrint(_ items: Any..., separator: String = " ", terminator: String = "\n") {
  DocTest.capture(items.map { String(reflecting: $0) }.joined(separator: separator) + terminator)
}

/// Printing into a stream of the example's own is not output: the shadows above would
/// otherwise hide these.
func print<Target: TextOutputStream>(
  _ items: Any..., separator: String = " ", terminator: String = "\n", to output: inout Target
) {
  Swift.print(
    items.map { String(describing: $0) }.joined(separator: separator), terminator: terminator,
    to: &output)
}

enum DocTest {
  /// How long an example may take to print what it claims, and to finish.
  static let outputDeadline: Duration = .seconds(10)
  static let chainDeadline: Duration = .seconds(30)
  /// After an example has printed what it claims, how long to wait for anything more.
  static let grace: Duration = .milliseconds(30)

  private struct State {
    var current: Int?
    var expectedLines = 0
    var text = ""
    var error: String?
    var timedOut = false
  }
  private static let state = Mutex(State())

  static func capture(_ text: String) {
    state.withLock { state in
      if state.current != nil {
        state.text += text
      } else {
        // Printed between examples (late output of one that has been reported).
        FileHandle.standardError.write(Data("doctest: printed outside an example: \(text)".utf8))
      }
    }
  }

  /// Reports the example that was running (if any), then starts capturing for `example`.
  static func begin(_ example: Int, expectedLines: Int) async {
    await end()
    state.withLock { state in
      state = State(current: example, expectedLines: expectedLines)
    }
    emit(["event": "begin", "example": example])
  }

  /// Waits for the running example's claimed output, then a grace period, and reports it.
  static func end() async {
    guard state.withLock({ $0.current != nil }) else { return }
    let clock = ContinuousClock()
    let deadline = clock.now + outputDeadline
    while clock.now < deadline {
      let enough = state.withLock { state in
        state.current == nil || state.text.count(where: { $0 == "\n" }) >= state.expectedLines
      }
      if enough { break }
      try? await Task.sleep(for: .milliseconds(1))
    }
    try? await Task.sleep(for: grace)
    report()
  }

  private static func report() {
    let finished = state.withLock { state -> State? in
      guard state.current != nil else { return nil }
      defer { state = State() }
      return state
    }
    guard let finished, let example = finished.current else { return }
    var record: [String: Any] = ["event": "output", "example": example, "text": finished.text]
    if let error = finished.error { record["error"] = error }
    if finished.timedOut { record["timedOut"] = true }
    emit(record)
  }

  /// Runs one chain of examples (a guide, or one doc comment's example) to its end.
  static func chain(_ number: Int, _ body: @escaping @Sendable () async throws -> Void) async {
    emit(["event": "chain", "chain": number])
    ContractViolation.faultResponse = .warn  // an example may have replaced it
    resetFakes()
    let done = Mutex(false)
    Task {
      do {
        try await body()
      } catch {
        state.withLock { $0.error = "\(error)" }
        await end()
      }
      done.withLock { $0 = true }
    }
    let clock = ContinuousClock()
    let deadline = clock.now + chainDeadline
    while !done.withLock({ $0 }) {
      if clock.now >= deadline {
        state.withLock { $0.timedOut = true }
        report()
        return
      }
      try? await Task.sleep(for: .milliseconds(1))
    }
  }

  static func finish() {
    emit(["event": "finished"])
  }

  private static func emit(_ record: [String: Any]) {
    guard let json = try? JSONSerialization.data(withJSONObject: record) else { return }
    // Unbuffered, so that a crash loses nothing already reported.
    FileHandle.standardOutput.write(Data("DOCTEST\t".utf8) + json + Data("\n".utf8))
  }
}
