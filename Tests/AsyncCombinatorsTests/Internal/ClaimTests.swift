import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The claim primitive: first one wins, and "register, then keep if live, else take back",
/// raced by many threads. Run under ThreadSanitizer too (`--filter Claim`).
@Suite struct ClaimTests {
  /// A claim held as a class's `let`, as the library holds one.
  private final class Owner: Sendable {
    let claim = Claim()
  }

  /// A handle that counts how many times it is taken back.
  private struct CountedHandle: Revocable {
    let revokes: Tally
    func revoke() { revokes.add() }
  }

  private final class TestKeeper<Handle: Revocable>: Keeper<Handle>, @unchecked Sendable {}

  @Test func many_threads_racing_to_claim_exactly_one_wins_and_every_loser_sees_it_lost() {
    let threads = 8
    for _ in 0..<300 {
      let owner = Owner()
      let winners = Tally()
      let losersSeeingItClaimed = Tally()
      DispatchQueue.concurrentPerform(iterations: threads) { _ in
        if owner.claim.claim() {
          winners.add()
        } else if owner.claim.isClaimed {
          losersSeeingItClaimed.add()
        }
      }
      #expect(winners.value == 1)
      #expect(losersSeeingItClaimed.value == threads - 1)
      let again = owner.claim.claim()
      #expect(!again)
    }
  }

  @Test func a_keeper_hands_what_it_kept_to_its_first_end_only() throws {
    let revokes = Tally()
    let keeper = TestKeeper<CountedHandle>()
    #expect(keeper.keep(CountedHandle(revokes: revokes)))
    #expect(!keeper.hasEnded)
    let first = try #require(keeper.end())
    #expect(first != nil)
    #expect(keeper.hasEnded)
    #expect(keeper.end() == nil)
    #expect(!keeper.endAndRevoke())
    #expect(revokes.value == 0)  // The first end got it, to use or take back.
  }

  @Test func a_handle_kept_after_the_end_is_taken_back_at_once() throws {
    let revokes = Tally()
    let keeper = TestKeeper<CountedHandle>()
    let first = try #require(keeper.end())
    #expect(first == nil)  // Nothing kept yet.
    #expect(!keeper.keep(CountedHandle(revokes: revokes)))
    #expect(revokes.value == 1)
  }

  @Test func keep_racing_many_ends_takes_the_handle_back_exactly_once_and_one_end_wins() {
    for _ in 0..<2_000 {
      let revokes = Tally()
      let wins = Tally()
      let keeper = TestKeeper<CountedHandle>()
      DispatchQueue.concurrentPerform(iterations: 4) { job in
        if job == 0 {
          keeper.keep(CountedHandle(revokes: revokes))
        } else if keeper.endAndRevoke() {
          wins.add()
        }
      }
      #expect(wins.value == 1)
      #expect(revokes.value == 1)  // Never both, never neither.
    }
  }

  @Test func a_registration_racing_its_work_ending_and_a_cancel_never_leaks_nor_runs_twice() {
    let rounds = 2_000
    let tokens = (0..<rounds).map { _ in CancellationToken() }
    let handlerRuns = (0..<rounds).map { _ in Tally() }
    for round in 0..<rounds {
      let token = tokens[round]
      let keeper = TestKeeper<CancellationToken.Registration>()
      DispatchQueue.concurrentPerform(iterations: 3) { job in
        switch job {
        case 0: keeper.keep(token.onCancel { handlerRuns[round].add() })
        case 1: keeper.endAndRevoke()
        default: if round % 2 == 0 { token.cancel() }
        }
      }
      #expect(handlerRuns[round].value <= 1)
      #expect(round % 2 == 0 || handlerRuns[round].value == 0)
    }
    // Every registration was either taken back or run: none is left on its token.
    #expect(tokens.allSatisfy { $0.registrationCount == 0 })
  }

  @Test func keep_or_revoke_takes_back_what_its_owner_declines() {
    let revokes = Tally()
    #expect(keepOrRevoke(CountedHandle(revokes: revokes)) { _ in true })
    #expect(revokes.value == 0)
    #expect(!keepOrRevoke(CountedHandle(revokes: revokes)) { _ in false })
    #expect(revokes.value == 1)
  }
}

/// The token's tagged atomic word: one object stored however many threads race to store it,
/// flags kept alongside, and the object released with the word. Run under ThreadSanitizer too.
@Suite struct TaggedReferenceTests {
  private final class Object: Sendable {
    let made: Int
    let freed: Tally
    init(_ made: Int, freed: Tally) {
      self.made = made
      self.freed = freed
    }
    deinit { freed.add() }
  }

  private final class Holder: Sendable {
    let word = AtomicTaggedReference<Object>()
  }

  @Test func threads_racing_to_store_the_object_all_get_the_one_stored_and_keep_the_flags() {
    let threads = 6
    for _ in 0..<300 {
      let freed = Tally()
      let made = Tally()
      do {
        let holder = Holder()
        let seen = Locked([Int](repeating: -1, count: threads))
        DispatchQueue.concurrentPerform(iterations: threads) { job in
          if job == 0 { holder.word.setFlags(1) }
          let object = holder.word.objectStoringOne(
            while: { _ in true },
            making: { _ in
              made.add()
              return Object(job, freed: freed)
            })
          seen.withLock { $0[job] = object?.made ?? -2 }
        }
        let stored = holder.word.loadObject()!.made
        #expect(seen.withLock { $0.allSatisfy { $0 == stored } })
        #expect(holder.word.load().flags == 1)
        #expect(holder.word.load().hasObject)
        // Every object made but not stored is let go at once; the stored one with the word.
        #expect(freed.value == made.value - 1)
      }
      #expect(freed.value == made.value)
    }
  }

  @Test func no_object_is_stored_once_its_condition_fails() {
    let freed = Tally()
    let holder = Holder()
    holder.word.setFlags(2)
    let object = holder.word.objectStoringOne(
      while: { $0.flags & 2 == 0 }, making: { _ in Object(0, freed: freed) })
    #expect(object == nil)
    #expect(!holder.word.load().hasObject)
    #expect(freed.value == 0)
  }

  @Test func an_unowned_reference_reads_its_object_while_another_holds_it() {
    let freed = Tally()
    let object = Object(7, freed: freed)
    let reference = UnownedReference(object)
    DispatchQueue.concurrentPerform(iterations: 4) { _ in
      #expect(reference.object.made == 7)
    }
    withExtendedLifetime(object) {}
  }
}
