import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct CancellationTokenTests {
  @Test func a_handler_removed_while_cancel_runs_others_never_runs() async {
    // A request that calls back while `cancel()` is busy with an earlier handler takes its
    // registration off: a finished request is not cancelled.
    let token = CancellationToken()
    let inFirst = Gate()
    let release = Gate()
    let ran = Recorder<String>()
    token.onCancel {
      inFirst.open()
      release.blockingWait()
      ran.record("first")
    }
    let request = token.onCancel { ran.record("finished request cancelled") }
    let cancelled = Countdown(1)
    blockingLane("canceller").async {
      token.cancel()
      cancelled.tick()
    }
    await inFirst.wait()
    request.remove()  // The request called back.
    release.open()
    await cancelled.wait()
    #expect(ran.all == ["first"])
  }

  /// Registers `count` handlers, removes them in `order`, and checks that no handler ran and
  /// every removal examined its own entry only.
  private func registerAndRemove(_ count: Int, order: (inout [Int]) -> Void) {
    let token = CancellationToken()
    let ran = Tally()
    var registrations = (0..<count).map { _ in token.onCancel { ran.add() } }
    var indices = Array(registrations.indices)
    order(&indices)
    for index in indices { registrations[index].remove() }
    registrations.removeAll()
    #expect(token.registrationCount == 0)
    #expect(token.entriesExaminedByRemovals == count)
    token.cancel()
    #expect(ran.value == 0)
  }

  @Test func a_million_registrations_come_off_in_registration_order_one_entry_each() {
    registerAndRemove(1_000_000) { _ in }
  }

  @Test func a_million_registrations_come_off_in_reverse_order_one_entry_each() {
    registerAndRemove(1_000_000) { $0.reverse() }
  }

  @Test func a_million_registrations_come_off_in_random_order_one_entry_each() {
    let seed = UInt64.random(in: 1...UInt64.max)
    print("shuffle seed \(seed)")
    var generator = SplitMix64(seed: seed)
    registerAndRemove(1_000_000) { $0.shuffle(using: &generator) }
  }

  @Test func a_stale_registration_never_removes_the_handler_that_reused_its_entry() {
    let token = CancellationToken()
    let ran = Tally()
    let first = token.onCancel {}
    first.remove()
    _ = token.onCancel { ran.add() }  // Reuses the freed entry.
    first.remove()
    token.cancel()
    #expect(ran.value == 1)
  }

  @Test func a_stale_registration_misses_its_entry_after_the_slab_was_let_go() {
    // Once every one of more than 64 handlers is removed the slab starts over from entry 0: a
    // registration from before must still not match the handler that now sits in its entry.
    let token = CancellationToken()
    let ran = Tally()
    let old = (0..<100).map { _ in token.onCancel {} }
    for registration in old { registration.remove() }
    _ = token.onCancel { ran.add() }  // Entry 0 of the new slab.
    old[0].remove()
    #expect(token.registrationCount == 1)
    token.cancel()
    #expect(ran.value == 1)
  }

  @Test func a_child_detached_before_its_first_handler_never_links_to_its_parent() {
    let parent = CancellationToken()
    let (child, link) = parent.makeChild()
    link.remove()  // Its work is done before anything registered on it.
    let ran = Tally()
    child.onCancel { ran.add() }
    #expect(parent.registrationCount == 0)
    child.cancel()  // Its own cancellation still runs its handlers.
    #expect(ran.value == 1)
  }

  @Test func a_token_that_never_had_a_handler_runs_one_registered_after_its_cancel_at_once() {
    let token = CancellationToken()
    token.cancel()
    let ran = Tally()
    let registration = token.onCancel { ran.add() }
    #expect(ran.value == 1)
    registration.remove()  // A no-op: nothing is registered.
    #expect(token.registrationCount == 0)
  }

  @Test func a_first_handler_racing_the_cancel_runs_exactly_once() {
    // The first `onCancel` makes the token's handler table while `cancel` may be taking it:
    // whichever wins, the handler runs once, never zero times or twice.
    for _ in 0..<2_000 {
      let token = CancellationToken()
      let ran = Tally()
      DispatchQueue.concurrentPerform(iterations: 2) { side in
        if side == 0 { token.onCancel { ran.add() } } else { token.cancel() }
      }
      #expect(ran.value == 1)
    }
  }

  @Test func a_first_handler_racing_the_detach_leaves_the_parent_holding_nothing() {
    // A child's first handler links it to its parent while its work's end may be detaching it:
    // either way the parent keeps no registration for it.
    let parent = CancellationToken()
    for _ in 0..<2_000 {
      let (child, link) = parent.makeChild()
      DispatchQueue.concurrentPerform(iterations: 2) { side in
        if side == 0 { child.onCancel {} } else { link.remove() }
      }
    }
    #expect(parent.registrationCount == 0)
  }

  @Test func removing_some_keeps_the_others_and_cancel_runs_each_once() {
    let token = CancellationToken()
    let ran = Locked<[Int]>([])
    let registrations = (0..<10).map { index in token.onCancel { ran.withLock { $0.append(index) } }
    }
    for index in stride(from: 0, to: 10, by: 2) { registrations[index].remove() }
    token.cancel()
    token.cancel()
    #expect(ran.withLock { $0.sorted() } == [1, 3, 5, 7, 9])
  }

  @Test func a_child_is_cancelled_from_the_moment_its_parents_cancel_begins() {
    let parent = CancellationToken()
    let seenByFirstHandler = Locked<Bool?>(nil)
    // Registered before the child exists, so it runs before anything that links the child.
    let (child, _) = parent.makeChild()
    parent.onCancel { seenByFirstHandler.withLock { $0 = child.isCancelled } }
    let childHandlerRan = Tally()
    child.onCancel { childHandlerRan.add() }
    parent.cancel()
    #expect(seenByFirstHandler.withLock { $0 } == true)
    #expect(childHandlerRan.value == 1)
  }

  @Test func a_child_without_handlers_costs_its_parent_no_registration() {
    let parent = CancellationToken()
    let children = (0..<100).map { _ in parent.makeChild() }
    #expect(parent.registrationCount == 0)
    children[0].child.onCancel {}
    #expect(parent.registrationCount == 1)
    children[0].link.remove()
    #expect(parent.registrationCount == 0)
  }

  @Test func a_child_cancelled_on_its_own_leaves_its_parent_running_and_unlinked() {
    let parent = CancellationToken()
    let (child, _) = parent.makeChild()
    child.onCancel {}
    #expect(parent.registrationCount == 1)
    child.cancel()
    #expect(child.isCancelled)
    #expect(!parent.isCancelled)
    #expect(parent.registrationCount == 0)
  }

  @Test func a_token_nested_deep_sees_any_ancestors_cancellation_and_no_descendants() {
    // `isCancelled` walks up the chain: every level of it must be read.
    let root = CancellationToken()
    var chain = [root]
    for _ in 0..<4 { chain.append(chain.last!.makeChild().child) }
    #expect(!chain.contains { $0.isCancelled })
    chain[2].cancel()
    #expect(chain.map { $0.isCancelled } == [false, false, true, true, true])
    root.cancel()
    #expect(chain.allSatisfy { $0.isCancelled })
  }

  @Test func describes_itself_as_active_until_it_or_its_parent_is_cancelled() {
    let parent = CancellationToken()
    let (child, _) = parent.makeChild()
    #expect("\(child)" == "CancellationToken(active)")
    parent.cancel()
    #expect("\(parent)" == "CancellationToken(cancelled)")
    #expect("\(child)" == "CancellationToken(cancelled)")
  }

  @Test func a_handler_added_to_a_child_of_a_cancelled_parent_runs_at_once() {
    let parent = CancellationToken()
    let (child, _) = parent.makeChild()
    parent.cancel()
    let ran = Tally()
    child.onCancel { ran.add() }
    #expect(ran.value == 1)
  }

  @Test func registrations_and_removals_racing_a_cancel_run_each_handler_at_most_once() async {
    for _ in 0..<200 {
      let token = CancellationToken()
      let ran = Tally()
      let registered = Tally()
      let done = Countdown(5)
      for _ in 0..<4 {
        DispatchQueue.global().async {
          for index in 0..<50 {
            let registration = token.onCancel { ran.add() }
            registered.add()
            if index.isMultiple(of: 2) { registration.remove() }
          }
          done.tick()
        }
      }
      DispatchQueue.global().async {
        token.cancel()  // Returns once every handler taken has run.
        done.tick()
      }
      await done.wait()
      // Every handler kept ran once (at the cancel, or at once if registered after it); a
      // removed one ran at most once, before its removal.
      #expect(ran.value >= 100 && ran.value <= 200)
      #expect(registered.value == 200)
    }
  }
}
