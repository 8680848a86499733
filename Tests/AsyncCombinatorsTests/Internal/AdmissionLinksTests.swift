import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsKernel

/// The admission queue's links are counted references, so a waiter is let go only once nothing
/// of the gate's links to it: these check that every way out of the queue unlinks it.
@Suite struct AdmissionLinksTests {
  private typealias Waiter = LimitTests.TestWaiter

  private final class WeakWaiter {
    weak var waiter: Waiter?
    init(_ waiter: Waiter) { self.waiter = waiter }
  }

  @Test func a_waiter_leaving_from_the_head_the_middle_or_the_end_is_let_go_at_once() {
    let gate = Admission<Waiter>(capacity: 1)
    let started = Recorder<Int>()
    gate.enter(Waiter(on: CancellationToken()) {}, input: ())  // Holds the only slot.
    // Nine waiters, each on its own token but three on a shared one, so that the lane and the
    // watch both have neighbours on either side of most waiters.
    let shared = CancellationToken()
    var tokens: [CancellationToken] = []
    var watched: [WeakWaiter] = []
    for index in 0..<9 {
      let token = [1, 4, 7].contains(index) ? shared : CancellationToken()
      let waiter = Waiter(on: token) { started.record(index) }
      tokens.append(token)
      watched.append(WeakWaiter(waiter))
      gate.enter(waiter, input: ())
    }
    func alive() -> [Int] { watched.indices.filter { watched[$0].waiter != nil } }
    #expect(alive() == Array(0..<9))
    tokens[8].cancel()  // The end of the lane.
    #expect(alive() == [0, 1, 2, 3, 4, 5, 6, 7])
    tokens[5].cancel()  // The middle.
    #expect(alive() == [0, 1, 2, 3, 4, 6, 7])
    tokens[0].cancel()  // The head.
    #expect(alive() == [1, 2, 3, 4, 6, 7])
    tokens[4].cancel()  // The shared token: the head, middle and end of its watch.
    #expect(alive() == [2, 3, 6])
    for expected in [[3, 6], [6], []] {
      gate.leave()  // The head is admitted and let go.
      #expect(alive() == expected)
    }
    #expect(started.all == [2, 3, 6])
    #expect(gate.queuedEntries == 0)
  }

  @Test func a_waiter_evicted_by_a_higher_priority_is_let_go_at_once() {
    let gate = Admission<Waiter>(capacity: 1, queue: .count(2))
    gate.enter(Waiter(on: CancellationToken()) {}, input: ())
    var watched: [WeakWaiter] = []
    let rejected = Recorder<Int>()
    for index in 0..<3 {
      let waiter = Waiter(
        on: CancellationToken(), rejected: { _ in rejected.record(index) }, admitted: {})
      watched.append(WeakWaiter(waiter))
      gate.enter(waiter, input: (), priority: index == 2 ? 1 : 0)
    }
    // The third, of a higher priority, took the place of the newest of the lowest.
    #expect(rejected.all == [1])
    #expect(watched.map { $0.waiter != nil } == [true, false, true])
  }

  @Test func a_waiter_that_waited_too_long_is_let_go_at_once() {
    let clock = TestClock()
    let gate = Admission<Waiter>(
      capacity: 1, queue: .wait(.seconds(1)), clock: AdmissionClock(clock))
    gate.enter(Waiter(on: CancellationToken()) {}, input: ())
    let rejected = Recorder<Int>()
    var watched: [WeakWaiter] = []
    for index in 0..<3 {
      let waiter = Waiter(
        on: CancellationToken(), rejected: { _ in rejected.record(index) }, admitted: {})
      watched.append(WeakWaiter(waiter))
      gate.enter(waiter, input: ())
      clock.advance(by: .milliseconds(400))
    }
    // The first has waited 1.2 s, the second 0.8 s.
    #expect(rejected.all == [0])
    #expect(watched.map { $0.waiter != nil } == [false, true, true])
    clock.advance(by: .milliseconds(800))
    #expect(rejected.all == [0, 1, 2])
    #expect(watched.allSatisfy { $0.waiter == nil })
    #expect(gate.queuedEntries == 0)
  }
}
