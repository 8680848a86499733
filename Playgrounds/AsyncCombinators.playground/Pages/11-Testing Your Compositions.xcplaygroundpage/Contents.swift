/*:
 # 10. Testing your compositions

 The `AsyncCombinatorsTesting` library is for your test target. Its `TestClock` is a clock
 whose time moves only when you say: give it to `retry`, `timeout` or `delay`, then call
 `advance(by:)`. Before `advance` returns, every timer that fell due has fired, in deadline
 order, on this thread, so a schedule of seconds is checked in microseconds.
 */
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization

struct UploadFailed: Error { let attempt: Int }

example("a retry schedule, in virtual time") {
  let clock = TestClock()
  let attempts = Mutex<[TestClock.Instant]>([])
  let upload = AsyncFunc<String, String>(name: "upload") { file, complete in
    // While a timer fires, `now` is its deadline.
    let attempt = attempts.withLock { list in
      list.append(clock.now)
      return list.count
    }
    complete(.failure(UploadFailed(attempt: attempt)))
  }
  upload.retry(3, delay: .seconds(1), backoff: 2, clock: clock).run("a.mov") { print($0) }
  clock.advance(by: .seconds(10))
  print(attempts.withLock { $0 })
  // prints failure(UploadFailed(attempt: 4))
  // prints [start + 0.0 seconds, start + 1.0 seconds, start + 3.0 seconds, start + 7.0 seconds]
}
/*:
 ## A timeout race

 Hold the inner result back and move the clock to either side of the deadline. `pendingCount`
 shows the timer waiting, and gone once it fired (or once a result won).
 */
example("the deadline wins") {
  let clock = TestClock()
  let held = Mutex<AsyncFunc<Int, Int>.Completion?>(nil)
  let fetch = AsyncFunc<Int, Int>(name: "fetch") { _, complete in
    held.withLock { $0 = complete }
  }
  fetch.timeout(.seconds(5), clock: clock).run(1) { print(clock.now, $0) }
  clock.advance(by: .milliseconds(4_999))
  print("pending timers:", clock.pendingCount)
  clock.advance(by: .milliseconds(1))
  held.withLock { $0 }?(.success(2))  // Too late: dropped.
  // prints pending timers: 1
  // prints start + 5.0 seconds failure(TimeoutError: no result within 5.0 seconds)
}
/*:
 ## A law over random pipelines

 `(f +> g) +> h` and `f +> (g +> h)` must end alike for any stages. `PipelineGenerator` draws
 random chains of integer stages; `expected(_:)` is the reference model; `forAll` prints the
 process's seed once (and again if a case fails), and `AC_SEED=<seed>` in the environment
 replays the same cases.
 */
example("+> is associative") {
  let lab = PipelineLab()
  try await forAll("+> is associative", count: 50) { random, _ in
    var generate = PipelineGenerator(random: random)
    defer { random = generate.random }
    let (f, g, h) = (generate.chain(), generate.chain(), generate.chain())
    let model = RandomChain(stages: f.stages + g.stages + h.stages).expected(5)
    let left = (f.function(in: lab) +> g.function(in: lab)) +> h.function(in: lab)
    let right = f.function(in: lab) +> (g.function(in: lab) +> h.function(in: lab))
    for pipeline in [left, right] {
      let result = try await pipeline.map { [$0] }.settled()(5)
      if !model.admits(result) { return false }
    }
    return true
  }
  print("the law held")
  // prints the law held
}
/*:
 ## A contract check of your own wrapper

 `ContractChecker` runs a function many times, from several threads, cancelling at random
 moments, and names every breach. This wrapper completes twice when cancelled, and leaves its
 handler on the token (which keeps the run alive: the checker waits a few seconds for it to be
 released before saying so). The guide "Testing your compositions" shows the fix.
 */
example("a wrapper with two bugs") {
  let queue = DispatchQueue(label: "legacy", attributes: .concurrent)
  let fetchUser = AsyncFunc<Int, String>(name: "fetchUser") { id, token, complete in
    token.onCancel { complete(.failure(CancellationError())) }
    queue.async { complete(.success("user\(id)")) }
  }
  let report = await ContractChecker(runs: 100, seed: 7).check(fetchUser) { $0 }
  print(report)
  // prints fetchUser: 100 breaches (seed 7)
  // prints   fetchUser: completionCalledTwice, 84 times in 100 runs
  // prints   fetchUser: objectsAliveAfterRun, 16 times in 100 runs
}
