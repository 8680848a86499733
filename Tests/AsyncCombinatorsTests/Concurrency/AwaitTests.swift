import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A legacy request handle: it keeps its callback and counts `cancel()` calls, like an SDK
/// whose cancel is only a best effort — the callback may still come.
private final class LegacyRequest: Cancellable {
  private let callback: @Sendable (Result<Int, any Error>) -> Void
  private let cancelCount = Atomic<Int>(0)
  let cancelled = Gate()

  init(_ callback: @escaping @Sendable (Result<Int, any Error>) -> Void) {
    self.callback = callback
  }

  func cancel() {
    cancelCount.add(1, ordering: .relaxed)
    cancelled.open()
  }

  var cancels: Int { cancelCount.load(ordering: .relaxed) }

  /// The server answers, whether or not anyone still listens.
  func respond(_ result: Result<Int, any Error>) { callback(result) }
}

/// A legacy client with one request in flight at a time, driven by the test.
private final class LegacyClient: Sendable {
  private let current = Locked<LegacyRequest?>(nil)
  private let sent = Gate()

  var fetch: AsyncFunc<Int, Int> {
    .cancellable(name: "fetch") { _, complete in
      let request = LegacyRequest(complete)
      self.current.withLock { $0 = request }
      self.sent.open()
      return request
    }
  }

  /// The request once it has been sent.
  func request() async -> LegacyRequest {
    await sent.wait()
    return current.withLock { $0! }
  }
}

/// The await bridge (`Await.swift`): cancelling the awaiting task reaches the request of the
/// callback API underneath (the other direction, `.async` stages, is in `LiftsTests`).
@Suite struct AwaitTests {
  @Test func cancelling_the_awaiting_task_calls_the_requests_cancel() async {
    let client = LegacyClient()
    let fetch = client.fetch
    let task = Task { try await fetch(1) }
    let request = await client.request()
    task.cancel()
    await request.cancelled.wait()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(request.cancels == 1)
  }

  @Test func a_callback_arriving_after_cancellation_is_dropped() async {
    let client = LegacyClient()
    let fetch = client.fetch
    let task = Task { try await fetch(1) }
    let request = await client.request()
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    request.respond(.success(42))  // late: must neither resume the task again nor be reported
    #expect(request.cancels == 1)
  }

  @Test func a_late_callback_never_reaches_the_runs_completion() async {
    let client = LegacyClient()
    let outcomes = Recorder<String>()
    let token = client.fetch.run(1) { outcomes.record("\($0)") }
    let request = await client.request()
    token.cancel()
    request.respond(.success(42))
    #expect(outcomes.all == ["failure(Swift.CancellationError())"])
  }

  @Test func a_request_that_answered_is_not_cancelled_afterwards() async throws {
    let client = LegacyClient()
    let outcomes = Recorder<String>()
    let token = client.fetch.run(1) { outcomes.record("\($0)") }
    let request = await client.request()
    request.respond(.success(42))
    token.cancel()
    #expect(outcomes.all == ["success(42)"])
    #expect(request.cancels == 0)
  }

  @Test func cancellation_crosses_a_whole_pipeline_to_the_request() async {
    let client = LegacyClient()
    let pipeline =
      AsyncFunc<Int, Int>.sync(name: "prepare") { $0 } +> client.fetch
      +> .sync(name: "decode") { $0 + 1 }
    let task = Task { try await pipeline(1) }
    let request = await client.request()
    task.cancel()
    await request.cancelled.wait()
    await #expect(throws: CancellationError.self) { try await task.value }
  }
}
