/*:
 # 12. Resilience

 A flaky service, called the way the field has learned to: retries that back off and spread
 out, a circuit breaker that stops calling a service that keeps failing, and hedged calls
 that cut the slow tail. Everything here runs on a `TestClock`, so the schedules are exact.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

/*:
 ## Retry with backoff, a cap and jitter

 Wait *k* is `delay × backoff^k`, capped by `maxDelay`, then jittered. Without jitter the
 waits are 1, 2, 4, 8 s; with `maxDelay: 5s` the fourth is 5 s.
 */
example("backoff capped by maxDelay") {
  let clock = TestClock()
  let attempts = Recorder<TestClock.Instant>()
  let fetch = AsyncFunc<String, String>(name: "fetch") { key, complete in
    attempts.record(clock.now)
    complete(.failure(PlaygroundError("unavailable")))
  }
  let retried = fetch.retry(4, delay: .seconds(1), backoff: 2, maxDelay: .seconds(5), clock: clock)
  print(retried)
  retried.run("user:7") { print($0) }
  clock.advance(by: .seconds(60))
  print(attempts.all)
  // prints fetch.retry(4, delay: 1.0 seconds, backoff: 2.0, maxDelay: 5.0 seconds)
  // prints failure(unavailable)
  // prints [start + 0.0 seconds, start + 1.0 seconds, start + 3.0 seconds, start + 7.0 seconds, start + 12.0 seconds]
}
/*:
 ## A circuit breaker opening and closing

 After two failures in its window the breaker opens: calls fail fast with
 `BrokenCircuitError`, whose `retryAfter` says how long the break has left. After the break,
 one probe goes through; its success closes the breaker.
 */
example("a breaker opens, then a probe closes it") {
  let clock = TestClock()
  let payments = CircuitBreaker(
    name: "payments", failureRatio: 0.5, minimumThroughput: 2, breakDuration: .seconds(30),
    clock: clock)
  let healthy = Atomic(false)
  let charge = AsyncFunc<Int, Int>(name: "charge") { amount, complete in
    complete(healthy.load(ordering: .relaxed) ? .success(amount) : .failure(PlaygroundError("503")))
  }.guarded(by: payments)
  for amount in [10, 20, 30] {
    do { _ = try await charge(amount) } catch { print(error) }
  }
  print(payments.state)
  clock.advance(by: .seconds(30))
  healthy.store(true, ordering: .relaxed)
  print(try await charge(40), payments.state)
  // prints 503
  // prints 503
  // prints circuit breaker payments is open: retry after 30.0 seconds
  // prints open
  // prints 40 closed
}
/*:
 ## A hedged call

 The primary is stuck; 50 ms later a second attempt starts, answers, and wins. The primary
 is cancelled.
 */
example("a hedge beats a stuck primary") {
  let clock = TestClock()
  let stuck = ParkedCompletion<String>()
  let calls = Counter()
  let lookup = AsyncFunc<String, String>(name: "lookup") { key, token, complete in
    calls.increment()
    if calls.value == 1 { return stuck.park(complete) }
    complete(.success("\(key) from attempt \(calls.value)"))
  }
  let hedged = lookup.hedged(after: .milliseconds(50), clock: clock)
  hedged.run("user:7") { print($0) }
  clock.advance(by: .milliseconds(50))
  // prints success("user:7 from attempt 2")
}
