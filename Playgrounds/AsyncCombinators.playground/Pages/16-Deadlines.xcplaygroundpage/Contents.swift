/*:
 # 16. Deadlines

 A `timeout` is also a budget: its deadline travels with the work on the run's token, so a
 body can read how long it has left, `retry` and `hedged` stop spending time the deadline
 would cut short, and an `async` body hands the deadline to every function it awaits. And a
 cancelled token says why: `token.cause`. Everything here runs on a `TestClock`, so the times
 are exact.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

/*:
 ## Reading the budget

 One deadline per clock; nested timeouts keep the earliest, in either order.
 */
example("the time left") {
  let clock = TestClock()
  let lookup = AsyncFunc<String, String>(name: "lookup") { key, token, complete in
    let left = token.deadline(on: clock).map { clock.now.duration(to: $0) }
    print("\(key): \(left.map { "\($0)" } ?? "no deadline") left")
    complete(.success(key))
  }
  lookup.timeout(.milliseconds(300), clock: clock).run("outer") { _ in }
  lookup.timeout(.milliseconds(100), clock: clock).timeout(.milliseconds(300), clock: clock)
    .run("nested") { _ in }
  lookup.run("bare") { _ in }
  // prints outer: 0.3 seconds left
  // prints nested: 0.1 seconds left
  // prints bare: no deadline left
}
/*:
 ## A retry that gives up early

 Attempts fail after 20 ms and are retried after 30 ms, within 100 ms. A third attempt would
 start at the deadline, so the run ends at 70 ms with the attempt's own error, not with a
 `TimeoutError` at 100 ms.
 */
example("retry within a budget") {
  let clock = TestClock()
  let attempt = AsyncFunc<Int, Int>(name: "attempt") { _, complete in
    print("attempt at \(clock.now)")
    _ = clock.scheduleTimer(at: clock.now + .milliseconds(20)) {
      complete(.failure(PlaygroundError("unavailable")))
    }
  }
  attempt.retry(5, delay: .milliseconds(30), clock: clock)
    .timeout(.milliseconds(100), clock: clock)
    .run(1) { print("\(clock.now): \($0)") }
  clock.advance(by: .milliseconds(100))
  // prints attempt at start + 0.0 seconds
  // prints attempt at start + 0.05 seconds
  // prints start + 0.07 seconds: failure(unavailable)
}
/*:
 ## Why a token was cancelled

 A timeout gives its `TimeoutError`, a failed sibling its failure, `latest()` a
 `SupersededError`, `race` and `hedged` a `LostRaceError`; the run's outcome does not change.
 */
example("causes") {
  let clock = TestClock()
  let slow = AsyncFunc<Int, Int>(name: "slow") { _, token, complete in
    token.onCancel {
      print("slow cancelled: \(token.cause.map { "\($0)" } ?? "?")")
      complete(.failure(CancellationError()))
    }
  }
  slow.timeout(.milliseconds(50), clock: clock).run(1) { print($0) }
  clock.advance(by: .milliseconds(50))
  let failing = AsyncFunc<Int, Int>.sync(name: "failing") { _ in
    throw PlaygroundError("down")
  }
  (slow <> failing).run(2) { print($0) }
  // prints slow cancelled: TimeoutError: no result within 0.05 seconds
  // prints failure(TimeoutError: no result within 0.05 seconds)
  // prints slow cancelled: down
  // prints failure(down)
}
/*:
 ## withTimeout for plain async code

 Every `AsyncFunc` awaited inside sees the deadline; at the deadline they are cancelled with
 the `TimeoutError` cause, and `withTimeout` throws only once its operation has returned.
 */
example("withTimeout") {
  let clock = TestClock()
  let call = AsyncFunc<Int, Int>(name: "call") { _, token, complete in
    clock.advance(by: .milliseconds(300))  // the call takes 300 ms
    print("cause: \(token.cause.map { "\($0)" } ?? "none")")
    complete(.failure(CancellationError()))
  }
  do {
    _ = try await withTimeout(.milliseconds(250), clock: clock) { try await call(1) }
  } catch {
    print(error)
  }
  // prints cause: TimeoutError: no result within 0.25 seconds
  // prints TimeoutError: no result within 0.25 seconds
}
