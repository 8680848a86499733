import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// A search screen's model: it shows whatever the latest search delivers, counts the
/// cancellations, and would show an error for a real failure.
private final class SearchViewModel: Sendable {
  private struct State {
    var items: [String] = []
    var deliveries = 0
    var cancellations = 0
    var failures = 0
  }
  private let state = Locked(State())
  private let search: AsyncFunc<String, [String]>
  private let settled: Countdown

  init(search: AsyncFunc<String, [String]>, expectedSearches: Int) {
    self.search = search.latest()
    settled = Countdown(expectedSearches)
  }

  func updateKeyword(_ keyword: String) {
    search.run(keyword) { result in
      self.state.withLock { state in
        switch result {
        case .success(let items):
          state.items = items
          state.deliveries += 1
        case .failure(let error) where error is CancellationError:
          state.cancellations += 1
        case .failure:
          state.items = []
          state.failures += 1
        }
      }
      self.settled.tick()
    }
  }

  func allSettled() async { await settled.wait() }
  var items: [String] { state.withLock { $0.items } }
  var deliveries: Int { state.withLock { $0.deliveries } }
  var cancellations: Int { state.withLock { $0.cancellations } }
  var failures: Int { state.withLock { $0.failures } }
}

/// A search whose requests park, ignoring cancellation, like a legacy backend.
private func backend(_ parking: ParkedCompletions<[String]>) -> AsyncFunc<String, [String]> {
  AsyncFunc(name: "search") { _, complete in parking.park(complete) }
}

@Suite struct LatestTests {
  @Test func three_quick_searches_deliver_only_the_last_result_and_two_cancellations() async {
    let parking = ParkedCompletions<[String]>()
    let model = SearchViewModel(search: backend(parking), expectedSearches: 3)
    model.updateKeyword("s")
    model.updateKeyword("sw")
    model.updateKeyword("swift")
    await parking.arrivals(3)
    parking.release(2, .success(["swift"]))
    parking.release(0, .success(["s", "sw", "swift"]))  // stale, and late
    parking.release(1, .success(["sw", "swift"]))  // stale, and late
    await model.allSettled()
    #expect(model.items == ["swift"])
    #expect(model.deliveries == 1)
    #expect(model.cancellations == 2)
    #expect(model.failures == 0)
  }

  @Test func a_superseded_run_completes_with_cancellation_at_once_and_never_with_its_value() {
    let parking = ParkedCompletions<Int>()
    let slow = AsyncFunc<Int, Int>(name: "slow") { _, complete in parking.park(complete) }
      .latest()
    let first = Recorder<String>()
    let second = Recorder<String>()
    slow.run(1) { first.record("\($0)") }
    slow.run(2) { second.record("\($0)") }
    #expect(first.all == ["failure(Swift.CancellationError())"])
    parking.release(0, .success(1))  // the body ignored cancellation and calls back late
    parking.release(1, .success(2))
    #expect(first.all == ["failure(Swift.CancellationError())"])
    #expect(second.all == ["success(2)"])
  }

  @Test func a_new_run_cancels_the_body_of_the_one_in_flight() {
    let cancelled = Recorder<Int>()
    let parking = ParkedCompletions<Int>()
    let watchful = AsyncFunc<Int, Int>(name: "watchful") { input, token, complete in
      token.onCancel { cancelled.record(input) }
      parking.park(complete)
    }.latest()
    watchful.run(1) { _ in }
    watchful.run(2) { _ in }
    #expect(cancelled.all == [1])
    parking.release(1, .success(2))
    watchful.run(3) { _ in }
    #expect(cancelled.all == [1])  // run 2 had completed: nothing in flight to cancel
  }

  @Test func a_run_that_completed_before_the_next_began_keeps_its_value() async throws {
    let double = AsyncFunc<Int, Int>.sync { $0 * 2 }.latest()
    #expect(try await double(1) == 2)
    #expect(try await double(2) == 4)
  }

  @Test func the_latest_runs_failure_is_delivered_as_a_failure() async {
    let failing = AsyncFunc<Int, Int>.sync { _ in throw TestError() }.latest()
    await #expect(throws: TestError.self) { try await failing(1) }
  }

  @Test func a_superseded_pipeline_never_starts_its_later_stages() {
    let parking = ParkedCompletions<Int>()
    let committed = Recorder<Int>()
    let pipeline =
      (AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      +> .sync(name: "save") { value in
        committed.record(value)
        return value
      }).latest()
    pipeline.run(1) { _ in }
    pipeline.run(2) { _ in }
    parking.release(0, .success(1))
    parking.release(1, .success(2))
    #expect(committed.all == [2])
  }

  @Test func a_result_being_delivered_is_handed_over_before_a_newer_one() async {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<String>()
    let inDelivery = Gate()
    let proceed = Gate()
    let lane = blockingLane("delivery")
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { input, complete in
      input == 1 ? parking.park(complete) : complete(.success(input))
    }.latest()
    fetch.run(1) { result in
      trace.record("1 begins: \(result)")
      inDelivery.open()
      proceed.blockingWait()  // on `lane`, never the cooperative pool
      trace.record("1 ends")
    }
    await parking.arrivals(1)
    lane.async { parking.release(0, .success(1)) }
    await inDelivery.wait()
    let second = Countdown(1)
    fetch.run(2) { result in
      trace.record("2: \(result)")
      second.tick()
    }
    proceed.open()
    await second.wait()
    #expect(trace.all == ["1 begins: success(1)", "1 ends", "2: success(2)"])
  }

  @Test func cancelling_a_run_by_its_token_completes_it_with_cancellation() async {
    let parking = ParkedCompletions<Int>()
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      .latest()
    let outcome = Recorder<String>()
    fetch.run(1) { outcome.record("\($0)") }.cancel()
    #expect(outcome.all == ["failure(Swift.CancellationError())"])
    parking.release(0, .success(1))
    #expect(outcome.count == 1)
  }

  @Test func superseding_a_run_leaves_the_token_it_was_started_with_uncancelled() {
    let parking = ParkedCompletions<Int>()
    let fetch = AsyncFunc<Int, Int>(name: "fetch") { _, complete in parking.park(complete) }
      .latest()
    let screen = CancellationToken()  // shared by the caller with other work
    let first = Recorder<String>()
    fetch.run(1, token: screen) { first.record("\($0)") }
    fetch.run(2) { _ in }
    #expect(first.all == ["failure(Swift.CancellationError())"])
    #expect(!screen.isCancelled)
    parking.release(0, .success(1))
    parking.release(1, .success(2))
  }

  @Test func describes_itself_as_a_call_on_the_inner_function() {
    let search = AsyncFunc<String, String>.sync(name: "search") { $0 }
    #expect(search.latest().description == "search.latest()")
  }
}
