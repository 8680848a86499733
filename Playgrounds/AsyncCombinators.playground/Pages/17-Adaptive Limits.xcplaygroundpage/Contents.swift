/*:
 # 17. Adaptive limits and shedding

 `Limiter(concurrency: 8)` asks for a number nobody knows. `Limiter(adaptive:)` finds it
 from the latency and the drops of the runs it admits, and moves it when the service changes.
 When runs must wait, priorities decide who goes first, and who is turned away first.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

/*:
 ## The limit moves itself

 AIMD adds one after a success while at least half the limit is in use, and multiplies by
 its backoff after a drop: here, a `TimeoutError`. An observer sees each move as a
 `RunEvent` of kind `.limitChanged`.
 */
final class LimitMoves: RunObserver {
  func observe(_ event: RunEvent) {
    guard let change = event.limitChange else { return }
    print("\(change.old) -> \(change.new): \(change.reason)")
  }
}

example("AIMD backs off on a drop") {
  let limiter = Limiter(adaptive: .aimd(initial: 4, min: 1, max: 10, backoff: 0.5))
  let call = AsyncFunc<Bool, Int>.sync(name: "call") { timesOut in
    if timesOut { throw TimeoutError(duration: .seconds(1)) }
    return 1
  }.limited(by: limiter)
  call.run(true, observer: LimitMoves()) { _ in }
  print(limiter.limit)
  // prints 4 -> 2: drop
  // prints 2
}
/*:
 Vegas and Gradient read latency instead: they grow while latency shows no queue at the
 service and shrink when it does, re-measuring the latency without load from time to time.
 The guide *Adaptive Limits* shows them following a simulated service whose capacity halves,
 and `swift run Tour` plays the same story.

 ## The lowest priority is shed first

 One slot, room for one waiter. A batch job waits; a checkout arrives at higher priority and
 takes its place: the batch job is the one turned away.
 */
example("priorities decide who is shed") {
  let limiter = Limiter(concurrency: 1, queue: .count(1))
  let parking = Parking<String, String>()
  parking.function.limited(by: limiter).run("running") { print($0) }
  parking.function.limited(by: limiter, priority: .low).run("batch job") { print($0) }
  parking.function.limited(by: limiter, priority: .high).run("checkout") { print($0) }
  for run in parking.takeAll() { run.complete(.success(run.input)) }
  for run in parking.takeAll() { run.complete(.success(run.input)) }
  // prints failure(LimitExceeded: no slot free)
  // prints success("running")
  // prints success("checkout")
}
/*:
 `QueueLimit.codel(target:interval:)` needs no count: a priority whose waits stayed above
 `target` for a whole `interval` turns away its oldest waiters, one CoDel state per priority,
 so the fast `.high` runs never hide the standing queue of `.low` ones.
 */
