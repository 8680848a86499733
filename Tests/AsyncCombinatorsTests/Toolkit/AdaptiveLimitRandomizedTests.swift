import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// Random starts, results, cancellations and clock moves through an adaptive limiter, whose
/// limit moves with the results: every start fits the limit in force, a cancellation moves
/// nothing, and the limit stays in its bounds.
@Suite struct AdaptiveLimitRandomizedTests {
  /// A body that parks; what the test needs to know of it.
  private final class Bodies: Sendable {
    struct Body {
      let input: Int
      let complete: @Sendable (Result<Int, any Error>) -> Void
    }
    let parked = Locked<[Body]>([])
    /// Starts whose running bodies, with themselves, were more than the limit.
    let overLimit = Locked<[String]>([])
  }

  @Test(arguments: [
    AdaptiveLimit.aimd(initial: 5, min: 1, max: 12, backoff: 0.7),
    .vegas(initial: 6, min: 2, max: 12, alpha: 1, beta: 2),
    .gradient(initial: 6, min: 1, max: 12),
  ])
  func every_start_fits_the_limit_and_a_cancellation_moves_nothing(_ adaptive: AdaptiveLimit) {
    let seed = UInt64.random(in: 0...UInt64.max)
    print("AdaptiveLimitRandomizedTests \(adaptive) seed \(seed)")
    var random = SplitMix64(seed: seed)
    let clock = TestClock()
    let limiter = Limiter(adaptive: adaptive, clock: clock)
    let sampler = limiter.sampler!
    let bodies = Bodies()
    let service = AsyncFunc<Int, Int>(name: "service") { input, complete in
      bodies.parked.withLock { parked in
        parked.append(.init(input: input, complete: complete))
        if parked.count > limiter.limit {
          bodies.overLimit.withLock { $0.append("\(parked.count) over \(limiter.limit)") }
        }
      }
    }
    .limited(by: limiter)
    var tokens: [CancellationToken] = []
    for step in 0..<10_000 {
      let choice = Int(random.next() % 100)
      if choice < 35 {
        tokens.append(service.run(step) { _ in })
      } else if choice < 75 {
        let body = bodies.parked.withLock { parked -> Bodies.Body? in
          parked.isEmpty ? nil : parked.remove(at: Int(random.next() % UInt64(parked.count)))
        }
        let outcome = random.next() % 3
        body?.complete(
          outcome == 0
            ? .success(body!.input)
            : .failure(outcome == 1 ? TimeoutError(duration: .seconds(1)) : CancellationError()))
      } else if choice < 90, !tokens.isEmpty {
        let token = tokens.remove(at: Int(random.next() % UInt64(tokens.count)))
        let (limit, samples) = (limiter.limit, sampler.machine.samples)
        token.cancel()
        #expect(limiter.limit == limit, "seed \(seed) step \(step)")
        #expect(sampler.machine.samples == samples, "seed \(seed) step \(step)")
      } else {
        clock.advance(by: .milliseconds(Int64(random.next() % 20)))
      }
      let limit = limiter.limit
      #expect(limit >= adaptive.min && limit <= adaptive.max, "seed \(seed) step \(step)")
      #expect(sampler.machine.limit == limit, "seed \(seed) step \(step)")
      #expect(sampler.machine.inFlight >= 0, "seed \(seed) step \(step)")
    }
    #expect(bodies.overLimit.withLock { $0 } == [], "seed \(seed)")
    // Everything ends: nothing is left in flight.
    for token in tokens { token.cancel() }
    for body in bodies.parked.withLock({ $0 }) { body.complete(.success(0)) }
    #expect(sampler.machine.inFlight == 0, "seed \(seed)")
  }

  /// Runs on two threads at once, a third of them drops, so that the limit moves all the time
  /// while runs are admitted and leave: the gate ends at the last limit, nothing is left in
  /// flight, and no more than `max` ever ran at once.
  @Test(.timeLimit(.minutes(1))) func limits_moved_from_many_threads_settle_on_the_last_one()
    async
  {
    let runs = 5_000
    let limiter = Limiter(adaptive: .aimd(initial: 4, min: 1, max: 8, backoff: 0.5))
    let running = Locked((now: 0, most: 0))
    let call = AsyncFunc<Int, Int>.sync(name: "call") { input in
      running.withLock {
        $0.now += 1
        $0.most = max($0.most, $0.now)
      }
      defer { running.withLock { $0.now -= 1 } }
      if input % 3 == 0 { throw TimeoutError(duration: .seconds(1)) }
      return input
    }
    .limited(by: limiter)
    let finished = Countdown(2 * runs)
    DispatchQueue.concurrentPerform(iterations: 2) { job in
      for index in 0..<runs { call.run(job * runs + index) { _ in finished.tick() } }
    }
    await finished.gate.wait()
    let sampler = limiter.sampler!
    #expect(running.withLock { $0.most } <= 8)
    #expect(sampler.machine.inFlight == 0)
    #expect(sampler.machine.samples == 2 * runs)
    #expect(limiter.limit == sampler.machine.limit)
    #expect(limiter.gate.counts.admitted == 0)
  }
}
