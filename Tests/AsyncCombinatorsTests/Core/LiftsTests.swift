import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {}

/// A legacy request handle: counts how often it was asked to stop.
private final class Request: Cancellable {
  private let cancels = Atomic<Int>(0)
  func cancel() { cancels.add(1, ordering: .relaxed) }
  var cancelCount: Int { cancels.load(ordering: .relaxed) }
}

@Suite(.timeLimit(.minutes(1))) struct LiftsTests {
  // MARK: sync

  @Test func sync_returns_the_value() async throws {
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    #expect(try await runToCompletion(double, 21).get() == 42)
    #expect(String(describing: double) == "double")
  }

  @Test func sync_throw_is_the_failure() async {
    let fail = AsyncFunc<Int, Int>.sync { _ in throw Boom() }
    await #expect(throws: Boom()) { try await runToCompletion(fail, 1).get() }
  }

  @Test func sync_runs_on_the_thread_that_reaches_it() {
    let calls = Recorder<Int?>()
    let double = AsyncFunc<Int, Int>.sync { $0 * 2 }
    double.run(21) { calls.record(try? $0.get()) }
    #expect(calls.all == [42])  // Completed before `run` returned.
  }

  // MARK: async

  @Test func async_returns_the_value() async throws {
    let double = AsyncFunc<Int, Int>.async(name: "double") { $0 * 2 }
    #expect(try await runToCompletion(double, 21).get() == 42)
    #expect(String(describing: double) == "double")
  }

  @Test func async_throw_is_the_failure() async {
    let fail = AsyncFunc<Int, Int>.async { _ in throw Boom() }
    await #expect(throws: Boom()) { try await runToCompletion(fail, 1).get() }
  }

  @Test func async_cancelling_the_run_cancels_its_task() async {
    let started = Gate()
    let cancelSeen = Gate()
    let bodyEnded = Gate()
    let sawTaskCancelled = Locked(false)
    let slow = AsyncFunc<Int, Int>.async { x in
      await withTaskCancellationHandler {
        started.open()
        await cancelSeen.wait()
      } onCancel: {
        cancelSeen.open()
      }
      sawTaskCancelled.withLock { $0 = Task.isCancelled }
      bodyEnded.open()
      return x
    }
    let results = Recorder<Result<Int, any Error>>()
    let token = slow.run(1) { results.record($0) }
    await started.wait()
    token.cancel()
    #expect(results.all.map(isCancellation) == [true])
    await bodyEnded.wait()  // Opens only if the task's cancellation handler ran.
    #expect(sawTaskCancelled.withLock { $0 })
    #expect(results.count == 1)  // The body's late value was dropped.
  }

  // MARK: valueOrError

  @Test func valueOrError_value_is_the_success() async throws {
    let load = AsyncFunc<Int, Int>.valueOrError { x, callback in callback(x * 2, nil) }
    #expect(try await runToCompletion(load, 21).get() == 42)
  }

  @Test func valueOrError_error_is_the_failure_even_with_a_value() async {
    let onlyError = AsyncFunc<Int, Int>.valueOrError { _, callback in callback(nil, Boom()) }
    let both = AsyncFunc<Int, Int>.valueOrError { x, callback in callback(x, Boom()) }
    await #expect(throws: Boom()) { try await runToCompletion(onlyError, 1).get() }
    await #expect(throws: Boom()) { try await runToCompletion(both, 1).get() }
  }

  @Test func valueOrError_neither_is_a_contract_violation_naming_the_function() async {
    let line = #line + 1
    let empty = AsyncFunc<Int, Int>.valueOrError(name: "emptyCallback") { _, callback in
      callback(nil, nil)
    }
    let expected = ContractViolation(
      kind: .neitherValueNorError, name: "emptyCallback",
      fileID: "AsyncCombinatorsTests/LiftsTests.swift", line: line)
    await #expect(throws: expected) { try await runToCompletion(empty, 1).get() }
  }

  // MARK: errorOnly

  @Test func errorOnly_nil_is_success() async throws {
    let save = AsyncFunc<Int, Void>.errorOnly(name: "save") { _, callback in callback(nil) }
    try await runToCompletion(save, 1).get()
    #expect(String(describing: save) == "save")
  }

  @Test func errorOnly_error_is_the_failure() async {
    let save = AsyncFunc<Int, Void>.errorOnly { _, callback in callback(Boom()) }
    await #expect(throws: Boom()) { try await runToCompletion(save, 1).get() }
  }

  // MARK: infallible

  @Test func infallible_value_is_the_success() async throws {
    let queue = testQueue()
    let double = AsyncFunc<Int, Int>.infallible(name: "double") { x, callback in
      queue.async { callback(x * 2) }
    }
    #expect(try await runToCompletion(double, 21).get() == 42)
    #expect(String(describing: double) == "double")
  }

  // MARK: withCancel

  @Test func withCancel_completes_with_the_work_result_and_never_cancels_finished_work() {
    let request = Request()
    let parked = ParkedCompletion<Int>()
    let get = AsyncFunc<Int, Int>.withCancel(name: "get") { x, complete in
      parked.park { complete($0.map { $0 + x }) }
      return request.cancel
    }
    let results = Recorder<Result<Int, any Error>>()
    let token = get.run(40) { results.record($0) }
    parked.complete(.success(2))
    #expect(results.all.map { try? $0.get() } == [42])
    token.cancel()  // After the work called back: nothing left to cancel.
    #expect(request.cancelCount == 0)
    #expect(String(describing: get) == "get")
  }

  @Test func withCancel_cancelling_the_run_calls_the_cancel_closure_once() {
    let request = Request()
    let parked = ParkedCompletion<Int>()
    let get = AsyncFunc<Int, Int>.withCancel { _, complete in
      parked.park(complete)
      return { request.cancel() }
    }
    let results = Recorder<Result<Int, any Error>>()
    let token = get.run(1) { results.record($0) }
    #expect(request.cancelCount == 0)
    token.cancel()
    #expect(request.cancelCount == 1)
    #expect(results.all.map(isCancellation) == [true])
    parked.complete(.success(2))  // The work answers anyway: dropped.
    #expect(results.all.map(isCancellation) == [true])
    token.cancel()
    #expect(request.cancelCount == 1)
  }

  @Test func withCancel_on_a_run_cancelled_before_it_starts_never_starts_the_work() {
    let started = Tally()
    let get = AsyncFunc<Int, Int>.withCancel { _, complete in
      started.add()
      return {}
    }
    let token = CancellationToken()
    token.cancel()
    let results = Recorder<Result<Int, any Error>>()
    get.run(1, token: token) { results.record($0) }
    #expect(started.value == 0)
    #expect(results.all.map(isCancellation) == [true])
  }

  // MARK: cancellable

  @Test func cancellable_completes_with_the_request_result() async throws {
    let request = Request()
    let queue = testQueue()
    let get = AsyncFunc<Int, Int>.cancellable(name: "get") { x, complete in
      queue.async { complete(.success(x * 2)) }
      return request
    }
    #expect(try await runToCompletion(get, 21).get() == 42)
    #expect(String(describing: get) == "get")
  }

  @Test func cancellable_cancelling_the_run_cancels_the_request() {
    let request = Request()
    let parked = ParkedCompletion<Int>()
    let get = AsyncFunc<Int, Int>.cancellable { _, complete in
      parked.park(complete)
      return request
    }
    let results = Recorder<Result<Int, any Error>>()
    let token = get.run(1) { results.record($0) }
    #expect(request.cancelCount == 0)
    token.cancel()
    #expect(request.cancelCount == 1)
    #expect(results.all.map(isCancellation) == [true])
    parked.complete(.success(2))  // The request answers anyway: dropped.
    #expect(results.all.map(isCancellation) == [true])
    token.cancel()
    #expect(request.cancelCount == 1)
  }

  @Test func cancellable_request_that_finished_is_not_cancelled() {
    let request = Request()
    let parked = ParkedCompletion<Int>()
    let get = AsyncFunc<Int, Int>.cancellable { _, complete in
      parked.park(complete)
      return request
    }
    let next = ParkedCompletion<Int>()
    let results = Recorder<Result<Int, any Error>>()
    let token = (get +> AsyncFunc { _, complete in next.park(complete) }).run(1) {
      results.record($0)
    }
    parked.complete(.success(2))
    #expect(next.arrived.isOpen)
    token.cancel()
    #expect(request.cancelCount == 0)
    #expect(results.all.map(isCancellation) == [true])
  }

  @Test func cancellable_request_answering_inline_is_not_cancelled_later() {
    let request = Request()
    let get = AsyncFunc<Int, Int>.cancellable { x, complete in
      complete(.success(x))
      return request
    }
    let next = ParkedCompletion<Int>()
    let token = (get +> AsyncFunc { _, complete in next.park(complete) }).run(1) { _ in }
    token.cancel()
    #expect(request.cancelCount == 0)
  }

  // MARK: Several inputs

  @Test func sync2_and_sync3_take_tuples() async throws {
    let add = AsyncFunc<(Int, Int), Int>.sync2 { $0 + $1 }
    let join = AsyncFunc<(Int, String, Bool), String>.sync3 { "\($0)\($1)\($2)" }
    #expect(try await add((2, 3)) == 5)
    #expect(try await join((1, "a", true)) == "1atrue")
    let failing = AsyncFunc<(Int, Int), Int>.sync2 { _, _ in throw Boom() }
    await #expect(throws: Boom()) { try await failing((1, 2)) }
  }

  @Test func async2_and_async3_take_tuples() async throws {
    let add = AsyncFunc<(Int, Int), Int>.async2 { $0 + $1 }
    let join = AsyncFunc<(Int, String, Bool), String>.async3 { "\($0)\($1)\($2)" }
    #expect(try await add((2, 3)) == 5)
    #expect(try await join((1, "a", true)) == "1atrue")
  }

  @Test func callback2_and_callback3_take_tuples() async throws {
    let queue = testQueue()
    let add = AsyncFunc<(Int, Int), Int>.callback2(name: "add") { a, b, complete in
      queue.async { complete(.success(a + b)) }
    }
    let join = AsyncFunc<(Int, String, Bool), String>.callback3 { a, b, c, complete in
      complete(.success("\(a)\(b)\(c)"))
    }
    #expect(try await add((2, 3)) == 5)
    #expect(try await join((1, "a", true)) == "1atrue")
    #expect(String(describing: add) == "add")
  }

  @Test func multi_input_lifts_record_their_call_site() {
    let line = #line + 1
    let add = AsyncFunc<(Int, Int), Int>.sync2 { $0 + $1 }
    let joined = AsyncFunc<(Int, Int, Int), Int>.callback3 { a, b, c, complete in
      complete(.success(a + b + c))
    }
    #expect(String(describing: add) == "LiftsTests.swift:\(line)")
    #expect(String(describing: joined) == "LiftsTests.swift:\(line + 1)")
  }
}
