import AsyncCombinators
import Synchronization

/// A clock that moves only when the scenario advances it, firing the timers due, so that the
/// deadline's arithmetic shows exactly, however loaded the machine.
private final class BudgetClock: TimerSchedulingClock, Sendable {
  struct Instant: InstantProtocol, CustomStringConvertible {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    var description: String { "\(offset)" }
  }

  private struct Timer {
    let id: Int
    let due: Instant
    let fire: @Sendable () -> Void
  }

  private struct State {
    var now = Instant(offset: .zero)
    var timers: [Timer] = []
    var nextID = 0
  }

  /// Takes a timer back.
  private struct Handle: Cancellable {
    let clock: BudgetClock
    let id: Int
    func cancel() { clock.state.withLock { $0.timers.removeAll { $0.id == id } } }
  }

  private let state = Mutex(State())

  var now: Instant { state.withLock { $0.now } }
  var minimumResolution: Duration { .zero }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    preconditionFailure("the scenario's operators schedule timers; nothing sleeps")
  }

  func scheduleTimer(at deadline: Instant, _ fire: @escaping @Sendable () -> Void)
    -> any Cancellable
  {
    let id = state.withLock { state in
      state.nextID += 1
      state.timers.append(Timer(id: state.nextID, due: deadline, fire: fire))
      return state.nextID
    }
    return Handle(clock: self, id: id)
  }

  /// Fires the earliest timer, moving the time to it; `false` when none is left.
  func fireNext() -> Bool {
    let next = state.withLock { state -> Timer? in
      guard
        let index = state.timers.indices.min(by: { state.timers[$0].due < state.timers[$1].due })
      else { return nil }
      let timer = state.timers.remove(at: index)
      state.now = max(state.now, timer.due)
      return timer
    }
    next?.fire()
    return next != nil
  }
}

/// A service call on `clock` that answers with `body(input)` after `milliseconds`, or fails
/// with `CancellationError` as soon as its run is cancelled.
private func service<Output: Sendable>(
  _ name: String, milliseconds: Int, on clock: BudgetClock,
  _ body: @escaping @Sendable (Int) throws -> Output
) -> AsyncFunc<Int, Output> {
  AsyncFunc(name: name) { input, token, complete in
    let once = Mutex(false)
    let claim = { @Sendable in
      once.withLock { claimed in
        defer { claimed = true }
        return !claimed
      }
    }
    let timer = clock.scheduleTimer(at: clock.now.advanced(by: .milliseconds(milliseconds))) {
      if claim() { complete(Result { try body(input) }) }
    }
    token.onCancel {
      timer.cancel()
      if claim() { complete(.failure(CancellationError())) }
    }
  }
}

extension Tour {
  /// A handler with a 300 ms budget whose retry gives up early, rather than sleep past it.
  public static let deadlines = Scenario(
    title: "a deadline that travels with the work",
    story: """
      A handler has 300 ms to answer: (load profile <> load stock.retry(3, delay: 150 ms)) \
      under timeout(300 ms), on a clock the scenario moves. The stock service fails after \
      40 ms each time. The first retry waits, but a second wait would end past the \
      deadline, so the retry gives up at once (the ⏹ row) with the service's error, instead \
      of sleeping into a TimeoutError; the failure cancels the slow profile load, whose row \
      says why.
      """
  ) {
    let clock = BudgetClock()
    let profile = service("load profile", milliseconds: 1_000, on: clock) { $0 }
    let stock = service("load stock", milliseconds: 40, on: clock) { _ -> Int in
      throw ServiceUnavailable()
    }
    let handler = (profile <> stock.retry(3, delay: .milliseconds(150), clock: clock))
      .timeout(.milliseconds(300), clock: clock)
    let timeline = Timeline(clock: clock)
    let outcome = Mutex<Result<(Int, Int), any Error>?>(nil)
    handler.run(7, observer: timeline) { result in outcome.withLock { $0 = result } }
    while outcome.withLock({ $0 }) == nil, clock.fireNext() {}
    let result: String
    switch outcome.withLock({ $0 }) {
    case .success(let value)?: result = "success(\(value))"
    case .failure(let error)?: result = "failure(\(error))"
    case nil: result = "running"
    }
    // The timeline's own account of why: the retry given up, and the cause of the cancel.
    var log = timeline.marks.compactMap { mark -> String? in
      guard mark.kind.event == .retryGaveUpAtDeadline, let attempt = mark.kind.attempt,
        let wait = mark.kind.wait
      else { return nil }
      return "at \(mark.time) the retry gave up after attempt \(attempt): a wait of \(wait) "
        + "would pass the deadline"
    }
    log += timeline.spans.compactMap { span in
      span.cancellationCause.map { "\(span.name) cancelled: \($0)" }
    }
    return [
      Traced(
        label: "handler", structure: "\(handler)", result: result, timeline: timeline, log: log,
        expectations: [
          .failed("load stock"), .cancelled("load profile"),
          .logged([
            "at 0.23 seconds the retry gave up after attempt 2: a wait of 0.15 seconds would "
              + "pass the deadline",
            "load profile cancelled: ServiceUnavailable",
          ]),
        ])
    ]
  }
}
