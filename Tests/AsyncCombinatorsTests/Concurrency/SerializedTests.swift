import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Records the order of `run` calls under the same lock as the calls themselves.
private final class Calls: Sendable {
  private let order = Locked<[Int]>([])

  func run(_ index: Int, _ function: AsyncFunc<Int, Int>, then: @escaping @Sendable () -> Void) {
    order.withLock { order in
      order.append(index)
      function.run(index) { _ in then() }
    }
  }

  var all: [Int] { order.withLock { $0 } }
}

/// A body that parks its completion, ignoring cancellation, and records that it started.
private func parked(_ parking: ParkedCompletions<Int>, _ trace: Recorder<Int>) -> AsyncFunc<
  Int, Int
> {
  AsyncFunc(name: "parked") { input, complete in
    trace.record(input)
    parking.park(complete)
  }
}

@Suite struct SerializedTests {
  @Test func runs_of_random_length_execute_in_call_order_without_overlap() async throws {
    try await forAll("serialized: 200 random runs in call order", count: 1) { random, _ in
      let probe = InFlight()
      let trace = Recorder<Int>()
      let lane = testQueue("bodies")
      let lengths = (0..<200).map { _ in Int.random(in: 0...4, using: &random) }
      let write = AsyncFunc<Int, Int>(name: "write") { index, complete in
        probe.enter()
        trace.record(index)
        bounce(lengths[index], on: lane) {
          probe.leave()
          complete(index % 7 == 0 ? .failure(TestError()) : .success(index))
        }
      }.serialized()
      let done = Countdown(200)
      for index in 0..<200 { write.run(index) { _ in done.tick() } }
      await done.wait()
      return trace.all == Array(0..<200) && probe.peak <= 1
    }
  }

  @Test func runs_started_from_many_threads_execute_in_call_order_without_overlap() async {
    let probe = InFlight()
    let trace = Recorder<Int>()
    let lane = testQueue("bodies")
    let write = AsyncFunc<Int, Int>(name: "write") { index, complete in
      probe.enter()
      trace.record(index)
      bounce(index % 3, on: lane) {
        probe.leave()
        complete(.success(index))
      }
    }.serialized()
    let calls = Calls()
    let done = Countdown(200)
    testQueue("callers").async {
      DispatchQueue.concurrentPerform(iterations: 200) { index in
        calls.run(index, write) { done.tick() }
      }
    }
    await done.wait()
    #expect(trace.all == calls.all)
    #expect(trace.count == 200)
    #expect(probe.peak <= 1)
  }

  @Test func a_run_cancelled_while_waiting_never_starts_and_the_line_goes_on() async throws {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let write = parked(parking, trace).serialized()
    let outcomes = Recorder<String>()
    write.run(1) { _ in }
    let second = write.run(2) { outcomes.record("2: \($0)") }
    let third = Countdown(1)
    write.run(3) {
      outcomes.record("3: \($0)")
      third.tick()
    }
    second.cancel()
    #expect(outcomes.all == ["2: failure(Swift.CancellationError())"])

    parking.release(0, .success(1))
    await parking.arrivals(2)
    parking.release(1, .success(3))
    await third.wait()
    #expect(trace.all == [1, 3])
    #expect(outcomes.all.last == "3: success(3)")
  }

  @Test func a_cancelled_running_run_keeps_its_turn_until_its_body_calls_back() async {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let write = parked(parking, trace).serialized()
    let first = Recorder<String>()
    let token = write.run(1) { first.record("\($0)") }
    let second = Countdown(1)
    write.run(2) { _ in second.tick() }
    await parking.arrivals(1)
    token.cancel()
    #expect(first.all == ["failure(Swift.CancellationError())"])  // the caller hears at once
    #expect(trace.all == [1])  // only the body's callback can let run 2 in: it has not come
    parking.release(0, .success(1))
    await parking.arrivals(2)
    #expect(trace.all == [1, 2])
    #expect(first.count == 1)
    parking.release(1, .success(2))
    await second.wait()
  }

  @Test func a_cancelled_parallel_inside_completes_at_once_but_keeps_its_turn_until_both_sides_end()
  {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let side = parked(parking, trace)
    let write = (side <> side).serialized()
    let first = Recorder<String>()
    let token = write.run(1) { first.record("\($0)") }
    write.run(2) { _ in }
    #expect(trace.all == [1, 1])
    token.cancel()  // both sides ignore it: the caller hears at once...
    #expect(first.all == ["failure(Swift.CancellationError())"])
    #expect(trace.all == [1, 1])  // ...but run 2 waits for both bodies of run 1
    parking.release(0, .success(0))
    #expect(trace.all == [1, 1])
    parking.release(1, .success(1))
    #expect(trace.all == [1, 1, 2, 2])
    for index in 2..<4 { parking.release(index, .success(index)) }
  }

  @Test func a_cancelled_fold_inside_keeps_its_turn_until_its_elements_end() {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let write = parked(parking, trace).concurrentMap().serialized()
    let token = write.run([1, 2]) { _ in }
    write.run([3]) { _ in }
    #expect(trace.all == [1, 2])
    token.cancel()  // the elements ignore it
    #expect(trace.all == [1, 2])
    parking.release(0, .success(0))
    parking.release(1, .success(1))
    #expect(trace.all == [1, 2, 3])
    parking.release(2, .success(2))
  }

  @Test func a_timed_out_run_keeps_its_turn_until_its_body_ends() {
    // Issue 29, item 9: bodies behind a timeout never overlap.
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let clock = TestClock()
    let write = parked(parking, trace).timeout(.seconds(1), clock: clock).serialized()
    let outcomes = Recorder<String>()
    for index in 1...4 { write.run(index) { outcomes.record("\(index): \($0)") } }
    #expect(trace.all == [1])
    clock.advance(by: .seconds(1))  // run 1 times out; its body goes on
    #expect(outcomes.count == 1 && outcomes.all[0].hasPrefix("1: failure(TimeoutError"))
    clock.advance(by: .seconds(5))
    #expect(trace.all == [1])  // one body at a time, however long the clock runs
    parking.release(0, .success(1))
    #expect(trace.all == [1, 2])
    parking.release(1, .success(2))
    parking.release(2, .success(3))
    parking.release(3, .success(4))
    #expect(trace.all == [1, 2, 3, 4])
  }

  @Test func a_failure_completes_its_own_run_and_the_line_goes_on() async throws {
    let flaky = AsyncFunc<Int, Int>.sync { input in
      if input == 1 { throw TestError() }
      return input
    }.serialized()
    await #expect(throws: TestError.self) { try await flaky(1) }
    #expect(try await flaky(2) == 2)
  }

  @Test func each_call_to_serialized_makes_its_own_line() async throws {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<Int>()
    let base = parked(parking, trace)
    let one = base.serialized()
    let other = base.serialized()
    one.run(1) { _ in }
    await parking.arrivals(1)
    let done = Countdown(1)
    other.run(2) { _ in done.tick() }
    await parking.arrivals(2)  // started although `one` still holds its own line
    parking.release(1, .success(2))
    await done.wait()
    parking.release(0, .success(1))
  }

  @Test func a_long_line_of_synchronous_runs_adds_no_stack_depth() async {
    let parking = ParkedCompletions<Int>()
    let gatekeeper = AsyncFunc<Int, Int>(name: "gatekeeper") { input, complete in
      input == 0 ? parking.park(complete) : complete(.success(input))
    }.serialized()
    let count = 20_000
    let done = Countdown(count)
    for index in 0..<count { gatekeeper.run(index) { _ in done.tick() } }
    parking.release(0, .success(0))  // the rest now run one after another on this thread
    await done.wait()
  }

  @Test func a_runs_completion_is_called_before_the_next_run_starts() async {
    let parking = ParkedCompletions<Int>()
    let trace = Recorder<String>()
    let write = AsyncFunc<Int, Int>(name: "write") { input, complete in
      trace.record("start \(input)")
      input == 1 ? parking.park(complete) : complete(.success(input))
    }.serialized()
    write.run(1) { trace.record("1: \($0)") }
    write.run(2) { trace.record("2: \($0)") }
    await parking.arrivals(1)
    parking.release(0, .success(1))  // run 2 starts on this thread, after run 1 is delivered
    #expect(trace.all == ["start 1", "1: success(1)", "start 2", "2: success(2)"])
  }

  @Test func describes_itself_as_a_call_on_the_inner_function() {
    let write = AsyncFunc<Int, Int>.sync(name: "write") { $0 }
    #expect(write.serialized().description == "write.serialized()")
    #expect((write +> write).serialized().description == "(write +> write).serialized()")
  }
}
