import AsyncCombinators
import Foundation
import Synchronization

/// `--allocations breaker N`: `N` runs of a function guarded by an open breaker, each turned
/// away; `--allocations run N`: `N` runs of an unguarded stage that throws an error made
/// beforehand, which is what a run itself allocates. Run each under valgrind at two `N`s: the
/// difference of the heap totals over the difference of the `N`s is the allocations per run,
/// and the two modes' figures differ by what a rejection allocates, its error included.
func runAllocationCount(_ kind: String, runs: Int) {
  struct Refused: Error {
    let service: String? = "bench"
    let wait: Duration? = .seconds(1)
  }
  let failing = AsyncFunc<Int, Int>(name: "failing") { _, complete in
    complete(.failure(Refused()))
  }
  let function: AsyncFunc<Int, Int>
  switch kind {
  case "breaker":
    let breaker = CircuitBreaker(
      name: "bench", minimumThroughput: 1, breakDuration: .seconds(3_600))
    function = failing.guarded(by: breaker)
    function.run(0) { _ in }  // The one failure that opens it.
    precondition(breaker.state == .open, "the breaker did not open")
  case "run":
    let made: any Error = Refused()
    function = .sync { _ in throw made }
  default:
    fatalError("no allocation count \(kind): try breaker or run")
  }
  let token = CancellationToken()
  let rejected = Box()
  let done: @Sendable (Result<Int, any Error>) -> Void = { _ in
    rejected.value.add(1, ordering: .relaxed)
  }
  for input in 0..<runs { function.run(input, token: token, completion: done) }
  precondition(rejected.value.load(ordering: .relaxed) == runs, "a run did not end at once")
}
