import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct MemoizedTests {
  /// A function that counts its calls and returns `"user<id>"`.
  private func counting(_ calls: Tally) -> AsyncFunc<Int, String> {
    AsyncFunc<Int, String>.sync(name: "user") { id in
      calls.add()
      return "user\(id)"
    }
  }

  @Test func a_success_is_kept_and_the_next_run_makes_no_call() async throws {
    let calls = Tally()
    let users = ResultCache<Int, String>()
    let user = counting(calls).memoized(in: users)
    #expect(try await user(1) == "user1")
    #expect(try await user(1) == "user1")
    #expect(calls.value == 1)
    #expect(users.value(for: 1) == "user1")
    #expect(users.count == 1)
  }

  @Test func a_failure_is_not_kept_by_default() async {
    let calls = Tally()
    let users = ResultCache<Int, String>()
    let user = AsyncFunc<Int, String>.sync { _ in
      calls.add()
      throw TestError(1)
    }.memoized(in: users)
    #expect(await runToCompletion(user, 1).failure as? TestError == TestError(1))
    #expect(await runToCompletion(user, 1).failure as? TestError == TestError(1))
    #expect(calls.value == 2)
    #expect(users.count == 0)
  }

  @Test func a_failure_is_kept_with_cachingFailures() async {
    let calls = Tally()
    let users = ResultCache<Int, String>(cachingFailures: true)
    let user = AsyncFunc<Int, String>.sync { _ in
      calls.add()
      throw TestError(1)
    }.memoized(in: users)
    #expect(await runToCompletion(user, 1).failure as? TestError == TestError(1))
    #expect(await runToCompletion(user, 1).failure as? TestError == TestError(1))
    #expect(calls.value == 1)
    #expect(users.count == 1)
    #expect(users.value(for: 1) == nil)
  }

  @Test func a_cancelled_call_is_never_kept_even_with_cachingFailures() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>(cachingFailures: true)
    let user = parking.function.memoized(in: users)
    user.run(1) { _ in }.cancel()
    await parking.waitForStarts(1)
    let cancelled = parking.takeAll()[0]
    #expect(cancelled.token.isCancelled)
    cancelled.complete(.success("too late"))
    #expect(users.count == 0)
    user.run(2) { _ in }.cancel()
    await parking.waitForStarts(2)
    parking.takeAll()[0].complete(.failure(CancellationError()))
    #expect(users.count == 0)
    // The next run calls again.
    user.run(1) { _ in }
    #expect(parking.started == 3)
    parking.takeAll()[0].complete(.success("user1"))
    #expect(users.value(for: 1) == "user1")
  }

  @Test func a_function_failing_with_cancellation_is_not_kept() async {
    let users = ResultCache<Int, String>(cachingFailures: true)
    let user = AsyncFunc<Int, String>.sync { _ in throw CancellationError() }.memoized(in: users)
    #expect(isCancellation(await runToCompletion(user, 1)))
    #expect(users.count == 0)
  }

  @Test func runs_of_a_key_not_kept_share_one_call() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    let (results, finished) = startRuns(user, 1, count: 5)
    await parking.waitForStarts(1)
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success("user1"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == Array(repeating: "user1", count: 5))
  }

  @Test func one_joined_runs_cancellation_ends_it_alone_and_the_result_is_kept() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    let other = Gate()
    let first = user.run(1) { _ in }
    user.run(1) { _ in other.open() }
    await parking.waitForStarts(1)
    let call = parking.takeAll()[0]
    first.cancel()
    #expect(!call.token.isCancelled)
    call.complete(.success("user1"))
    await other.wait()
    #expect(users.value(for: 1) == "user1")
  }

  @Test func the_call_is_cancelled_only_when_every_joined_run_is() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    let tokens = (0..<3).map { _ in user.run(1) { _ in } }
    await parking.waitForStarts(1)
    let call = parking.takeAll()[0]
    tokens[0].cancel()
    tokens[1].cancel()
    #expect(call.token.isCancelled == false)
    tokens[2].cancel()
    #expect(call.token.isCancelled == true)
    call.complete(.success("user1"))
    #expect(users.value(for: 1) == nil)  // A cancelled call's result is not kept.
  }

  @Test func a_run_after_the_call_was_cancelled_waits_for_it_and_never_overlaps_it() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    user.run(1) { _ in }.cancel()
    await parking.waitForStarts(1)
    let cancelled = parking.takeAll()[0]
    let (results, finished) = startRuns(user, 1, count: 2)
    #expect(parking.started == 1)  // Waiting for the cancelled call, not beside it.
    cancelled.complete(.failure(CancellationError()))
    await parking.waitForStarts(2)
    let fresh = parking.takeAll()
    #expect(fresh.count == 1)
    fresh[0].complete(.success("user1"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == ["user1", "user1"])
    #expect(users.value(for: 1) == "user1")
  }

  @Test func an_entry_expires_at_its_lifetime_exactly_on_the_caches_clock() async throws {
    let clock = TestClock()
    let calls = Tally()
    let users = ResultCache<Int, String>(lifetime: .seconds(10), clock: clock)
    let user = counting(calls).memoized(in: users)
    _ = try await user(1)
    clock.advance(by: .seconds(10) - .nanoseconds(1))
    #expect(users.value(for: 1) == "user1")
    _ = try await user(1)
    #expect(calls.value == 1)
    clock.advance(by: .nanoseconds(1))
    #expect(users.value(for: 1) == nil)
    #expect(users.count == 0)
    _ = try await user(1)
    #expect(calls.value == 2)
  }

  @Test func expired_results_are_let_go_by_the_runs_of_other_keys() async throws {
    // Issue 40, item 4.
    final class Profile: Sendable {}
    struct Weak: Sendable { weak var profile: Profile? }
    let clock = TestClock()
    let profiles = ResultCache<Int, Profile>(lifetime: .seconds(1), capacity: 10, clock: clock)
    let profile = AsyncFunc<Int, Profile>.sync(name: "profile") { _ in Profile() }
      .memoized(in: profiles)
    var weak: [Weak] = []
    for id in 0..<10 { weak.append(Weak(profile: try await profile(id))) }
    clock.advance(by: .seconds(1))
    let fresh = try await profile(10)
    #expect(weak.allSatisfy { $0.profile == nil })
    #expect(profiles.value(for: 10) === fresh)
  }

  @Test func many_runs_of_an_expired_key_make_one_call() async {
    let clock = TestClock()
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>(lifetime: .seconds(5), clock: clock)
    let user = parking.function.memoized(in: users)
    users.prime(1, with: "old")
    clock.advance(by: .seconds(5))
    let (results, finished) = startRuns(user, 1, count: 20)
    await parking.waitForStarts(1)
    #expect(parking.started == 1)
    parking.takeAll()[0].complete(.success("new"))
    await finished.wait()
    #expect(results.all.map { try? $0.get() } == Array(repeating: "new", count: 20))
    #expect(users.value(for: 1) == "new")
  }

  @Test func capacity_evicts_the_least_recently_used_entry() async throws {
    let calls = Tally()
    let users = ResultCache<Int, String>(capacity: 2)
    let user = counting(calls).memoized(in: users)
    _ = try await user(1)
    _ = try await user(2)
    _ = try await user(1)  // 1 is now the most recently used
    _ = try await user(3)  // evicts 2
    #expect(users.count == 2)
    #expect(calls.value == 3)
    _ = try await user(1)
    #expect(calls.value == 3)
    _ = try await user(2)
    #expect(calls.value == 4)
  }

  @Test func prime_fills_an_entry_without_a_call() async throws {
    let calls = Tally()
    let users = ResultCache<Int, String>()
    let user = counting(calls).memoized(in: users)
    users.prime(5, with: "primed")
    #expect(try await user(5) == "primed")
    #expect(calls.value == 0)
  }

  @Test func forget_during_a_call_keeps_its_result_out_and_the_next_run_calls_again() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    let first = Recorder<Result<String, any Error>>()
    user.run(1) { first.record($0) }
    await parking.waitForStarts(1)
    users.forget(1)
    // A run after `forget` makes a new call rather than joining the forgotten one.
    let second = Recorder<Result<String, any Error>>()
    user.run(1) { second.record($0) }
    #expect(parking.started == 2)
    let calls = parking.takeAll()
    calls[0].complete(.success("forgotten"))
    #expect(first.all.map { try? $0.get() } == ["forgotten"])
    #expect(users.value(for: 1) == nil)
    calls[1].complete(.success("fresh"))
    #expect(second.all.map { try? $0.get() } == ["fresh"])
    #expect(users.value(for: 1) == "fresh")
  }

  @Test func forget_lets_runs_waiting_for_a_cancelled_call_start_theirs() async {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    user.run(1) { _ in }.cancel()
    await parking.waitForStarts(1)
    let waiting = Recorder<Result<String, any Error>>()
    user.run(1) { waiting.record($0) }
    #expect(parking.started == 1)
    users.forget(1)
    #expect(parking.started == 2)
    let calls = parking.takeAll()
    calls[1].complete(.success("fresh"))
    #expect(waiting.all.map { try? $0.get() } == ["fresh"])
    calls[0].complete(.success("late"))
    #expect(users.value(for: 1) == "fresh")
  }

  @Test func forgetAll_drops_every_entry_and_detaches_every_call() async throws {
    let parking = Parking<Int, String>()
    let users = ResultCache<Int, String>()
    let user = parking.function.memoized(in: users)
    users.prime(1, with: "one")
    users.prime(2, with: "two")
    user.run(3) { _ in }
    await parking.waitForStarts(1)
    users.forgetAll()
    #expect(users.count == 0)
    parking.takeAll()[0].complete(.success("three"))
    #expect(users.count == 0)
    #expect(users.table.flightCount == 0)
  }

  @Test func memoized_by_key_keeps_results_under_the_key() async throws {
    let calls = Tally()
    let users = ResultCache<Int, String>()
    let user = AsyncFunc<(id: Int, verbose: Bool), String>.sync { request in
      calls.add()
      return "user\(request.id)"
    }.memoized(in: users, by: \.id)
    #expect(try await user((id: 1, verbose: true)) == "user1")
    #expect(try await user((id: 1, verbose: false)) == "user1")
    #expect(calls.value == 1)
    #expect(users.value(for: 1) == "user1")
  }

  @Test func description_reads_like_the_code() {
    let user = AsyncFunc<Int, String>.sync(name: "user") { "\($0)" }
    let users = ResultCache<Int, String>(name: "users")
    #expect("\(user.memoized(in: users))" == "user.memoized(in: users)")
    #expect("\(user.memoized(in: users, by: { $0 }))" == "user.memoized(in: users, by: { … })")
    #expect(
      "\(user.memoized(in: ResultCache<Int, String>()))"
        == "user.memoized(in: ResultCache<Int, String>)")
  }
}
