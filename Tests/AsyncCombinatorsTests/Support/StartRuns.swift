import AsyncCombinators
import AsyncCombinatorsTesting

/// Starts `count` runs of `function` on `input`, one after another without waiting: each
/// result is recorded in `results`, and `finished` counts the runs that have ended.
func startRuns<Input: Sendable, Output: Sendable>(
  _ function: AsyncFunc<Input, Output>, _ input: Input, count: Int
) -> (results: Recorder<Result<Output, any Error>>, finished: Countdown) {
  let results = Recorder<Result<Output, any Error>>()
  let finished = Countdown(count)
  for _ in 0..<count {
    function.run(input) { result in
      results.record(result)
      finished.tick()
    }
  }
  return (results, finished)
}
