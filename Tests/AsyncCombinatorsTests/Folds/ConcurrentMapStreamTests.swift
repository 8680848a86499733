import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ConcurrentMapStreamTests {
  /// Iterates `sequence` to its end in a task, collecting the outputs.
  static func collect<S: AsyncSequence & Sendable>(_ sequence: S) -> Task<[S.Element], any Error>
  where S.Element: Sendable {
    Task {
      var outputs: [S.Element] = []
      for try await output in sequence { outputs.append(output) }
      return outputs
    }
  }

  /// Cancels `token`'s holder's count down when the token is cancelled.
  static func onCancel(_ parked: [Parking<Int, Int>.Parked], tick countdown: Countdown) {
    for run in parked { run.token.onCancel { countdown.tick() } }
  }

  // MARK: Order

  @Test func ordered_stream_yields_outputs_in_source_order_whatever_the_finishing_order()
    async throws
  {
    let parking = Parking<Int, Int>()
    let outputs = Self.collect(
      parking.function.concurrentMap(over: ControlledSource(count: 4), limit: 4))
    await parking.waitForStarts(4)
    for run in parking.takeAll().reversed() { run.complete(.success(run.input * 10)) }
    #expect(try await outputs.value == [0, 10, 20, 30])
  }

  @Test func unordered_stream_yields_outputs_in_the_order_they_finish() async throws {
    let parking = Parking<Int, Int>()
    let outputs = Self.collect(
      parking.function.concurrentMap(over: ControlledSource(count: 4), limit: 4, ordered: false))
    await parking.waitForStarts(4)
    let parked = parking.takeAll()
    for index in [2, 0, 3, 1] { parked[index].complete(.success(parked[index].input * 10)) }
    #expect(try await outputs.value == [20, 0, 30, 10])
  }

  @Test func stream_over_a_non_throwing_source_and_an_empty_one() async throws {
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    let numbers = AsyncStream<Int> { continuation in
      for number in 1...4 { continuation.yield(number) }
      continuation.finish()
    }
    var squares: [Int] = []
    for try await squared in square.concurrentMap(over: numbers, limit: 2) {
      squares.append(squared)
    }
    #expect(squares == [1, 4, 9, 16])
    let doubled = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
      .concurrentMap(over: ArraySource([1, 2, 3]), limit: 2)
    #expect(try await Self.collect(doubled).value == [2, 4, 6])
    #expect(
      try await Self.collect(square.concurrentMap(over: ArraySource([]), limit: 3)).value == [])
  }

  @Test func stream_sequence_type_is_named_and_iterates_a_made_stream() async throws {
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    let (numbers, input) = AsyncStream.makeStream(of: Int.self)
    for number in 1...3 { input.yield(number) }
    input.finish()
    let doubled: ConcurrentMapSequence<AsyncStream<Int>, Int> =
      double.concurrentMap(over: numbers, limit: 2)
    var outputs: [Int] = []
    for try await output in doubled { outputs.append(output) }
    #expect(outputs == [2, 4, 6])
  }

  @Test func stream_pulls_nothing_before_the_first_next() async throws {
    let source = ControlledSource(count: 10)
    let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
    var iterator = square.concurrentMap(over: source, limit: 2).makeAsyncIterator()
    #expect(source.probe.pulls == 0)
    #expect(try await iterator.next() == 0)
    #expect(source.probe.pulls >= 1)
  }

  @Test func stream_yields_what_the_array_map_returns_for_any_limit_and_finishing_order()
    async throws
  {
    try await forAll("stream map agrees with array map", count: 40) { random, _ in
      let count = Int.random(in: 0...60, using: &random)
      let limit = Int.random(in: 1...8, using: &random)
      let ordered = Bool.random(using: &random)
      let queue = testQueue("law")
      let work = AsyncFunc<Int, Int> { x, complete in
        queue.async { complete(.success(x &* 3 &+ 1)) }
      }
      let expected = try await work.concurrentMap(limit: limit)(Array(0..<count))
      let outputs = try await Self.collect(
        work.concurrentMap(over: ControlledSource(count: count), limit: limit, ordered: ordered)
      ).value
      return ordered ? outputs == expected : outputs.sorted() == expected.sorted()
    }
  }

  // MARK: Backpressure

  @Test func unordered_stream_pulls_exactly_limit_elements_while_none_finishes() async throws {
    let parking = Parking<Int, Int>()
    let source = ControlledSource()
    let outputs = Self.collect(
      parking.function.concurrentMap(over: source, limit: 3, ordered: false))
    await parking.waitForStarts(3)
    #expect(parking.started == 3)
    #expect(source.probe.pulls == 3)
    outputs.cancel()
    await source.probe.iterationEnded.wait()
    #expect(source.probe.pulls == 3)
    #expect(isCancellation(await outputs.result))
  }

  @Test func ordered_stream_runs_limit_and_pulls_a_window_ahead_while_none_finishes()
    async throws
  {
    let parking = Parking<Int, Int>()
    let windowFull = Countdown(6)
    let source = ControlledSource { _ in windowFull.tick() }
    let outputs = Self.collect(parking.function.concurrentMap(over: source, limit: 3))
    await windowFull.wait()
    await parking.waitForStarts(3)
    #expect(parking.started == 3)  // The other three wait in the window for a slot.
    #expect(source.probe.pulls == 6)
    // A slot freed starts the next pulled element on the freeing thread.
    let parked = parking.takeAll()
    parked[1].complete(.success(1))
    #expect(parking.started == 4)
    outputs.cancel()
    await source.probe.iterationEnded.wait()
    #expect(source.probe.pulls == 6)
    #expect(parking.started == 4)
    #expect(isCancellation(await outputs.result))
    // Held until now: a completion released uncalled fails its element, which would end the
    // stream with that failure if it came before the cancellation.
    withExtendedLifetime(parked) {}
  }

  /// Checks at every pull that the stream has pulled at most its bound beyond the `next()`
  /// calls the consumer has made: elements finish on many threads, the consumer pauses.
  @Test(arguments: [false, true])
  func stream_never_pulls_more_than_its_bound_beyond_what_the_consumer_took(ordered: Bool)
    async throws
  {
    let limit = 3
    let bound = ordered ? 2 * limit : limit
    let calls = Atomic<Int>(0)
    let violations = Recorder<String>()
    let inFlight = InFlight()
    let queue = testQueue("backpressure")
    let source = ControlledSource(count: 300) { pulls in
      let taken = calls.load(ordering: .sequentiallyConsistent)
      if pulls > taken + bound { violations.record("pull \(pulls) after \(taken) calls") }
    }
    let work = AsyncFunc<Int, Int> { x, complete in
      inFlight.enter()
      queue.async {
        inFlight.leave()
        complete(.success(x))
      }
    }
    var iterator = work.concurrentMap(over: source, limit: limit, ordered: ordered)
      .makeAsyncIterator()
    var outputs: [Int] = []
    while true {
      calls.add(1, ordering: .sequentiallyConsistent)
      guard let output = try await iterator.next() else { break }
      outputs.append(output)
      if output % 7 == 0 { await Task.yield() }  // A pause, so outputs pile up.
    }
    #expect(violations.all == [])
    #expect(inFlight.peak <= limit)
    #expect(ordered ? outputs == Array(0..<300) : outputs.sorted() == Array(0..<300))
  }

  @Test func ordered_stream_holds_at_most_a_window_of_limit_outputs_behind_a_slow_element()
    async throws
  {
    let limit = 3
    let first = ParkedCompletion<Int>()
    let violations = Recorder<Int>()
    let windowFull = Countdown(2 * limit)
    let released = Atomic<Bool>(false)
    let source = ControlledSource(count: 50) { pulls in
      // Nothing can be yielded while element 0 runs, so nothing counts as taken.
      if !released.load(ordering: .sequentiallyConsistent) && pulls > 2 * limit {
        violations.record(pulls)
      }
      windowFull.tick()
    }
    let work = AsyncFunc<Int, Int> { x, complete in
      if x == 0 { first.park(complete) } else { complete(.success(x)) }
    }
    let outputs = Self.collect(work.concurrentMap(over: source, limit: limit))
    await windowFull.wait()
    await first.arrived.wait()
    #expect(source.probe.pulls == 2 * limit)
    released.store(true, ordering: .sequentiallyConsistent)
    first.complete(.success(0))
    #expect(try await outputs.value == Array(0..<50))
    #expect(violations.all == [])
  }

  /// `0..<count`, where every pull from `gatedFrom` on waits for `gate` to open.
  struct GatedSource: AsyncSequence, Sendable {
    let count: Int
    let gatedFrom: Int
    let gate: Gate

    func makeAsyncIterator() -> Iterator { Iterator(source: self) }

    struct Iterator: AsyncIteratorProtocol {
      let source: GatedSource
      var position = 0

      mutating func next() async -> Int? {
        guard position < source.count else { return nil }
        if position >= source.gatedFrom { await source.gate.wait() }
        defer { position += 1 }
        return position
      }
    }
  }

  @Test func ordered_stream_hands_out_a_ready_output_before_pulling_ahead_from_a_slow_source()
    async throws
  {
    let parked = ParkedCompletions<Int>()
    let work = AsyncFunc<Int, Int> { x, complete in
      if x == 1 || x == 2 { parked.park(complete) } else { complete(.success(x)) }
    }
    let slow = Gate()
    var iterator = work.concurrentMap(
      over: GatedSource(count: 5, gatedFrom: 3, gate: slow), limit: 2
    ).makeAsyncIterator()
    // 0 finishes at once, 1 and 2 run: output 0 is ready while the window has room for 3,
    // whose pull would wait for the closed source. The output comes first.
    #expect(try await iterator.next() == 0)
    slow.open()
    parked.release(0, .success(1))
    parked.release(1, .success(2))
    var rest: [Int] = []
    while let output = try await iterator.next() { rest.append(output) }
    #expect(rest == [1, 2, 3, 4])
  }

  // MARK: Tolerance

  @Test func stream_skips_failures_within_a_count_tolerance() async throws {
    let work = AsyncFunc<Int, Int>.sync(name: "work") { x in
      if x % 4 == 1 { throw TestError(x) }
      return x
    }
    let outputs = Self.collect(
      work.concurrentMap(over: ControlledSource(count: 12), limit: 3, acceptableFailure: .count(3)))
    #expect(try await outputs.value == [0, 2, 3, 4, 6, 7, 8, 10, 11])
  }

  @Test func failure_beyond_tolerance_mid_stream_cancels_running_elements_and_pulls_no_more()
    async throws
  {
    let parking = Parking<Int, Int>()
    let source = ControlledSource()
    let taken = Recorder<Int>()
    let consumer = Task {
      for try await output in parking.function.concurrentMap(
        over: source, limit: 4, ordered: false, acceptableFailure: .count(1))
      {
        taken.record(output)
      }
    }
    await parking.waitForStarts(4)
    for run in parking.takeAll() {
      run.complete(run.input == 2 ? .failure(TestError(2)) : .success(run.input))
    }
    await parking.waitForStarts(8)
    var running = parking.takeAll()  // 4, 5, 6, 7
    running.removeFirst().complete(.success(4))
    await parking.waitForStarts(9)
    running += parking.takeAll()  // 5, 6, 7, 8
    let cancelled = Countdown(3)
    Self.onCancel(Array(running.dropFirst()), tick: cancelled)
    running[0].complete(.failure(TestError(5)))

    let error = await consumer.result.failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [2, 5])
    #expect(error?.count == 9)
    await cancelled.wait()
    await source.probe.iterationEnded.wait()
    #expect(parking.started == 9)
    #expect(taken.all == [0, 1, 3, 4])
    for run in running.dropFirst() { run.complete(.failure(CancellationError())) }
  }

  @Test func ratio_tolerance_ends_a_stream_that_fails_everything_after_the_minimum()
    async throws
  {
    let source = ControlledSource()
    let fail = AsyncFunc<Int, Int>.sync(name: "fail") { throw TestError($0) }
    let outputs = Self.collect(
      fail.concurrentMap(over: source, limit: 4, acceptableFailure: .ratio(0.1)))
    let error = await outputs.result.failure as? FailureRateExceeded
    let minimum = FailureTolerance.minimumFinishedBeforeJudgingRatio
    #expect(error?.failures.map(\.index) == Array(0..<minimum))
    await source.probe.iterationEnded.wait()
  }

  @Test func ratio_tolerance_is_judged_against_the_total_when_the_source_ends() async throws {
    func run(failing: Set<Int>) async -> Result<[Int], any Error> {
      let work = AsyncFunc<Int, Int>.sync(name: "work") { x in
        if failing.contains(x) { throw TestError(x) }
        return x
      }
      return await Self.collect(
        work.concurrentMap(
          over: ControlledSource(count: 20), limit: 4, acceptableFailure: .ratio(0.1))
      ).result
    }
    // 0.1 of 20 allows 2.
    #expect(try await run(failing: [3, 7]).get().count == 18)
    let error = await run(failing: [3, 7, 11]).failure as? FailureRateExceeded
    #expect(error?.failures.map(\.index) == [3, 7, 11])
    #expect(error?.count == 20)
  }

  @Test func a_stream_that_tolerates_everything_ends_normally_however_many_fail() async throws {
    let fail = AsyncFunc<Int, Int>.sync(name: "fail") { throw TestError($0) }
    for tolerance in [FailureTolerance.unlimited, .ratio(1)] {
      let outputs = Self.collect(
        fail.concurrentMap(
          over: ControlledSource(count: 1_000), limit: 4, acceptableFailure: tolerance))
      #expect(try await outputs.value == [])
    }
  }

  @Test func ratio_zero_fails_a_stream_at_the_first_failure() async throws {
    let work = AsyncFunc<Int, Int>.sync(name: "work") { x in
      if x == 5 { throw TestError(x) }
      return x
    }
    let source = ControlledSource()
    let outputs = Self.collect(
      work.concurrentMap(over: source, limit: 2, acceptableFailure: .ratio(0)))
    #expect((await outputs.result.failure as? FailureRateExceeded)?.failures.map(\.index) == [5])
  }

  // MARK: Stopping

  @Test func breaking_out_cancels_running_elements_and_ends_the_source_iteration()
    async throws
  {
    let parking = Parking<Int, Int>()
    let source = ControlledSource()
    let consumer = Task {
      for try await output in parking.function.concurrentMap(over: source, limit: 3) {
        return output
      }
      return -1
    }
    await parking.waitForStarts(3)
    var parked = parking.takeAll()
    let cancelled = Countdown(2)
    Self.onCancel(Array(parked.dropFirst()), tick: cancelled)
    parked[0].complete(.success(0))
    #expect(try await consumer.value == 0)
    await cancelled.wait()
    await source.probe.iterationEnded.wait()
    // Taking element 0 made room for one more pull, which may have happened before the break.
    #expect(parking.started <= 4)
    parked += parking.takeAll()
    #expect(parked.dropFirst().allSatisfy { $0.token.isCancelled })
  }

  @Test func cancelling_the_consumer_cancels_running_elements_and_throws_cancellation()
    async throws
  {
    let parking = Parking<Int, Int>()
    let source = ControlledSource()
    let outputs = Self.collect(parking.function.concurrentMap(over: source, limit: 3))
    await parking.waitForStarts(3)
    let cancelled = Countdown(3)
    let parked = parking.takeAll()
    Self.onCancel(parked, tick: cancelled)
    outputs.cancel()
    #expect(isCancellation(await outputs.result))
    await cancelled.wait()
    await source.probe.iterationEnded.wait()
    #expect(parking.started == 3)
    withExtendedLifetime(parked) {}  // Released uncalled sooner, a run would fail the stream.
  }

  @Test func a_source_that_ends_because_the_consumer_was_cancelled_ends_in_cancellation()
    async throws
  {
    // An `AsyncStream` ends (returns nil) when the task waiting in it is cancelled: that is the
    // consumer giving up, not the source running out, and the stream must say so. One at a
    // time, the first output is taken before the second pull, so nothing else is left to end
    // the stream but that pull's end.
    let (elements, feed) = AsyncStream<Int>.makeStream()
    feed.yield(1)
    let waiting = Gate()
    let source = SignalsSecondPull(base: elements, waiting: waiting)
    let doubled = AsyncFunc<Int, Int>.sync { $0 * 2 }
    let outputs = Self.collect(doubled.concurrentMap(over: source, limit: 1, ordered: false))
    await waiting.wait()  // The consumer is inside the source's second `next()`, waiting.
    outputs.cancel()
    #expect(isCancellation(await outputs.result))
    feed.finish()
  }

  @Test func a_pull_reserved_with_an_output_is_not_made_once_the_stream_has_failed()
    async throws
  {
    // Taking output 0 frees a slot, so the output comes with the next pull reserved; the
    // stream fails before the consumer's next call, which must end it without pulling.
    let parking = Parking<Int, Int>()
    let source = ControlledSource()
    let tookFirst = Gate()
    let goOn = Gate()
    let consumer = Task {
      var outputs = parking.function.concurrentMap(over: source, limit: 2, ordered: false)
        .makeAsyncIterator()
      let first = try await outputs.next()
      tookFirst.open()
      await goOn.wait()
      _ = try await outputs.next()
      return first
    }
    await parking.waitForStarts(2)
    let running = parking.takeAll()
    running[0].complete(.success(0))
    await tookFirst.wait()
    running[1].complete(.failure(TestError(1)))
    goOn.open()
    let result = await consumer.result
    #expect(result.failure is FailureRateExceeded)
    #expect(source.probe.pulls == 2)
    #expect(parking.started == 2)
  }

  @Test func a_consumer_that_never_waits_still_stops_at_its_next_call_once_cancelled()
    async throws
  {
    // A synchronous function over a source that never suspends: outputs are always ready, so
    // the consumer never waits and no cancellation handler runs. Its next call must still end.
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    let outputs = double.concurrentMap(over: ArraySource(Array(0..<100)), limit: 4)
    let taken = Task {
      var taken: [Int] = []
      do {
        for try await output in outputs {
          taken.append(output)
          if taken.count == 2 { withUnsafeCurrentTask { $0?.cancel() } }
        }
      } catch is CancellationError {
        return taken
      }
      Issue.record("the stream ended without CancellationError after \(taken.count) outputs")
      return taken
    }
    #expect(try await taken.value == [0, 2])
  }

  @Test func source_error_cancels_running_elements_and_ends_the_stream_with_it() async throws {
    let parking = Parking<Int, Int>()
    let source = ControlledSource(failAt: 3)
    let outputs = Self.collect(parking.function.concurrentMap(over: source, limit: 8))
    await parking.waitForStarts(3)
    let cancelled = Countdown(3)
    let parked = parking.takeAll()
    Self.onCancel(parked, tick: cancelled)
    #expect(await outputs.result.failure as? TestError == TestError(3))
    await cancelled.wait()
    #expect(parking.started == 3)
    withExtendedLifetime(parked) {}  // Released uncalled sooner, a run would fail the stream.
  }

  @Test func element_cancellation_ends_the_stream_with_cancellation_whatever_the_tolerance()
    async throws
  {
    let parking = Parking<Int, Int>()
    let outputs = Self.collect(
      parking.function.concurrentMap(
        over: ControlledSource(), limit: 3, acceptableFailure: .unlimited))
    await parking.waitForStarts(3)
    let parked = parking.takeAll()
    let cancelled = Countdown(2)
    Self.onCancel([parked[0], parked[2]], tick: cancelled)
    parked[1].complete(.failure(CancellationError()))
    let error = await outputs.result.failure
    #expect(error is CancellationError)
    await cancelled.wait()
    withExtendedLifetime(parked) {}
  }

  // MARK: Progress

  @Test func stream_progress_is_serialized_increasing_and_done_before_the_stream_ends()
    async throws
  {
    let queue = testQueue("streamProgress")
    let work = AsyncFunc<Int, Int> { x, complete in
      queue.async { complete(x % 10 == 3 ? .failure(TestError(x)) : .success(x)) }
    }
    let reports = Recorder<BatchProgress>()
    let inside = Atomic<Bool>(false)
    let overlaps = Tally()
    let stream = work.concurrentMap(
      over: ControlledSource(count: 500), limit: 8, ordered: false, acceptableFailure: .unlimited
    ) { progress in
      if inside.exchange(true, ordering: .acquiringAndReleasing) { overlaps.add() }
      reports.record(progress)
      inside.store(false, ordering: .releasing)
    }
    var outputs = 0
    for try await _ in stream { outputs += 1 }
    let all = reports.all  // Read after the end: every report is in.
    #expect(outputs == 450)
    #expect(overlaps.value == 0)
    // Reports that piled up while the closure ran were coalesced: fewer, each newer.
    #expect(zip(all, all.dropFirst()).allSatisfy { $0.completed < $1.completed })
    #expect(all.last?.completed == 500)
    #expect(all.allSatisfy { $0.total == nil && $0.inFlight <= 8 })
    #expect(all.last?.failed == 50)
    #expect(zip(all, all.dropFirst()).allSatisfy { $0.failed <= $1.failed })
  }

  // MARK: Preconditions

  @Test func a_limit_below_one_is_a_precondition_failure_naming_the_callers_line() async throws {
    // Inside an exit test, the caller's line is the line of the macro around it.
    let line = #line + 1
    let exit = try #require(
      await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
        _ = AsyncFunc<Int, Int>.identity.concurrentMap(over: ControlledSource(count: 1), limit: 0)
      })
    let message = String(decoding: exit.standardErrorContent, as: UTF8.self)
    #expect(message.contains("concurrentMap(over:limit: 0): the limit must be at least 1"))
    #expect(message.contains("ConcurrentMapStreamTests.swift:\(line)"))
  }

  // MARK: Isolation

  /// The numbers `0..<count`, recording the actor each pull was made in (`nil` for none).
  struct IsolationRecordingSource: AsyncSequence, Sendable {
    let count: Int
    let pulls: Recorder<ObjectIdentifier?>

    func makeAsyncIterator() -> Iterator { Iterator(count: count, pulls: pulls) }

    struct Iterator: AsyncIteratorProtocol {
      let count: Int
      let pulls: Recorder<ObjectIdentifier?>
      var position = 0

      mutating func next() async -> Int? {
        pulls.record(nil)
        return advance()
      }

      mutating func next(isolation actor: isolated (any Actor)?) async -> Int? {
        pulls.record(actor.map { ObjectIdentifier($0) })
        return advance()
      }

      private mutating func advance() -> Int? {
        guard position < count else { return nil }
        defer { position += 1 }
        return position
      }
    }
  }

  actor Consumer {
    func sum(_ outputs: some AsyncSequence<Int, any Error>) async throws -> Int {
      var total = 0
      for try await output in outputs { total += output }
      return total
    }
  }

  @Test func a_loop_on_an_actor_pulls_the_source_in_that_actors_isolation() async throws {
    let pulls = Recorder<ObjectIdentifier?>()
    let double = AsyncFunc<Int, Int>.sync { $0 * 2 }
    let consumer = Consumer()
    let outputs = double.concurrentMap(
      over: IsolationRecordingSource(count: 20, pulls: pulls), limit: 3)
    #expect(try await consumer.sum(outputs) == 380)
    // Twenty elements and the end: every pull made on the consumer's actor.
    #expect(pulls.all == Array(repeating: ObjectIdentifier(consumer), count: 21))
  }
}

/// A source over `base` that opens `waiting` as its second pull begins: a test then knows the
/// consumer is inside that pull.
private struct SignalsSecondPull: AsyncSequence, Sendable {
  let base: AsyncStream<Int>
  let waiting: Gate

  func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), waiting: waiting)
  }

  struct Iterator: AsyncIteratorProtocol {
    var base: AsyncStream<Int>.Iterator
    let waiting: Gate
    var pulls = 0

    mutating func next() async -> Int? {
      pulls += 1
      if pulls == 2 { waiting.open() }
      return await base.next()
    }
  }
}
