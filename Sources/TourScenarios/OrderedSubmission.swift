import AsyncCombinators

/// Why seed 001's worker rejects an input.
enum CalculationError: Error {
  case inputOutOfRange
}

extension Tour {
  /// Seed 001's ordered queue: jobs that suspend still run one at a time, in submission
  /// order; a failure or a cancellation stays with its own job.
  public static let orderedSubmission = Scenario(
    title: "ordered submission",
    story: """
      OrderedQueue runs async jobs one at a time, in the order they were submitted, though \
      each one suspends for its 10 ms calculation: the bars are steps. A failure stays on \
      its own handle and the queue goes on; a job cancelled before its turn never starts.
      """
  ) {
    [
      await submitJobs(
        "B's input is out of range", inputs: [3, 1001, 5], cancellingB: false,
        expecting: [
          .steps(["square A", "square B", "square C"]), .failed("square B"),
          .logged(["start A", "finish A", "start B", "start C", "finish C"]),
        ]),
      await submitJobs(
        "B cancelled before its turn", inputs: [3, 4, 5], cancellingB: true,
        expecting: [
          .steps(["square A", "square C"]), .neverStarted("square B"),
          .logged(["start A", "finish A", "start C", "finish C"]),
        ]),
    ]
  }

  /// Submits jobs A, B and C, squaring `inputs`, and awaits each handle in turn.
  private static func submitJobs(
    _ label: String, inputs: [Int], cancellingB: Bool, expecting expectations: [Expectation]
  ) async -> Traced {
    let log = Log()
    let timeline = Timeline()
    let names = ["A", "B", "C"]
    /// The seed's worker: it says when it starts and finishes, and rejects large inputs.
    @Sendable func square(_ name: String) -> AsyncFunc<Int, Int> {
      FakeNetwork.stage(
        "square \(name)", milliseconds: 10, started: { _ in log("start \(name)") },
        { input in
          guard (-1000...1000).contains(input) else { throw CalculationError.inputOutOfRange }
          log("finish \(name)")
          return input * input
        })
    }
    // Submitted on the fake network's queue, which delivers A's answer: B is cancelled
    // before A can finish, so before B's turn.
    let jobs = await withCheckedContinuation { continuation in
      FakeNetwork.queue.async {
        let queue = OrderedQueue()
        let jobs = zip(names, inputs).map { name, input in
          queue.submit { try await square(name).value(input, observer: timeline) }
        }
        if cancellingB { jobs[1].cancel() }
        continuation.resume(returning: jobs)
      }
    }
    var results: [String] = []
    for (name, job) in zip(names, jobs) {
      switch await job.result {
      case .success(let answer): results.append("\(name) = \(answer)")
      case .failure(let error as CancellationError): results.append("\(name): \(error)")
      case .failure(let error): results.append("\(name) failed: \(error)")
      }
    }
    let submissions = zip(names, inputs).map { "submit \($0): square(\($1))" }
    return Traced(
      label: label,
      structure: (submissions + (cancellingB ? ["cancel B"] : [])).joined(separator: "; "),
      result: results.joined(separator: ", "), timeline: timeline, log: log.lines,
      expectations: expectations)
  }
}

extension AsyncFunc {
  /// Runs the function with `observer` watching and awaits its value.
  ///
  /// Cancelling the awaiting task does not cancel the run: the jobs here are cancelled, if
  /// at all, before they start.
  fileprivate func value(_ input: Input, observer: any RunObserver) async throws -> Output {
    try await withCheckedThrowingContinuation { continuation in
      run(input, observer: observer) { continuation.resume(with: $0) }
    }
  }
}
