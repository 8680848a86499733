import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinators

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
}
