import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct JitterTests {
  /// The waits of one run of `retry(5, delay: 1s, backoff: 2, maxDelay:, jitter:)` that fails.
  private func waits(_ jitter: Jitter, maxDelay: Duration? = nil) -> [Duration] {
    let clock = TestClock()
    let flaky = TimedFlaky(clock: clock)
    let watch = RetryWatch()
    _ = driveToEnd(
      flaky.function.retry(
        5, delay: .seconds(1), backoff: 2, maxDelay: maxDelay, jitter: jitter, clock: clock),
      on: clock, observer: watch)
    return watch.durations
  }

  private let computed: [Duration] = [1, 2, 4, 8, 16].map { .seconds($0) }

  @Test func none_waits_the_computed_wait() {
    #expect(waits(.none) == computed)
  }

  @Test func full_draws_each_wait_in_zero_to_the_computed_wait() {
    for seed in UInt64(0)..<20 {
      let drawn = waits(.full.seeded(seed))
      #expect(drawn.count == 5)
      for (wait, limit) in zip(drawn, computed) { #expect(wait >= .zero && wait <= limit) }
      #expect(drawn != computed)
    }
  }

  @Test func equal_draws_each_wait_in_half_to_all_of_the_computed_wait() {
    for seed in UInt64(0)..<20 {
      let drawn = waits(.equal.seeded(seed))
      for (wait, limit) in zip(drawn, computed) { #expect(wait >= limit / 2 && wait <= limit) }
      #expect(drawn != computed)
    }
  }

  @Test func decorrelated_draws_between_the_delay_and_three_times_the_previous_wait_capped() {
    for seed in UInt64(0)..<20 {
      let drawn = waits(.decorrelated.seeded(seed), maxDelay: .seconds(10))
      var previous = Duration.seconds(1)
      for wait in drawn {
        #expect(wait >= .seconds(1) && wait <= min(previous * 3, .seconds(10)))
        previous = wait
      }
    }
  }

  @Test func a_seeded_jitter_replays_the_same_waits_in_every_run() {
    #expect(waits(.full.seeded(42)) == waits(.full.seeded(42)))
    #expect(waits(.decorrelated.seeded(42)) == waits(.decorrelated.seeded(42)))
    #expect(waits(.full.seeded(42)) != waits(.full.seeded(43)))
  }

  @Test func an_unseeded_jitter_draws_afresh_for_every_run() {
    // Two runs that fail together must not retry in step: 5 draws from the system generator
    // agreeing by chance is as likely as two equal 64-bit numbers, five times over.
    #expect(waits(.full) != waits(.full))
    #expect(waits(.equal) != waits(.equal))
  }

  /// The waits of two runs of one `retry(5, delay: 1s, backoff: 2, jitter:)` that keeps
  /// failing: runs of one function that fail together.
  private func waitsOfTwoRuns(_ jitter: Jitter) -> ([Duration], [Duration]) {
    let clock = TestClock()
    let retried = TimedFlaky(clock: clock).function.retry(
      5, delay: .seconds(1), backoff: 2, jitter: jitter, clock: clock)
    let (first, second) = (RetryWatch(), RetryWatch())
    let ended = Tally()
    retried.run("a", observer: first) { _ in ended.add() }
    retried.run("b", observer: second) { _ in ended.add() }
    while ended.value < 2, let next = clock.nextDeadline { clock.advance(to: next) }
    return (first.durations, second.durations)
  }

  @Test func two_runs_of_one_retry_draw_their_own_waits() {
    for jitter in [Jitter.full, .equal, .decorrelated, .full.seeded(42)] {
      let (first, second) = waitsOfTwoRuns(jitter)
      #expect(first.count == 5 && second.count == 5)
      #expect(first != second, "\(jitter): the runs retried in step")
    }
    // Seeded, the pair replays: the second run takes the numbers after the first's.
    #expect(waitsOfTwoRuns(.full.seeded(42)) == waitsOfTwoRuns(.full.seeded(42)))
  }

  @Test func a_jitter_reads_as_written() {
    #expect("\(Jitter.none)" == ".none")
    #expect("\(Jitter.full)" == ".full")
    #expect("\(Jitter.equal)" == ".equal")
    #expect("\(Jitter.decorrelated.seeded(7))" == ".decorrelated.seeded(7)")
    #expect(Jitter.full.seeded(1) != Jitter.full)
    #expect(Jitter.full.seeded(1) == Jitter.full.seeded(1))
  }
}
