import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinators

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

/// A deadline is the time read once, plus the duration, saturating at the distant future.
@Suite struct OneShotTimerDeadlineTests {
  @Test func a_deadline_is_now_plus_the_duration() {
    let before = DispatchTime.now().uptimeNanoseconds
    let due = OneShotTimer.deadline(afterNanoseconds: 5_000_000).uptimeNanoseconds
    let after = DispatchTime.now().uptimeNanoseconds
    #expect(due >= before + 5_000_000)
    #expect(due <= after + 5_000_000)
  }

  @Test func a_negative_duration_is_now() {
    let before = DispatchTime.now().uptimeNanoseconds
    let due = OneShotTimer.deadline(afterNanoseconds: -1_000).uptimeNanoseconds
    #expect(due >= before)
    #expect(due <= DispatchTime.now().uptimeNanoseconds)
  }

  @Test func a_duration_too_long_to_count_is_the_distant_future() {
    #expect(OneShotTimer.deadline(afterNanoseconds: nil) == .distantFuture)
    // Far beyond any uptime: no earlier than a century from now, however Dispatch keeps it.
    let century: UInt64 = 100 * 365 * 24 * 3600 * 1_000_000_000
    let far = OneShotTimer.deadline(afterNanoseconds: .max).uptimeNanoseconds
    #expect(far >= DispatchTime.now().uptimeNanoseconds + century)
  }
}
