import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The default clock's timers share one Dispatch source: each fires once unless cancelled,
/// and a cancelled one holds nothing.
@Suite struct SharedTimersTests {
  @Test func every_timer_fires_once_and_no_cancelled_one_fires() async {
    let fired = Locked<[Int: Int]>([:])
    let remaining = Countdown(500)
    var cancelled: [SharedTimers.Timer] = []
    for index in 0..<1000 {
      let deadline = DispatchTime.now() + .microseconds((index * 37) % 20_000)
      let timer = SharedTimers.shared.schedule(at: deadline) {
        fired.withLock { $0[index, default: 0] += 1 }
        if index.isMultiple(of: 2) { remaining.tick() }
      }
      if !index.isMultiple(of: 2) { cancelled.append(timer) }
    }
    for timer in cancelled { timer.cancel() }
    await remaining.wait()
    let counts = fired.withLock { $0 }
    #expect(counts.values.allSatisfy { $0 == 1 })
    // An odd timer may have fired before its cancel came; none fired after.
    #expect((0..<1000).filter { $0.isMultiple(of: 2) }.allSatisfy { counts[$0] == 1 })
  }

  @Test func a_cancelled_timer_releases_its_closure_at_once() {
    final class Sentinel: Sendable {}
    weak var watched: Sentinel?
    let timer: SharedTimers.Timer
    do {
      let sentinel = Sentinel()
      watched = sentinel
      timer = SharedTimers.shared.schedule(at: .now() + .seconds(3600)) { _ = sentinel }
    }
    #expect(watched != nil)  // Held while the hour-long timer is pending...
    timer.cancel()
    #expect(watched == nil)  // ...and not a moment after it is cancelled.
  }
}

/// A deadline beyond what Dispatch can represent never comes: it arms nothing, and only the
/// token's cancellation ends the wait.
@Suite struct TimerDeadlineTests {
  @Test(arguments: [
    Duration.seconds(Int64.max), .nanoseconds(Int64.max), .seconds(300 * 365 * 86_400),
  ])
  func a_deadline_past_the_end_of_time_arms_no_timer(_ wait: Duration) {
    let before = SharedTimers.shared.pendingCount(dueAfter: .now() + .seconds(100 * 365 * 86_400))
    let token = CancellationToken()
    let outcome = Locked<Bool?>(nil)
    TimerClock.continuous.after(wait, token) { expired in outcome.withLock { $0 = expired } }
    #expect(
      SharedTimers.shared.pendingCount(dueAfter: .now() + .seconds(100 * 365 * 86_400)) == before)
    #expect(outcome.withLock { $0 } == nil)
    token.cancel()
    #expect(outcome.withLock { $0 } == false)
    #expect(token.registrationCount == 0)
  }

  @Test func a_cancelled_wait_reports_once_and_takes_its_timer_back() {
    let far = DispatchTime.now() + .seconds(6 * 3600)
    let token = CancellationToken()
    let calls = Locked<[Bool]>([])
    TimerClock.continuous.after(.seconds(7 * 3600), token) { expired in
      calls.withLock { $0.append(expired) }
    }
    #expect(SharedTimers.shared.pendingCount(dueAfter: far) >= 1)
    token.cancel()
    token.cancel()
    #expect(calls.withLock { $0 } == [false])
  }
}
