import AsyncCombinators

extension AsyncFunc {
  /// Fails a share of this function's runs with `error`, without calling the function: a
  /// flaky service to test retries, breakers and fallbacks against.
  ///
  /// Each run draws once from a ``SplitMix64`` generator seeded with `seed` and shared by
  /// the runs of the returned function: the *n*-th run to start draws the *n*-th number, so
  /// the same runs started in the same order fail the same way in every test run.
  ///
  /// ```swift
  /// let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
  /// let flaky = fetch.injectingFaults(rate: 0.5, error: NetworkError.dropped, seed: 3)
  /// var failed = 0
  /// for id in 0..<100 {
  ///   do { _ = try await flaky(id) } catch { failed += 1 }
  /// }
  /// print(flaky)
  /// print(failed > 30 && failed < 70)
  /// // prints fetch.injectingFaults(rate: 0.5, error: NetworkError.dropped, seed: 3)
  /// // prints true
  /// ```
  ///
  /// - Precondition: `rate` is in `[0, 1]`; otherwise the program stops with a message naming
  ///   the caller's line.
  /// - Parameters:
  ///   - rate: The chance that a run fails, in `[0, 1]`.
  ///   - error: What the failing runs fail with.
  ///   - seed: Where the draws start; the same seed replays the same faults.
  ///   - file: The caller's file, named when `rate` is out of range.
  ///   - line: The caller's line, named when `rate` is out of range.
  /// - Returns: A function with the same input and output.
  public func injectingFaults(
    rate: Double, error: any Error, seed: UInt64 = 0, file: StaticString = #fileID,
    line: UInt = #line
  ) -> AsyncFunc {
    require(
      rate >= 0 && rate <= 1, "injectingFaults(rate: \(rate)): the rate must be in [0, 1]",
      file: file, line: line)
    let draws = FaultDraws(seed: seed)
    return AsyncFunc(
      wrapping: self, call: "injectingFaults(rate: \(rate), error: \(error), seed: \(seed))"
    ) { input, token, complete in
      if draws.hit(rate) {
        complete(.failure(error))
      } else {
        self.run(input, token: token, completion: complete)
      }
    }
  }

  /// Delays the start of a share of this function's runs by `delay` on `clock`: a slow
  /// service to test timeouts and hedging against.
  ///
  /// The draws are seeded and replayable as ``injectingFaults(rate:error:seed:file:line:)``'s
  /// are. A run cancelled while it is delayed ends with `CancellationError` and never calls
  /// the function.
  ///
  /// ```swift
  /// let clock = TestClock()
  /// let fetch = AsyncFunc<Int, Int>.sync(name: "fetch") { $0 }
  /// let slow = fetch.injectingLatency(rate: 1, delay: .seconds(2), clock: clock, seed: 1)
  /// slow.run(7) { print($0) }
  /// print("waiting")
  /// clock.advance(by: .seconds(2))
  /// // prints waiting
  /// // prints success(7)
  /// ```
  ///
  /// - Precondition: `rate` is in `[0, 1]` and `delay` is not negative; otherwise the program
  ///   stops with a message naming the caller's line.
  /// - Parameters:
  ///   - rate: The chance that a run is delayed, in `[0, 1]`.
  ///   - delay: How long a delayed run waits before it starts; 0 or more.
  ///   - clock: The clock the delay is measured on; `ContinuousClock()` unless given.
  ///   - seed: Where the draws start; the same seed replays the same delays.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: A function with the same input and output.
  public func injectingLatency<C: Clock>(
    rate: Double, delay: Duration, clock: C = ContinuousClock(), seed: UInt64 = 0,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      rate >= 0 && rate <= 1, "injectingLatency(rate: \(rate)): the rate must be in [0, 1]",
      file: file, line: line)
    let draws = FaultDraws(seed: seed)
    let delayed = AsyncFunc<Input, Input>.delay(delay, clock: clock, file: file, line: line) +> self
    return AsyncFunc(
      wrapping: self, call: "injectingLatency(rate: \(rate), delay: \(delay), seed: \(seed))"
    ) { input, token, complete in
      (draws.hit(rate) ? delayed : self).run(input, token: token, completion: complete)
    }
  }
}

/// The draws of one fault-injecting function, shared by its runs in the order they start.
private final class FaultDraws: Sendable {
  private let generator: Locked<SplitMix64>

  init(seed: UInt64) { generator = Locked(SplitMix64(seed: seed)) }

  /// Whether this run is hit, with chance `rate`. Draws once whatever the rate, so that
  /// changing the rate keeps which runs come first in the sequence.
  func hit(_ rate: Double) -> Bool {
    let draw = generator.withLock { Double.random(in: 0..<1, using: &$0) }
    return draw < rate
  }
}
