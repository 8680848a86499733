import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct ResultCacheTests {
  @Test func prime_value_forget_and_count() {
    let cache = ResultCache<String, Int>()
    #expect(cache.count == 0)
    #expect(cache.value(for: "a") == nil)
    cache.prime("a", with: 1)
    cache.prime("b", with: 2)
    #expect(cache.value(for: "a") == 1)
    #expect(cache.count == 2)
    cache.prime("a", with: 10)
    #expect(cache.value(for: "a") == 10)
    #expect(cache.count == 2)
    cache.forget("a")
    #expect(cache.value(for: "a") == nil)
    #expect(cache.count == 1)
    cache.forget("missing")
    #expect(cache.count == 1)
    cache.forgetAll()
    #expect(cache.count == 0)
    #expect(cache.value(for: "b") == nil)
  }

  @Test func reading_a_value_makes_it_the_most_recently_used() {
    let cache = ResultCache<Int, Int>(capacity: 3)
    for key in 1...3 { cache.prime(key, with: key) }
    #expect(cache.value(for: 1) == 1)
    cache.prime(4, with: 4)  // evicts 2, the least recently used
    #expect(cache.count == 3)
    #expect(cache.value(for: 2) == nil)
    #expect(cache.value(for: 1) == 1)
    #expect(cache.value(for: 3) == 3)
    #expect(cache.value(for: 4) == 4)
  }

  @Test func capacity_holds_under_many_stores_and_reuses_slots() {
    let cache = ResultCache<Int, Int>(capacity: 10)
    for key in 0..<1_000 { cache.prime(key, with: key) }
    #expect(cache.count == 10)
    #expect((990..<1_000).allSatisfy { cache.value(for: $0) == $0 })
    #expect(cache.value(for: 989) == nil)
  }

  @Test func capacity_zero_keeps_nothing() {
    let cache = ResultCache<Int, Int>(capacity: 0)
    cache.prime(1, with: 1)
    #expect(cache.count == 0)
    #expect(cache.value(for: 1) == nil)
  }

  @Test func count_drops_expired_entries_at_their_instant() {
    let clock = TestClock()
    let cache = ResultCache<Int, Int>(lifetime: .seconds(2), clock: clock)
    cache.prime(1, with: 1)
    clock.advance(by: .seconds(1))
    cache.prime(2, with: 2)
    #expect(cache.count == 2)
    clock.advance(by: .seconds(1))
    #expect(cache.count == 1)
    #expect(cache.value(for: 2) == 2)
    clock.advance(by: .seconds(1))
    #expect(cache.count == 0)
  }

  @Test func priming_again_restarts_the_lifetime() {
    let clock = TestClock()
    let cache = ResultCache<Int, Int>(lifetime: .seconds(2), clock: clock)
    cache.prime(1, with: 1)
    clock.advance(by: .seconds(1))
    cache.prime(1, with: 11)
    clock.advance(by: .seconds(1))
    #expect(cache.value(for: 1) == 11)
    clock.advance(by: .seconds(1))
    #expect(cache.value(for: 1) == nil)
  }

  @Test func an_expired_entry_never_pushes_out_a_live_one() {
    // Issue 40, item 4: the expired entry counted toward the capacity, and the live one went.
    let clock = TestClock()
    let cache = ResultCache<Int, Int>(lifetime: .seconds(10), capacity: 2, clock: clock)
    cache.prime(1, with: 1)
    clock.advance(by: .seconds(5))
    cache.prime(2, with: 2)
    #expect(cache.value(for: 1) == 1)  // 2 is now the least recently used
    clock.advance(by: .seconds(5))  // 1 expires
    cache.prime(3, with: 3)
    #expect(cache.value(for: 2) == 2)
    #expect(cache.value(for: 3) == 3)
    #expect(cache.value(for: 1) == nil)
    #expect(cache.count == 2)
  }

  @Test func expired_values_are_let_go_without_a_lookup_of_their_key() {
    // Issue 40, item 4: 100 of 100 expired values stayed alive until their own key was read.
    final class Box: Sendable {}
    struct Weak: Sendable { weak var box: Box? }
    let clock = TestClock()
    let cache = ResultCache<Int, Box>(lifetime: .seconds(1), clock: clock)
    var weak: [Weak] = []
    for key in 0..<100 {
      let box = Box()
      weak.append(Weak(box: box))
      cache.prime(key, with: box)
    }
    #expect(weak.allSatisfy { $0.box != nil })
    clock.advance(by: .seconds(1))
    #expect(cache.value(for: -1) == nil)  // any use of the cache, for another key
    #expect(weak.allSatisfy { $0.box == nil })
    for key in 0..<2 { cache.prime(key, with: Box()) }
    weak = [Weak(box: cache.value(for: 0)), Weak(box: cache.value(for: 1))]
    clock.advance(by: .seconds(1))
    cache.forget(-1)  // forgetting another key lets them go too
    #expect(weak.allSatisfy { $0.box == nil })
  }

  @Test func a_cache_with_a_lifetime_and_ever_new_keys_stays_bounded() {
    let clock = TestClock()
    let cache = ResultCache<Int, Int>(lifetime: .seconds(1), clock: clock)
    for key in 0..<1_000 {
      cache.prime(key, with: key)
      clock.advance(by: .milliseconds(100))
    }
    // Only what was stored in the second before the last store is held, though no key was
    // read and `count` (which drops the expired too) was never asked.
    let held = cache.table.stripes[0].state.withLock { $0.entries!.count }
    #expect(held == 10)
    #expect(cache.value(for: 990) == nil)  // stored a second ago
    #expect((991..<1_000).allSatisfy { cache.value(for: $0) == $0 })
  }

  @Test func priming_a_kept_key_again_moves_its_expiry_behind_the_others() {
    let clock = TestClock()
    let cache = ResultCache<Int, Int>(lifetime: .seconds(3), capacity: 2, clock: clock)
    cache.prime(1, with: 1)
    clock.advance(by: .seconds(1))
    cache.prime(2, with: 2)
    clock.advance(by: .seconds(1))
    cache.prime(1, with: 11)  // 1 now expires at 5 s, after 2 at 4 s
    clock.advance(by: .seconds(2))
    #expect(cache.count == 1)
    #expect(cache.value(for: 1) == 11)
    cache.prime(3, with: 3)
    cache.prime(4, with: 4)  // evicts 1, the least recently used of the live
    #expect(cache.value(for: 1) == nil)
    #expect(cache.count == 2)
    cache.forgetAll()
    cache.prime(5, with: 5)
    clock.advance(by: .seconds(3))
    #expect(cache.count == 0)  // the lifetime outlives `forgetAll`
  }

  @Test func description_names_the_cache_and_its_settings() {
    let users = ResultCache<Int, String>(
      name: "users", lifetime: .seconds(60), capacity: 100, cachingFailures: true)
    users.prime(1, with: "ada")
    #expect(
      "\(users)"
        == "users: ResultCache(1 entry, capacity: 100, lifetime: 60.0 seconds, cachingFailures: true)"
    )
    #expect("\(ResultCache<Int, String>())" == "ResultCache(0 entries)")
  }
}
