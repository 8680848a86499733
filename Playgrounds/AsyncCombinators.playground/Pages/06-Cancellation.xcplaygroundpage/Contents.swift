/*:
 # 6. Cancellation

 `run` returns a `CancellationToken`. Cancelling it ends the run at once: the completion gets
 `CancellationError`, stages that have not started never start, the running stage's token
 fires so it can stop its work, and a value that arrives later is dropped.
 */
import AsyncCombinators
import Dispatch

let slowSearch = delayed("search", milliseconds: 200) { (query: String) in ["\(query) 1"] }
let render = AsyncFunc<[String], String>.sync(name: "render") { results in
  print("render started")  // Never printed below: the run is cancelled before it.
  return results.joined(separator: ", ")
}

example("cancel a run") {
  let token = (slowSearch +> render).run("swift") { result in print(result) }
  token.cancel()  // The completion runs now, on this thread, before `cancel` returns.
  // prints failure(Swift.CancellationError())
}
/*:
 ## Stopping the work itself

 A body that takes a `token` can stop what it started: the handler given to `onCancel` runs
 once, when the run is cancelled (or at once, if it already is).
 */
example("a stage that stops waiting") {
  let timer = AsyncFunc<Int, Int>(name: "timer") { seconds, token, complete in
    // The timer and the cancellation race to call back; `OnceFlag` lets only the first
    // through, so the completion is called exactly once.
    let once = OnceFlag()
    token.onCancel {
      guard once.claim() else { return }
      print("timer: cancelled, not waiting any longer")
      complete(.failure(CancellationError()))
    }
    network.asyncAfter(deadline: .now() + .seconds(seconds)) {
      if once.claim() { complete(.success(seconds)) }
    }
  }
  let token = timer.run(60) { result in print(result) }
  token.cancel()
  // prints failure(Swift.CancellationError())
  // prints timer: cancelled, not waiting any longer
}
/*:
 ## From async/await

 Awaiting an `AsyncFunc` ties it to the awaiting task: cancelling the task cancels the run.
 Cancellation is not a failure: it is always `CancellationError`, never wrapped, so catch it
 apart from real errors and usually say nothing.
 */
example("cancelling the task cancels the run") {
  let task = Task { try await (slowSearch +> render)("swift") }
  task.cancel()
  do {
    print(try await task.value)
  } catch is CancellationError {
    print("cancelled: nothing to show, nothing to report")
  }
  // prints cancelled: nothing to show, nothing to report
}
/*:
 ## Reaching every branch

 Cancelling a run cancels every running branch of its `<>`.
 */
example("cancellation reaches both branches") {
  let stopped = Counter()
  let branch = AsyncFunc<Int, Int>(name: "branch") { x, token, complete in
    token.onCancel {
      stopped.increment()
      complete(.failure(CancellationError()))
    }
  }
  (branch <> branch).run(1) { _ in }.cancel()
  print("\(stopped.value) branches stopped")
  // prints 2 branches stopped
}
