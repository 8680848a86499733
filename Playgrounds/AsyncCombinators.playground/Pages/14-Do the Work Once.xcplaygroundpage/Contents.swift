/*:
 # 14. Do the work once

 Three things every app that calls a backend writes by hand, usually wrongly: ten views ask
 for one avatar at once and ten requests go out; a token refresh races itself; a list asks
 for 100 users one by one when the backend has a batch endpoint.

 `shared()` makes runs of a key that is already in flight join that call (Go's
 `singleflight`). Each run can still be cancelled alone; the call is cancelled only when
 every run that joined it is.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch

example("ten views, one request") {
  let avatar = AsyncFunc<String, String>(name: "avatar") { user, complete in
    print("fetching", user)
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
      complete(.success("\(user).png"))
    }
  }
  let once = avatar.shared()
  print(once)
  let views = try await once.concurrentMap()(Array(repeating: "ada", count: 10))
  print(views.count, "views got", views[0])
  // prints avatar.shared()
  // prints fetching ada
  // prints 10 views got ada.png
}
/*:
 ## Keep the result: `memoized(in:)`

 A `ResultCache` keeps successes (failures only with `cachingFailures: true`, cancellation
 never), drops them after `lifetime` on its clock, and the least recently used beyond
 `capacity`. When an entry expires under load, one call refreshes it: the runs share it.
 Here the clock is a `TestClock`, so time moves only when the page says.
 */
example("a cache with a lifetime") {
  let clock = TestClock()
  let users = ResultCache<Int, String>(name: "users", lifetime: .seconds(60), clock: clock)
  let user = AsyncFunc<Int, String>.sync(name: "user") { id in
    print("calling user", id)
    return "user\(id)"
  }.memoized(in: users)
  print(user)
  _ = try await user(1)
  _ = try await user(1)  // kept: no call
  clock.advance(by: .seconds(60))
  _ = try await user(1)  // expired: one call
  users.prime(2, with: "two")
  print(try await user(2), users)
  // prints user.memoized(in: users)
  // prints calling user 1
  // prints calling user 1
  // prints two users: ResultCache(2 entries, lifetime: 60.0 seconds)
}
/*:
 ## Batch the loads: `batched`

 DataLoader: each run loads one key; the loads made before the batch's block runs on `queue`
 (or until `maxBatchSize`) become one call of the batch function, keys in first-asked order,
 duplicates once. The function must return one output per key: any other count fails the
 batch's loads with `ContractViolation` naming the function.
 */
example("a list screen of 100 rows and 4 users") {
  let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { ids in
    print("load", ids)
    return ids.map { "user\($0)" }
  }
  let tick = DispatchQueue(label: "tick")
  let user = AsyncFunc<Int, String>.batched(usersByIDs, maxBatchSize: 100, on: tick)
  let users = ResultCache<Int, String>(name: "users")
  let cached = user.memoized(in: users)
  print(cached)
  let rows = (0..<100).map { $0 % 4 }
  let loaded = Countdown(rows.count)
  tick.sync {
    // The batch's block on `tick` runs after this one: every row's load joins the batch.
    for id in rows { cached.run(id) { _ in loaded.tick() } }
  }
  await loaded.wait()
  print(rows.count, "rows,", users.count, "users")
  print(try await cached(3))  // kept
  // prints batched(usersByIDs, maxBatchSize: 100).memoized(in: users)
  // prints load [0, 1, 2, 3]
  // prints 100 rows, 4 users
  // prints user3
}
