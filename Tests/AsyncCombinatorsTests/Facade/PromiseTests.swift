import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Returns once every block submitted to the serial `queue` so far has run, and every block
/// those blocks submitted in turn: the second hop lands behind anything the first one found.
private func drain(_ queue: DispatchQueue) async {
  await withCheckedContinuation { continuation in
    queue.async { queue.async { continuation.resume() } }
  }
}

private struct Failure: Error, Equatable {
  let id: Int
}

@Suite(.serialized) struct PromiseTests {
  // MARK: The article's two programs

  @Test func article_demo_runs_when_then_then_always() async {
    let events = Recorder<String>()
    let finished = Gate()
    // The article's first program, as written there (without its sleeps).
    firstly { () in
      when(
        { () in
          events.record("begin fst job")
          events.record("fst job in when finished")
        },
        { () in
          events.record("begin snd job")
          events.record("snd job in when finished")
        })
    }.then { (info) in
      events.record("second job")
    }.then { (info) in
      events.record("third job")
    }.always { () in
      events.record("always block")
      finished.open()
    }.error { (error) in
      events.record("error occurred")
    }
    await finished.wait()
    let all = events.all
    #expect(Array(all.suffix(3)) == ["second job", "third job", "always block"])
    #expect(Set(all.prefix(4)).count == 4)
    #expect(all.firstIndex(of: "begin fst job")! < all.firstIndex(of: "fst job in when finished")!)
    #expect(all.firstIndex(of: "begin snd job")! < all.firstIndex(of: "snd job in when finished")!)
  }

  @Test func article_demo_with_a_throw_skips_third_job_and_reports_error() async {
    let events = Recorder<String>()
    let finished = Gate()
    // The article's second program, as written there (without its sleeps).
    firstly { () in
      when(
        { () in
          events.record("begin fst job")
          events.record("fst job in when finished")
        },
        { () in
          events.record("begin snd job")
          events.record("snd job in when finished")
        })
    }.then { (info) in
      events.record("second job")
      throw NSError(domain: "error", code: 0, userInfo: [:])
    }.then { (info) in
      events.record("third job")
    }.always { () in
      events.record("always block")
    }.error { (error) in
      events.record("error occurred")
      finished.open()
    }
    await finished.wait()
    let all = events.all
    #expect(all.count == 7)
    #expect(Array(all.suffix(3)) == ["second job", "always block", "error occurred"])
  }

  @Test func when_jobs_both_start_before_either_finishes() async {
    let events = Recorder<String>()
    let bothStarted = Countdown(2)
    let finished = Gate()
    // Each job finishes only once the other has started too, without blocking a thread: a
    // `when` that waited for one job before starting the other would never finish.
    @Sendable func job(_ name: String) -> Promise<Void> {
      Promise(
        AsyncFunc(name: name) { _, complete in
          events.record("begin \(name) job")
          bothStarted.tick()
          bothStarted.gate.whenOpen {
            events.record("\(name) job in when finished")
            complete(.success(()))
          }
        })
    }
    firstly { when(job("fst"), job("snd")) }
      .then { _ in events.record("second job") }
      .then { _ in events.record("third job") }
      .always {
        events.record("always block")
        finished.open()
      }
      .error { _ in events.record("error occurred") }
    await finished.wait()
    let all = events.all
    #expect(Set(all.prefix(2)) == ["begin fst job", "begin snd job"])
    #expect(Set(all[2..<4]) == ["fst job in when finished", "snd job in when finished"])
    #expect(Array(all.suffix(3)) == ["second job", "third job", "always block"])
  }

  @Test func when_jobs_overlap_in_time() async throws {
    // Timers on a clock the test moves: both wait at once, so one advance ends both.
    let clock = TestClock()
    @Sendable func job() -> Promise<Void> {
      Promise(AsyncFunc<Void, Void>.delay(.milliseconds(250), clock: clock))
    }
    let both = Task { try await firstly { when(job(), job()) }.value }
    // Waits (a second at most) for both jobs to be waiting at once.
    let giveUp = ContinuousClock.now + .seconds(1)
    while clock.pendingCount < 2 && ContinuousClock.now < giveUp { await Task.yield() }
    #expect(clock.pendingCount == 2, "the jobs ran one after the other")
    clock.advance(by: .milliseconds(250))
    if clock.pendingCount > 0 { clock.advance(by: .milliseconds(250)) }  // Ran in turn: unhang.
    _ = try await both.value
    #expect(clock.now - .start >= .milliseconds(250))
    #expect(clock.pendingCount == 0)
  }

  // MARK: A chain is a description

  @Test func nothing_runs_before_error_is_attached_or_value_awaited() async throws {
    let events = Recorder<String>()
    let queue = DispatchQueue(label: "cold")
    let promise = firstly(on: queue) { events.record("firstly") }
      .then(on: queue) { events.record("then") }
      .always(on: queue) { events.record("always") }
    await drain(queue)
    #expect(events.all.isEmpty)
    try await promise.value
    #expect(events.all == ["firstly", "then", "always"])
  }

  @Test func each_start_runs_the_chain_again_independently() async throws {
    // Recording and counting under one lock: two concurrent runs each see their own count.
    let runs = Locked<[Int]>([])
    let promise = firstly { 20 }.then { x in
      runs.withLock { seen in
        seen.append(x)
        return x + seen.count
      }
    }
    async let first = promise.value
    async let second = promise.value
    let values = try await [first, second]
    #expect(runs.withLock { $0 } == [20, 20])
    #expect(Set(values) == [21, 22])
    let finished = Gate()
    let token = promise.always { finished.open() }.error { _ in }
    await finished.wait()
    #expect(runs.withLock { $0.count } == 3)
    #expect(!token.isCancelled)
  }

  @Test func flatMap_flattens_the_promise_its_block_returns() async throws {
    let flat = try await firstly { 2 }.flatMap { x in firstly { x * 10 } }.then { $0 + 1 }.value
    #expect(flat == 21)
    let pair = try await firstly { 1 }
      .flatMap { x in when(firstly { x }, firstly { "\(x + 1)" }) }
      .value
    #expect(pair == (1, "2"))
    let nested = try await firstly { firstly { firstly { "deep" } } }.value
    #expect(nested == "deep")
  }

  // MARK: Threads

  @Test func blocks_run_on_the_given_queues() async {
    let key = DispatchSpecificKey<String>()
    let queues = ["firstly", "then", "always", "error"].map { name in
      let queue = DispatchQueue(label: name)
      queue.setSpecific(key: key, value: name)
      return queue
    }
    let seen = Recorder<String?>()
    let finished = Gate()
    firstly(on: queues[0]) { seen.record(DispatchQueue.getSpecific(key: key)) }
      .then(on: queues[1]) { _ in
        seen.record(DispatchQueue.getSpecific(key: key))
        throw Failure(id: 1)
      }
      .always(on: queues[2]) { seen.record(DispatchQueue.getSpecific(key: key)) }
      .error(on: queues[3]) { _ in
        seen.record(DispatchQueue.getSpecific(key: key))
        finished.open()
      }
    await finished.wait()
    #expect(seen.all == ["firstly", "then", "always", "error"])
  }

  @Test func each_then_of_one_chain_runs_on_its_own_queue() async throws {
    // Consecutive `then`s, some naming a queue and one not: each hops to its own.
    let key = DispatchSpecificKey<String>()
    let queues = ["first", "second", "third"].map { name in
      let queue = DispatchQueue(label: name)
      queue.setSpecific(key: key, value: name)
      return queue
    }
    let seen = Recorder<String?>()
    let promise = Promise(AsyncFunc<Void, Int>.sync { 0 })
      .then(on: queues[0]) { x -> Int in
        seen.record(DispatchQueue.getSpecific(key: key))
        return x + 1
      }
      .then { x -> Int in
        seen.record(DispatchQueue.getSpecific(key: key))
        return x + 1
      }
      .then(on: queues[2]) { x -> Int in
        seen.record(DispatchQueue.getSpecific(key: key))
        return x + 1
      }
      .then(on: queues[1]) { x -> Int in
        seen.record(DispatchQueue.getSpecific(key: key))
        return x + 1
      }
    #expect(try await promise.value == 4)
    #expect(seen.all == ["first", nil, "third", "second"])
  }

  @Test func blocks_run_off_the_callers_queue_by_default() async {
    let key = DispatchSpecificKey<Bool>()
    let caller = DispatchQueue(label: "caller")
    caller.setSpecific(key: key, value: true)
    let seen = Recorder<Bool?>()
    let finished = Gate()
    _ = caller.sync {
      firstly { seen.record(DispatchQueue.getSpecific(key: key)) }
        .then { seen.record(DispatchQueue.getSpecific(key: key)) }
        .then { () throws in
          seen.record(DispatchQueue.getSpecific(key: key))
          throw Failure(id: 0)
        }
        .always { seen.record(DispatchQueue.getSpecific(key: key)) }
        .error { _ in
          seen.record(DispatchQueue.getSpecific(key: key))
          finished.open()
        }
    }
    await finished.wait()
    #expect(seen.all == [nil, nil, nil, nil, nil])
  }

  @Test func blocks_without_a_queue_run_on_the_default_global_queue() async throws {
    // Link after link, on the queue `DispatchQueue.global()` names, not merely some thread.
    let labels = Recorder<String>()
    var promise = firstly { labels.record(CurrentExecutor.name) }
    for _ in 0..<3 { promise = promise.then { labels.record(CurrentExecutor.name) } }
    try await promise.value
    #expect(labels.all == Array(repeating: DispatchQueue.global().label, count: 4))
  }

  @Test func a_finished_chain_of_default_queue_links_lets_go_of_its_run() async {
    // Each link hops with the run's completion captured: once the chain is over, nothing may
    // still hold it.
    var promise = firstly { 0 }
    for _ in 0..<3 { promise = promise.then { $0 + 1 } }
    #expect(await ToolkitLeakTests.leaksCompletion(promise.chain, ()) == false)
  }

  // MARK: Failure and cancellation

  @Test func a_throw_reaches_error_and_skips_the_remaining_thens() async {
    let events = Recorder<String>()
    let caught = Recorder<Failure?>()
    let finished = Gate()
    firstly { 1 }
      .then { x -> Int in throw Failure(id: x) }
      .then { _ in events.record("skipped") }
      .always { events.record("always") }
      .error { error in
        caught.record(error as? Failure)
        finished.open()
      }
    await finished.wait()
    #expect(caught.all == [Failure(id: 1)])
    #expect(events.all == ["always"])
    await #expect(throws: Failure(id: 7)) {
      try await firstly { throw Failure(id: 7) }.then { events.record("skipped") }.value
    }
    #expect(events.all == ["always"])
  }

  @Test func error_does_not_run_after_success() async {
    let events = Recorder<String>()
    let queue = DispatchQueue(label: "terminal")
    let finished = Gate()
    firstly { 1 }
      .always(on: queue) { finished.open() }
      .error(on: queue) { _ in events.record("error") }
    await finished.wait()
    await drain(queue)
    #expect(events.all.isEmpty)
  }

  @Test func cancellation_runs_always_but_not_error_nor_later_thens() async {
    let events = Recorder<String>()
    let parked = ParkedCompletion<Void>()
    let alwaysRan = Gate()
    let rest = DispatchQueue(label: "rest")
    let token = Promise(
      AsyncFunc<Void, Void>(name: "first") { _, complete in parked.park(complete) }
    )
    .then(on: rest) { _ in events.record("then") }
    .always {
      events.record("always")
      alwaysRan.open()
    }
    .error(on: rest) { _ in events.record("error") }
    await parked.arrived.wait()
    token.cancel()
    await alwaysRan.wait()
    parked.complete(.success(()))  // too late: dropped
    await drain(rest)
    #expect(events.all == ["always"])
  }

  @Test func a_then_waiting_for_its_queue_when_cancelled_never_runs() async {
    let events = Recorder<String>()
    let holding = Gate()
    let queue = DispatchQueue(label: "busy")
    // The first block queues a second that suspends the queue; the `then` is queued behind
    // that one, so it waits for its queue without any thread blocked.
    let token = firstly(on: queue) {
      queue.async {
        queue.suspend()
        holding.open()
      }
    }
    .then(on: queue) { events.record("then") }
    .error { _ in events.record("error") }
    await holding.wait()
    token.cancel()
    queue.resume()
    await drain(queue)
    #expect(events.all.isEmpty)
  }

  @Test func a_later_link_of_one_chain_waiting_for_its_queue_when_cancelled_never_runs() async {
    let events = Recorder<String>()
    let holding = Gate()
    let queue = DispatchQueue(label: "busy")
    // The second `then` is queued by the first one's completion, on the first one's thread:
    // it must still check the cancellation when its turn comes.
    let token = firstly { 1 }
      .then(on: queue) { x -> Int in
        queue.async {
          queue.suspend()
          holding.open()
        }
        return x + 1
      }
      .then(on: queue) { _ in events.record("second then") }
      .always { events.record("always") }
      .error { _ in events.record("error") }
    await holding.wait()
    token.cancel()
    queue.resume()
    await drain(queue)
    #expect(!events.all.contains("second then"))
    #expect(!events.all.contains("error"))
  }

  @Test func each_link_of_a_chain_is_traced_as_its_own_stage() async throws {
    let head = Promise(AsyncFunc<Void, Int>.sync(name: "head") { 1 })
    let promise = head.then { $0 + 1 }.then { $0 * 10 }
    let (result, timeline) = await promise.chain.traced(())
    #expect(try result.get() == 20)
    let spans = timeline.spans
    #expect(spans.map(\.name) == ["head", "then", "then"])
    #expect(spans.allSatisfy { $0.endedAt != nil && !$0.isFailed })
    for (before, after) in zip(spans, spans.dropFirst()) {
      #expect(try #require(before.endedAt) <= after.startedAt)
    }
  }

  @Test func cancelling_the_awaiting_task_cancels_the_chain() async {
    let parked = ParkedCompletion<Void>()
    let alwaysRan = Gate()
    let task = Task {
      try await Promise(AsyncFunc<Void, Void> { _, complete in parked.park(complete) })
        .always { alwaysRan.open() }
        .value
    }
    await parked.arrived.wait()
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    await alwaysRan.wait()
    parked.complete(.success(()))
  }

  // MARK: when

  @Test func when_keeps_the_array_order_whatever_the_finishing_order() async throws {
    let parked = Recorder<@Sendable () -> Void>()
    let allStarted = Countdown(3)
    let promises = (0..<3).map { index in
      Promise(
        AsyncFunc<Void, Int> { _, complete in
          parked.record { complete(.success(index)) }
          allStarted.tick()
        })
    }
    async let values = when(promises).value
    await allStarted.wait()
    for finish in parked.all.reversed() { finish() }  // The last one finishes first.
    #expect(try await values == [0, 1, 2])
    #expect(try await when([Promise<Int>]()).value == [])
  }

  @Test func when_fails_with_the_first_failure_without_waiting_for_the_rest() async {
    let release = Gate()
    let slow = Promise(
      AsyncFunc<Void, Int>.async {
        await release.wait()
        return 1
      })
    let failing = firstly { () throws -> Int in throw Failure(id: 2) }
    await #expect(throws: Failure(id: 2)) { try await when([slow, failing, slow]).value }
    await #expect(throws: Failure(id: 2)) { try await when(slow, failing).value }
    release.open()
  }

  @Test func when_takes_any_number_of_promises() async throws {
    let all = try await when(firstly { 1 }, firstly { "two" }, firstly { 3.0 }, firstly { [4] })
      .value
    #expect(all == (1, "two", 3.0, [4]))
    let three = try await firstly { when(firstly { 1 }, firstly { 2 }, firstly { 3 }) }.value
    #expect(three == (1, 2, 3))
  }

  @Test func error_returns_the_runs_token() {
    let token: CancellationToken = firstly { 1 }.error { _ in }
    token.cancel()
    #expect(token.isCancelled)
  }
}
