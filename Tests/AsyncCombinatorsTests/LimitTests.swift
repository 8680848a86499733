import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

@Suite struct LimitTests {
  @Test func runs_share_one_gate_and_start_in_arrival_order() async throws {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(2)
    let finished = Countdown(6)
    for input in 0..<6 { limited.run(input) { _ in finished.tick() } }
    var order: [Int] = []
    while order.count < 6 {
      await parking.waitForStarts(min(order.count + 2, 6))
      #expect(parking.started == min(order.count + 2, 6))
      let parked = parking.takeAll()
      order += parked.map(\.input)
      for run in parked { run.complete(.success(run.input)) }
    }
    await finished.wait()
    #expect(order == Array(0..<6))
  }

  @Test func each_call_of_limit_makes_an_independent_gate() async {
    let parking = Parking<Int, Int>()
    parking.function.limit(1).run(0) { _ in }
    parking.function.limit(1).run(1) { _ in }
    await parking.waitForStarts(2)
    for run in parking.takeAll() { run.complete(.success(0)) }
  }

  @Test func a_thousand_wide_gate_with_thousands_waiting_neither_blocks_nor_deadlocks() async {
    let parking = Parking<Int, Int>()
    let finished = Countdown(5000)
    let inFlight = InFlight()
    let probed = AsyncFunc<Int, Int> { x, complete in
      inFlight.enter()
      parking.function.run(x) { result in
        inFlight.leave()
        complete(result)
      }
    }.limit(1000)
    // `run` returns at once for every call: this loop would hang if waiting blocked it.
    for input in 0..<5000 { probed.run(input) { _ in finished.tick() } }
    await parking.waitForStarts(1000)
    #expect(parking.started == 1000)
    var released = 0
    while released < 5000 {
      await parking.waitForStarts(min(released + 1000, 5000))
      let parked = parking.takeAll()
      released += parked.count
      for run in parked { run.complete(.success(run.input)) }
    }
    await finished.wait()
    #expect(inFlight.peak == 1000)
  }

  @Test func a_cancelled_waiter_leaves_the_queue_at_once() async {
    let parking = Parking<Int, Int>()
    let limited = parking.function.limit(1)
    let results = Recorder<(Int, Bool)>()
    let cancelled = Gate()
    let finished = Countdown(2)
    limited.run(0) { _ in finished.tick() }
    let second = limited.run(1) { result in
      results.record((1, result.failure is CancellationError))
      cancelled.open()
    }
    limited.run(2) { _ in finished.tick() }
    await parking.waitForStarts(1)
    second.cancel()
    await cancelled.wait()  // Completed while run 0 still holds the only slot.
    #expect(results.all.map(\.1) == [true])
    parking.takeAll()[0].complete(.success(0))
    await parking.waitForStarts(2)
    #expect(parking.takeAll().map(\.input) == [2])  // Run 1 never started; run 2 did.
  }

  @Test func synchronous_runs_released_from_the_queue_do_not_recurse() async {
    let hold = Parking<Int, Int>()
    let mostlySync = AsyncFunc<Int, Int> { x, complete in
      if x == 0 { hold.function.run(x, completion: complete) } else { complete(.success(x)) }
    }
    let limited = mostlySync.limit(1)
    let finished = Countdown(50_000)
    for input in 0..<50_000 { limited.run(input) { _ in finished.tick() } }
    await hold.waitForStarts(1)
    hold.takeAll()[0].complete(.success(0))  // Drains 49,999 waiters on this thread.
    await finished.wait()
  }

  @Test func description_reads_like_the_code() {
    let export = AsyncFunc<Int, Int>.sync(name: "export") { $0 }
    #expect("\(export.limit(1))" == "export.limit(1)")
  }

  @Test func a_limit_below_one_is_a_precondition_failure() async {
    await #expect(processExitsWith: .failure) {
      _ = AsyncFunc<Int, Int>.identity.limit(0)
    }
  }
}
