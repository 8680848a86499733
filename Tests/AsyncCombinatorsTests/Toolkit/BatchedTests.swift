import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Each test closes batches on a private serial queue it holds suspended while it makes its
/// loads: the batch's dispatch block runs only when the test resumes the queue.
@Suite struct BatchedTests {
  private final class Loads: Sendable {
    let results = Recorder<(key: Int, result: Result<String, any Error>)>()
    let finished: Countdown
    init(_ count: Int) { finished = Countdown(count) }

    func load(_ function: AsyncFunc<Int, String>, _ key: Int) -> CancellationToken {
      function.run(key) { result in
        self.results.record((key, result))
        self.finished.tick()
      }
    }

    func values(of key: Int) -> [String?] {
      results.all.filter { $0.key == key }.map { try? $0.result.get() }
    }
  }

  /// A private serial queue, suspended: the test resumes it to let its batch's block run.
  private static func heldQueue() -> DispatchQueue {
    let queue = DispatchQueue(label: "batched.test")
    queue.suspend()
    return queue
  }

  @Test func loads_of_1_and_2_become_one_call() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(2)
    _ = loads.load(user, 1)
    _ = loads.load(user, 2)
    #expect(loader.started == 0)
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [1, 2])
    call.complete(.success(["one", "two"]))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == ["one"])
    #expect(loads.values(of: 2) == ["two"])
    #expect(loader.started == 1)
  }

  @Test func three_loads_with_maxBatchSize_2_give_1_2_then_3() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, maxBatchSize: 2, on: queue)
    let loads = Loads(3)
    for key in 1...3 { _ = loads.load(user, key) }
    // The third key found the batch full and sent it; the next waits for its dispatch block.
    #expect(loader.started == 1)
    queue.resume()
    await loader.waitForStarts(2)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == [[1, 2], [3]])
    calls[0].complete(.success(["one", "two"]))
    calls[1].complete(.success(["three"]))
    await loads.finished.wait()
    #expect(loads.values(of: 3) == ["three"])
  }

  @Test func a_full_batch_still_takes_loads_of_its_keys_until_a_new_key_comes() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, maxBatchSize: 2, on: queue)
    let loads = Loads(6)
    for key in [1, 2, 1, 2] { _ = loads.load(user, key) }
    #expect(loader.started == 0)  // Full, but its keys may still come: it waits for the tick.
    for key in [3, 3] { _ = loads.load(user, key) }
    #expect(loader.started == 1)
    queue.resume()
    await loader.waitForStarts(2)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == [[1, 2], [3]])
    calls[0].complete(.success(["one", "two"]))
    calls[1].complete(.success(["three"]))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == ["one", "one"])
    #expect(loads.values(of: 3) == ["three", "three"])
  }

  @Test func loads_waiting_on_one_token_share_one_cancellation_handler() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let token = CancellationToken()
    let outcomes = Recorder<Result<String, any Error>>()
    // Nested runs, as a fold's elements are, register nothing of their own on the token.
    for key in [1, 2, 1] { user.runNested(key, token: token) { outcomes.record($0) } }
    #expect(token.registrationCount == 1)
    token.cancel()
    #expect(outcomes.all.count == 3)
    #expect(outcomes.all.allSatisfy { $0.failure is CancellationError })
    #expect(token.registrationCount == 0)
    queue.resume()
    // The serial queue runs the batch's block before this one.
    await withCheckedContinuation { done in queue.async { done.resume() } }
    // Every run left before the batch was sent: its block found no key and sent nothing.
    #expect(loader.started == 0)
  }

  @Test func loads_of_1_1_and_2_give_one_call_of_1_and_2() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(3)
    for key in [1, 1, 2] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [1, 2])
    call.complete(.success(["one", "two"]))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == ["one", "one"])
    #expect(loads.values(of: 2) == ["two"])
  }

  @Test func keys_go_in_first_asked_order() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(5)
    for key in [5, 3, 5, 9, 3] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [5, 3, 9])
    call.complete(.success(["five", "three", "nine"]))
    await loads.finished.wait()
    #expect(loads.values(of: 5) == ["five", "five"])
    #expect(loads.values(of: 3) == ["three", "three"])
    #expect(loads.values(of: 9) == ["nine"])
  }

  @Test func a_load_after_the_dispatch_block_ran_goes_to_the_next_batch() async {
    let loader = Parking<[Int], [String]>()
    let queue = DispatchQueue(label: "batched.test")
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(2)
    _ = loads.load(user, 1)
    await loader.waitForStarts(1)
    _ = loads.load(user, 2)
    await loader.waitForStarts(2)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == [[1], [2]])
    calls[0].complete(.success(["one"]))
    calls[1].complete(.success(["two"]))
    await loads.finished.wait()
  }

  @Test func a_count_mismatch_fails_every_load_of_the_batch_naming_the_loader() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(3)
    for key in [1, 2, 2] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.success(["only one"]))
    await loads.finished.wait()
    let violations = loads.results.all.map { $0.result.failure as? ContractViolation }
    #expect(violations.count == 3)
    for violation in violations {
      #expect(violation?.kind == .resultCountMismatch(keys: 2, results: 1))
      #expect(violation?.name == "parked")
      #expect(violation?.fileID == #fileID)
      #expect(
        violation?.description.hasPrefix("parked (BatchedTests.swift:") == true,
        "\(String(describing: violation))")
    }
  }

  @Test func a_failing_load_fails_every_load_of_the_batch() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(2)
    for key in [1, 2] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.failure(TestError(3)))
    await loads.finished.wait()
    #expect(
      loads.results.all.map { $0.result.failure as? TestError } == [TestError(3), TestError(3)])
  }

  @Test func the_result_form_gives_each_key_its_own_outcome() async {
    let loader = Parking<[Int], [Result<String, any Error>]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(3)
    for key in [1, 2, 1] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.success([.success("one"), .failure(TestError(2))]))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == ["one", "one"])
    #expect(
      loads.results.all.filter { $0.key == 2 }.map { $0.result.failure as? TestError }
        == [TestError(2)])
  }

  @Test func the_result_form_checks_the_count_too() async {
    let loader = Parking<[Int], [Result<String, any Error>]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(1)
    _ = loads.load(user, 1)
    queue.resume()
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.success([.success("one"), .success("extra")]))
    await loads.finished.wait()
    #expect(
      (loads.results.all[0].result.failure as? ContractViolation)?.kind
        == .resultCountMismatch(keys: 1, results: 2))
  }

  @Test func a_load_cancelled_before_its_batch_is_sent_leaves_it() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(4)
    _ = loads.load(user, 1)
    let two = loads.load(user, 2)
    _ = loads.load(user, 3)
    let threeAgain = loads.load(user, 3)
    two.cancel()
    threeAgain.cancel()  // another load still asks for 3
    #expect(loads.results.count == 2)
    #expect(loads.results.all.allSatisfy { isCancellation($0.result) })
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [1, 3])
    call.complete(.success(["one", "three"]))
    await loads.finished.wait()
    #expect(loads.values(of: 3) == [nil, "three"])
  }

  @Test func a_key_that_left_and_is_asked_again_goes_last() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(4)
    loads.load(user, 1).cancel()
    _ = loads.load(user, 2)
    _ = loads.load(user, 1)
    _ = loads.load(user, 2)
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [2, 1])
    call.complete(.success(["two", "one"]))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == [nil, "one"])
  }

  @Test func a_batch_whose_loads_all_left_before_it_was_sent_makes_no_call() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(2)
    loads.load(user, 1).cancel()
    loads.load(user, 2).cancel()
    queue.resume()
    // A block after the batch's own: once it has run, the batch's block has too.
    await hop(queue)
    #expect(loader.started == 0)
  }

  @Test func cancelling_every_load_of_a_sent_batch_cancels_the_load_run() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let loads = Loads(3)
    let tokens = [1, 2, 2].map { loads.load(user, $0) }
    queue.resume()
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    tokens[0].cancel()
    tokens[1].cancel()
    #expect(!call.token.isCancelled)
    tokens[2].cancel()
    #expect(call.token.isCancelled)
    await loads.finished.wait()
    #expect(loads.results.all.allSatisfy { isCancellation($0.result) })
    call.complete(.success(["one", "two"]))
  }

  @Test func a_delivered_load_leaves_no_registration_on_its_token() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue)
    let token = CancellationToken()
    let finished = Countdown(2)
    for key in [1, 2] { user.run(key, token: token) { _ in finished.tick() } }
    queue.resume()
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.success(["one", "two"]))
    await finished.wait()
    #expect(token.registrationCount == 0)
  }

  @Test func batched_then_memoized_is_a_dataloader_with_a_cache() async {
    let loader = Parking<[Int], [String]>()
    let queue = Self.heldQueue()
    let users = ResultCache<Int, String>(name: "users")
    let user = AsyncFunc<Int, String>.batched(loader.function, on: queue).memoized(in: users)
    let loads = Loads(3)
    for key in [1, 2, 1] { _ = loads.load(user, key) }
    queue.resume()
    await loader.waitForStarts(1)
    let first = loader.takeAll()[0]
    #expect(first.input == [1, 2])
    first.complete(.success(["one", "two"]))
    await loads.finished.wait()
    #expect(users.value(for: 1) == "one")
    // Kept keys make no call; the others make the next batch.
    let more = Loads(2)
    _ = more.load(user, 1)
    _ = more.load(user, 3)
    await loader.waitForStarts(2)
    let second = loader.takeAll()[0]
    #expect(second.input == [3])
    second.complete(.success(["three"]))
    await more.finished.wait()
    #expect(more.values(of: 1) == ["one"])
    #expect(more.values(of: 3) == ["three"])
    #expect(
      "\(user)" == "batched(parked).memoized(in: users)")
  }

  @Test func description_reads_like_the_code() {
    let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { $0.map(String.init) }
    let outcomes = AsyncFunc<[Int], [Result<String, any Error>]>.sync(name: "outcomes") {
      $0.map { .success(String($0)) }
    }
    #expect(
      "\(AsyncFunc<Int, String>.batched(usersByIDs, maxBatchSize: 100))"
        == "batched(usersByIDs, maxBatchSize: 100)")
    #expect("\(AsyncFunc<Int, String>.batched(usersByIDs))" == "batched(usersByIDs)")
    #expect("\(AsyncFunc<Int, String>.batched(outcomes))" == "batched(outcomes)")
  }

  @Test(.timeLimit(.minutes(1)))
  func loads_racing_from_many_threads_each_get_their_keys_output() async {
    let loadCalls = Tally()
    let queue = testQueue("batched-stress")
    let usersByIDs = AsyncFunc<[Int], [String]>(name: "usersByIDs") { ids, complete in
      loadCalls.add()
      bounce(ids.count % 3, on: queue) { complete(.success(ids.map { "user\($0)" })) }
    }
    let user = AsyncFunc<Int, String>.batched(usersByIDs, maxBatchSize: 7, on: queue)
    let runs = 2_000
    let finished = Countdown(runs)
    let wrong = Tally()
    blockingLane("batched-stress").async {
      DispatchQueue.concurrentPerform(iterations: runs) { index in
        let key = index % 50
        let token = user.run(key) { result in
          switch result {
          case .success(let value) where value == "user\(key)": break
          case .failure(let error) where error is CancellationError: break
          default: wrong.add()
          }
          finished.tick()
        }
        if index % 4 == 0 { token.cancel() }
      }
    }
    await finished.wait()
    #expect(wrong.value == 0)
    #expect(loadCalls.value > 0)
  }

  // MARK: - With a window

  @Test func loads_within_the_window_go_out_as_ceil_of_distinct_keys_over_maxBatchSize_calls()
    async
  {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, maxBatchSize: 50, window: .milliseconds(5), clock: clock)
    let loads = Loads(500)
    for index in 0..<500 { _ = loads.load(user, index % 200) }
    // Each batch went as it filled; the later loads of its keys joined it in flight.
    #expect(loader.started == 4)
    clock.advance(by: .milliseconds(5))
    #expect(clock.pendingCount == 0)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == (0..<4).map { Array($0 * 50..<$0 * 50 + 50) })
    for call in calls { call.complete(.success(call.input.map { "user\($0)" })) }
    await loads.finished.wait()
    #expect(loads.results.all.allSatisfy { (try? $0.result.get()) == "user\($0.key)" })
    #expect(loader.started == 4)
  }

  @Test func a_batch_that_is_not_full_goes_when_its_window_ends() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, maxBatchSize: 50, window: .milliseconds(5), clock: clock)
    let loads = Loads(120)
    for key in (0..<120).reversed() { _ = loads.load(user, key) }
    #expect(loader.started == 2)
    clock.advance(by: .milliseconds(4))
    #expect(loader.started == 2)
    clock.advance(by: .milliseconds(1))
    await loader.waitForStarts(3)
    let calls = loader.takeAll()
    #expect(calls.map(\.input.count) == [50, 50, 20])
    #expect(calls[2].input == Array((0..<20).reversed()))
    for call in calls { call.complete(.success(call.input.map(String.init))) }
    await loads.finished.wait()
    #expect(loader.started == 3)
  }

  @Test(.timeLimit(.minutes(1)))
  func awaiting_loads_from_a_task_group_share_their_windows() async throws {
    let clock = TestClock()
    let calls = Recorder<[Int]>()
    let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { ids in
      calls.record(ids)
      return ids.map { "user\($0)" }
    }
    let user = AsyncFunc<Int, String>.batched(
      usersByIDs, maxBatchSize: 50, window: .milliseconds(5), clock: clock)
    // Counts a load once it has joined its batch: the batched run adds it before returning.
    let joined = Countdown(500)
    let counted = AsyncFunc<Int, String>(name: "counted") { key, complete in
      _ = user.run(key, completion: complete)
      joined.tick()
    }
    try await withThrowingTaskGroup(of: Bool.self) { group in
      for index in 0..<500 {
        group.addTask { try await counted(index % 200) == "user\(index % 200)" }
      }
      await joined.wait()
      clock.advance(by: .milliseconds(5))
      for try await right in group { #expect(right) }
    }
    // The load answers at once: loads of a key whose batch was delivered within the window
    // get its output without a call.
    #expect(calls.count == 4)
    #expect(calls.all.allSatisfy { $0.count == 50 })
  }

  @Test func the_window_opens_at_the_first_load_of_a_batch() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, window: .milliseconds(5), clock: clock)
    let loads = Loads(3)
    _ = loads.load(user, 1)
    clock.advance(by: .milliseconds(3))
    _ = loads.load(user, 2)
    clock.advance(by: .milliseconds(2))
    await loader.waitForStarts(1)
    // The next load opens a batch whose window ends 5 ms after it.
    _ = loads.load(user, 3)
    clock.advance(by: .milliseconds(4))
    #expect(clock.pendingCount == 1)
    clock.advance(by: .milliseconds(1))
    await loader.waitForStarts(2)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == [[1, 2], [3]])
    for call in calls { call.complete(.success(call.input.map(String.init))) }
    await loads.finished.wait()
  }

  @Test func a_windowed_batch_whose_loads_all_left_takes_its_timer_back_and_makes_no_call() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let queue = DispatchQueue(label: "batched.test")
    let user = AsyncFunc<Int, String>.batched(
      loader.function, window: .milliseconds(5), clock: clock, on: queue)
    let loads = Loads(4)
    let one = loads.load(user, 1)
    let oneAgain = loads.load(user, 1)
    let two = loads.load(user, 2)
    #expect(clock.pendingCount == 1)
    one.cancel()
    two.cancel()
    #expect(clock.pendingCount == 1)  // Another load still asks for 1.
    oneAgain.cancel()
    #expect(clock.pendingCount == 0)
    #expect(loads.results.all.allSatisfy { isCancellation($0.result) })
    // The next load opens a new batch, with its own window.
    _ = loads.load(user, 3)
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(1)
    let calls = loader.takeAll()
    #expect(calls.map(\.input) == [[3]])
    calls[0].complete(.success(["three"]))
    await loads.finished.wait()
    #expect(loads.values(of: 3) == ["three"])
  }

  @Test func a_load_after_a_full_batch_was_delivered_gets_its_output_until_the_window_ends()
    async
  {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, maxBatchSize: 2, window: .milliseconds(5), clock: clock)
    let first = Loads(2)
    for key in [1, 2] { _ = first.load(user, key) }
    let call = loader.takeAll()[0]
    call.complete(.success(["one", "two"]))
    await first.finished.wait()
    clock.advance(by: .milliseconds(4))
    let served = Loads(1)
    _ = served.load(user, 2)
    await served.finished.wait()  // At once: no call, no clock.
    #expect(served.values(of: 2) == ["two"])
    clock.advance(by: .milliseconds(1))
    let later = Loads(1)
    _ = later.load(user, 2)  // The window is over: a new batch.
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(2)
    let next = loader.takeAll()[0]
    #expect(next.input == [2])
    next.complete(.success(["two again"]))
    await later.finished.wait()
    #expect(later.values(of: 2) == ["two again"])
  }

  @Test func a_full_batch_that_failed_serves_nothing_later_loads_make_a_new_call() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, maxBatchSize: 2, window: .milliseconds(5), clock: clock)
    let first = Loads(3)
    for key in [1, 2, 1] { _ = first.load(user, key) }
    #expect(loader.started == 1)
    loader.takeAll()[0].complete(.failure(TestError(4)))
    await first.finished.wait()
    #expect(first.results.all.allSatisfy { $0.result.failure as? TestError == TestError(4) })
    #expect(clock.pendingCount == 0)  // Its window's timer went with it.
    let again = Loads(1)
    _ = again.load(user, 1)
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(2)
    let call = loader.takeAll()[0]
    #expect(call.input == [1])
    call.complete(.success(["one"]))
    await again.finished.wait()
    #expect(again.values(of: 1) == ["one"])
  }

  @Test func cancelling_every_load_of_a_full_batch_cancels_its_call_and_lets_no_load_join_it()
    async
  {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, maxBatchSize: 2, window: .milliseconds(5), clock: clock)
    let loads = Loads(4)
    let tokens = [1, 2, 2].map { loads.load(user, $0) }
    let call = loader.takeAll()[0]
    #expect(call.input == [1, 2])
    tokens[0].cancel()
    tokens[1].cancel()
    #expect(!call.token.isCancelled)
    tokens[2].cancel()
    #expect(call.token.isCancelled)
    #expect(clock.pendingCount == 0)
    _ = loads.load(user, 1)  // Its batch's call was cancelled: it opens a new batch.
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(2)
    let next = loader.takeAll()[0]
    #expect(next.input == [1])
    next.complete(.success(["one"]))
    call.complete(.failure(CancellationError()))
    await loads.finished.wait()
    #expect(loads.values(of: 1) == [nil, "one"])
  }

  @Test func cancelling_every_load_of_a_sent_windowed_batch_cancels_the_load_run() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, window: .milliseconds(5), clock: clock)
    let loads = Loads(2)
    let tokens = [1, 1].map { loads.load(user, $0) }
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(1)
    let call = loader.takeAll()[0]
    #expect(call.input == [1])
    tokens[0].cancel()
    #expect(!call.token.isCancelled)
    tokens[1].cancel()
    #expect(call.token.isCancelled)
    await loads.finished.wait()
    call.complete(.success(["one"]))
  }

  @Test func a_windowed_count_mismatch_fails_every_load_of_the_batch() async {
    let clock = TestClock()
    let loader = Parking<[Int], [String]>()
    let user = AsyncFunc<Int, String>.batched(
      loader.function, window: .milliseconds(5), clock: clock)
    let loads = Loads(3)
    for key in [1, 2, 2] { _ = loads.load(user, key) }
    clock.advance(by: .milliseconds(5))
    await loader.waitForStarts(1)
    loader.takeAll()[0].complete(.success(["only one"]))
    await loads.finished.wait()
    #expect(
      loads.results.all.allSatisfy {
        ($0.result.failure as? ContractViolation)?.kind == .resultCountMismatch(keys: 2, results: 1)
      })
  }

  @Test func a_windowed_description_names_the_window() {
    let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { $0.map(String.init) }
    #expect(
      "\(AsyncFunc<Int, String>.batched(usersByIDs, maxBatchSize: 50, window: .milliseconds(5)))"
        == "batched(usersByIDs, maxBatchSize: 50, window: 0.005 seconds)")
    #expect(
      "\(AsyncFunc<Int, String>.batched(usersByIDs, window: .seconds(1)))"
        == "batched(usersByIDs, window: 1.0 seconds)")
  }

  @Test(.timeLimit(.minutes(1)))
  func windowed_loads_racing_from_many_threads_each_get_their_keys_output() async {
    let queue = testQueue("batched-window-stress")
    let usersByIDs = AsyncFunc<[Int], [String]>(name: "usersByIDs") { ids, complete in
      bounce(ids.count % 3, on: queue) { complete(.success(ids.map { "user\($0)" })) }
    }
    let user = AsyncFunc<Int, String>.batched(
      usersByIDs, maxBatchSize: 7, window: .microseconds(50), on: queue)
    let runs = 2_000
    let finished = Countdown(runs)
    let wrong = Tally()
    blockingLane("batched-window-stress").async {
      DispatchQueue.concurrentPerform(iterations: runs) { index in
        let key = index % 50
        let token = user.run(key) { result in
          switch result {
          case .success(let value) where value == "user\(key)": break
          case .failure(let error) where error is CancellationError: break
          default: wrong.add()
          }
          finished.tick()
        }
        if index % 4 == 0 { token.cancel() }
      }
    }
    await finished.wait()
    #expect(wrong.value == 0)
  }
}
