/*:
 # 13. Shared admission

 `limit(n)` gates one function. Real code needs one gate shared by every function that hits
 one backend, rate limits that a service's terms dictate, queues that shed load instead of
 growing, and a long-lived work queue an app can pause, reprioritise and wait on. All of them
 are gates of one admission core: first come, first served within a priority; a large weight
 is never starved; a cancelled waiter leaves at once; nobody blocks a thread.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

/*:
 ## One limiter, many functions

 A report takes three of the database's four slots. Waiting runs keep their order: the query
 that arrives after the report waits behind it even though a slot is free.
 */
example("a limiter shared by two functions") {
  let database = Limiter(concurrency: 4)
  let parking = Parking<String, String>()
  let query = parking.function.limited(by: database)
  let report = parking.function.limited(by: database, weight: 3)
  query.run("users") { _ in }
  query.run("orders") { _ in }
  report.run("sales") { _ in }
  query.run("items") { _ in }
  print(parking.started)
  for run in parking.takeAll() { run.complete(.success(run.input)) }
  let next = parking.takeAll()
  print(next.map(\.input))
  for run in next { run.complete(.success(run.input)) }
  // prints 2
  // prints ["sales", "items"]
}
/*:
 ## Shedding load

 With `queue: .none` a run that finds no free slot fails at once with `LimitExceeded`;
 `.count(n)` lets `n` wait; `.wait(d)` gives up after `d` on the limiter's clock.
 */
example("reject rather than queue") {
  let parking = Parking<Int, Int>()
  let strict = parking.function.limited(by: Limiter(concurrency: 1, queue: .none))
  strict.run(1) { _ in }
  strict.run(2) { print($0) }
  for run in parking.takeAll() { run.complete(.success(run.input)) }
  // prints failure(LimitExceeded: no slot free)
}
/*:
 ## A rate limit, in virtual time

 Sixty a minute with a burst of sixty: sixty start at once, then one per second.
 */
example("a token bucket") {
  let clock = TestClock()
  let api = Limiter(rate: .tokenBucket(60, per: .seconds(60)), clock: clock)
  let started = Recorder<TestClock.Instant>()
  let call = AsyncFunc<Int, Int>.sync(name: "call") { n in
    started.record(clock.now)
    return n
  }.limited(by: api)
  for n in 0..<63 { call.run(n) { _ in } }
  clock.advance(by: .seconds(3))
  print(started.count, started.all.suffix(3))
  // prints 63 [start + 1.0 seconds, start + 2.0 seconds, start + 3.0 seconds]
}
/*:
 ## A work queue

 Paused while the jobs arrive, then resumed: the high-priority job goes first, the others in
 the order they came. `drained()` returns once the last one has finished.
 */
example("priorities, pause and drain") {
  let downloads = WorkQueue(limit: 1)
  let log = Recorder<String>()
  downloads.pause()
  downloads.submit(priority: .low) { log.record("thumbnails") }
  downloads.submit { log.record("photo 1") }
  downloads.submit(priority: .high) { log.record("tapped file") }
  downloads.submit { log.record("photo 2") }
  downloads.resume()
  await downloads.drained()
  print(log.all)
  print(downloads.progress)
  // prints ["tapped file", "photo 1", "photo 2", "thumbnails"]
  // prints 4/4 done (0 failed, 0 in flight)
}
/*:
 ## A limit per key, and limits in a chain

 A `KeyedLimiter` makes a limiter for each key when its first run comes and lets it go once it
 has been idle. `Limiter(all:)` admits a run only when every limiter in it does: here two a
 second per customer, and three a second in all.
 */
example("per customer and in all") {
  let clock = TestClock()
  let everyone = Limiter(rate: .tokenBucket(3, per: .seconds(1)), queue: .none, clock: clock)
  let perCustomer = KeyedLimiter<String>(clock: clock) { _ in
    Limiter(all: [
      Limiter(rate: .tokenBucket(2, per: .seconds(1)), queue: .none, clock: clock), everyone,
    ])
  }
  let served = Recorder<String>()
  let serve = AsyncFunc<String, String>.sync(name: "serve") { customer in
    served.record(customer)
    return customer
  }.limited(by: perCustomer, key: { $0 })
  for customer in ["ann", "ann", "ann", "bob", "bob"] { serve.run(customer) { _ in } }
  print(served.all, perCustomer.count)
  // prints ["ann", "ann", "bob"] 2
}
