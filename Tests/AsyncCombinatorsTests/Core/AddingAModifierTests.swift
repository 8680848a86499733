import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

// Architecture.md's "Adding a modifier" example, as written there but for `print`, which goes
// to `lines` here: the page's example compiles and works as it says.
extension AsyncFunc {
  fileprivate func logged(into lines: Recorder<String>) -> AsyncFunc {
    let inner = program
    return AsyncFunc(modifying: inner, call: "logged()") { input, token, report in
      inner.start(input, token: token, parent: Logging(report, lines))
    }
  }
}

private final class Logging: StageParent {
  private let report: ModifierReport
  private let lines: Recorder<String>
  init(_ report: ModifierReport, _ lines: Recorder<String>) {
    self.report = report
    self.lines = lines
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    lines.record("succeeded")
    report.succeed(value)
  }

  func childFailed(_ error: any Error, tag _: Int) {
    lines.record("failed: \(error)")
    report.fail(error)
  }
}

private struct Boom: Error, CustomStringConvertible {
  var description: String { "boom" }
}

/// The library's stages, each wrapping the function under test once: every one is built by
/// the one builder and starts its inner work through the one start path.
enum LibraryStage: String, CaseIterable, Sendable {
  case logged, flatMap, mapError, latest, race, recover, timeout, onQueue, settled, retry

  func wrap(_ function: AsyncFunc<Int, Int>) -> AsyncFunc<Int, Int> {
    switch self {
    case .logged: function.logged(into: Recorder())
    case .flatMap: AsyncFunc<Int, Int>.sync(name: "id") { $0 }.flatMap { _ in function }
    case .mapError: function.mapError { $0 }
    case .latest: function.latest()
    case .race: AsyncFunc.race([function])
    case .recover: function.recover { _ in 0 }
    case .timeout: function.timeout(.seconds(3600))
    case .onQueue: function.on(DispatchQueue(label: "adding-a-modifier"))
    case .settled:
      function.settled() +> AsyncFunc<Result<Int, any Error>, Int>.sync { try $0.get() }
    case .retry: function.retry(1)
    }
  }
}

@Suite struct AddingAModifierTests {
  @Test func the_architecture_pages_modifier_passes_each_outcome_on() async throws {
    let lines = Recorder<String>()
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }.logged(into: lines)
    let failing = AsyncFunc<Int, Int>.sync(name: "failing") { _ in throw Boom() }
      .logged(into: lines)
    #expect("\(double)" == "double.logged()")
    #expect(try await runToCompletion(double, 21).get() == 42)
    await #expect(throws: Boom.self) { try await runToCompletion(failing, 1).get() }
    #expect(lines.all == ["succeeded", "failed: boom"])
  }

  @Test func the_architecture_pages_modifier_passes_a_cancellation_on() async {
    let lines = Recorder<String>()
    let parking = Parking<Int, Int>()
    let result = Recorder<Result<Int, any Error>>()
    let token = parking.function.logged(into: lines).run(1) { result.record($0) }
    await parking.waitForStarts(1)
    token.cancel()
    #expect(result.all.first.map(isCancellation) == true)
    parking.takeAll()[0].complete(.failure(CancellationError()))
    #expect(lines.all == ["failed: \(CancellationError())"])
  }

  /// Counting is decided where a stage starts, never by the modifier: whatever wraps a body,
  /// an enclosing limit keeps its slot until the body calls back.
  @Test(.timeLimit(.minutes(1)), arguments: LibraryStage.allCases)
  func a_cancelled_runs_slot_waits_for_the_wrapped_body_to_call_back(stage: LibraryStage) async {
    let parking = Parking<Int, Int>()
    let limited = stage.wrap(parking.function).limit(1)
    let first = Gate()
    let token = limited.run(0) { result in
      #expect(isCancellation(result))
      first.open()
    }
    await parking.waitForStarts(1)
    token.cancel()
    await first.wait()  // The result is out at once...
    let second = Gate()
    limited.run(1) { _ in second.open() }
    #expect(parking.started == 1)  // ...but the body ignoring cancellation keeps the slot.
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)
    parking.takeAll()[0].complete(.success(1))
    await second.wait()
  }
}
