/*:
 # 15. Schedules

 When to try again, as a value. A `Schedule` is a sequence of waits that may end; four start
 the algebra (`exponential`, `fibonacci`, `spaced`, `recurs`) and six operators combine them
 (`capped`, `upTo`, `jittered`, `union`, `intersection`, `andThen`). The same schedule drives
 `retry`, which goes on after a failure, and `repeating`, which goes on after a success that
 is not yet the one wanted. Everything here runs on a `TestClock`, so the times are exact.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

/// When each try of one run of `function` starts, until the run ends.
func starts<Output: Sendable>(
  of function: AsyncFunc<String, Output>, on clock: TestClock, recorded tries: Recorder<Duration>
) -> [Duration] {
  let token = function.run("job") { print($0) }
  while let next = clock.nextDeadline { clock.advance(to: next) }
  token.cancel()
  return tries.all
}

/*:
 ## Combining schedules

 "Back off exponentially from 100 ms, never more than 2 s, after five tries a flat 5 s, and
 give up after 30 s in all": one expression. The first exponential wait is the base itself.
 */
example("a patient retry") {
  let clock = TestClock()
  let tries = Recorder<Duration>()
  let upload = AsyncFunc<String, String>(name: "upload") { _, complete in
    tries.record(clock.now - .start)
    complete(.failure(PlaygroundError("dropped")))
  }
  let patient = Schedule.exponential(.milliseconds(100)).capped(at: .seconds(2))
    .intersection(.recurs(5)).andThen(.spaced(.seconds(5))).upTo(.seconds(30))
  print(patient)
  print(starts(of: upload.retry(patient, clock: clock), on: clock, recorded: tries))
  // prints Schedule.exponential(0.1 seconds).capped(at: 2.0 seconds).intersection(Schedule.recurs(5)).andThen(Schedule.spaced(5.0 seconds)).upTo(30.0 seconds)
  // prints failure(dropped)
  // prints [0.0 seconds, 0.1 seconds, 0.3 seconds, 0.7 seconds, 1.5 seconds, 3.1 seconds, 8.1 seconds, 13.1 seconds, 18.1 seconds, 23.1 seconds, 28.1 seconds]
}
/*:
 ## Union, intersection, and then

 `union` goes on while either goes on and waits the shorter; `intersection` goes on while
 both do and waits the longer; `andThen` gives one schedule's waits, then the other's.
 */
example("the combinations") {
  let clock = TestClock()
  let tries = Recorder<Duration>()
  let call = AsyncFunc<String, String>(name: "call") { _, complete in
    tries.record(clock.now - .start)
    complete(.failure(PlaygroundError("no")))
  }
  let either = Schedule.exponential(.milliseconds(100)).union(.spaced(.milliseconds(250)))
  let retried = call.retry(either.intersection(.recurs(4)), clock: clock)
  print(starts(of: retried, on: clock, recorded: tries))
  // prints failure(no)
  // prints [0.0 seconds, 0.1 seconds, 0.3 seconds, 0.55 seconds, 0.8 seconds]
}
/*:
 ## A server's hint

 An error that conforms to `RetryAfterHint` raises the wait to its hint, above a cap too, and
 spends no extra attempt: three tries here, as without the hint.
 */
struct Throttled: RetryAfterHint, CustomStringConvertible {
  var retryAfter: Duration? { .seconds(7) }
  var description: String { "throttled" }
}

example("a hint raises the wait") {
  let clock = TestClock()
  let tries = Recorder<Duration>()
  let call = AsyncFunc<String, String>(name: "call") { _, complete in
    tries.record(clock.now - .start)
    complete(.failure(Throttled()))
  }
  let schedule = Schedule.spaced(.seconds(1)).capped(at: .seconds(2)).intersection(.recurs(2))
  print(starts(of: call.retry(schedule, clock: clock), on: clock, recorded: tries))
  // prints failure(throttled)
  // prints [0.0 seconds, 7.0 seconds, 14.0 seconds]
}
/*:
 ## Polling until done

 `repeating` runs again after each output `done` declines: a status polled every second
 until the export is ready, for a minute at most. Had it never been ready, the run would end
 at 60 s with the last status.
 */
example("poll an export job") {
  let clock = TestClock()
  let tries = Recorder<Duration>()
  let status = AsyncFunc<String, String>(name: "status") { _, complete in
    tries.record(clock.now - .start)
    complete(.success(tries.count == 4 ? "ready" : "pending"))
  }
  let finished = status.repeating(
    .spaced(.seconds(1)).upTo(.seconds(60)), until: { $0 == "ready" }, clock: clock)
  print(finished)
  print(starts(of: finished, on: clock, recorded: tries))
  // prints status.repeating(Schedule.spaced(1.0 seconds).upTo(60.0 seconds))
  // prints success("ready")
  // prints [0.0 seconds, 1.0 seconds, 2.0 seconds, 3.0 seconds]
}
