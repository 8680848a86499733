import AsyncCombinators

/// What the second program's `second job` throws.
struct SecondJobFailed: Error, CustomStringConvertible {
  var description: String { "SecondJobFailed" }
}

extension Tour {
  /// Seed 003's two demo programs, on the `Promise` facade: `when` runs two jobs at once, the
  /// `then` blocks follow in order, `always` runs last; a throw skips the rest and reaches
  /// `error`.
  public static let promiseDemos = Scenario(
    title: "firstly, when, then, always, error",
    story: """
      The article's Promise, written on the library's public API: each then is a stage \
      after +>, and when is <>. when starts both jobs at once (10 and 30 ms where the \
      article sleeps 1 and 5 s), so the then blocks start after 30 ms, not 40; always runs \
      last. In the second program second job throws: third job never runs, always still \
      does, and error hears of it. The structure is the chain of blocks, which always and \
      error wrap; the timeline shows the stages that ran, the failed then last.
      """
  ) {
    [
      await promiseDemo(
        "when, then, then, always", throwing: false,
        printing: ["second job", "third job", "always block"]),
      await promiseDemo(
        "second job throws", throwing: true,
        printing: ["second job", "always block", "error occurred"]),
    ]
  }

  /// Plays the article's program; `throwing` makes `second job` throw.
  private static func promiseDemo(
    _ label: String, throwing: Bool, printing ending: [String]
  ) async -> Traced {
    let log = Log()
    /// One of the `when` jobs: it says when it begins and when it ends, and waits on the fake
    /// network where the article sleeps.
    @Sendable func job(_ name: String, milliseconds: Int) -> Promise<Void> {
      Promise(
        FakeNetwork.stage(
          "\(name) job", milliseconds: milliseconds, started: { log("begin \(name) job") },
          { log("\(name) job in when finished") }))
    }
    // The block that calls `when` runs on the fake network's queue, which delivers the jobs'
    // ends: both jobs have begun before either can end.
    let program = firstly(on: FakeNetwork.queue) {
      when(job("fst", milliseconds: 10), job("snd", milliseconds: 30))
    }.then { _ in
      log("second job")
      if throwing { throw SecondJobFailed() }
    }.then { _ in
      log("third job")
    }.always {
      log("always block")
    }
    let run = program.errorStage { _ in log("error occurred") }
    let jobs = [
      "begin fst job", "begin snd job", "fst job in when finished", "snd job in when finished",
    ]
    return await Traced.run(
      label, run, (), log: log,
      expecting: [.overlap("fst job", "snd job"), .logged(jobs + ending)]
        + (throwing ? [.failed("then")] : []))
  }
}

extension Promise {
  /// The run that `error(_:)` starts, as a function the Tour can trace and describe.
  ///
  /// `error` starts its chain at once, with no timeline watching. This function wraps the
  /// same chain, described as `chain.error { … }`, runs it when the Tour starts it, and calls
  /// `body` as `error` does: on a failure that is not cancellation, after the `always` blocks.
  fileprivate func errorStage(
    _ body: @escaping @Sendable (any Error) -> Void
  ) -> AsyncFunc<Void, Value> {
    AsyncFunc(wrapping: chain, call: "error { … }") { _, token, complete in
      chain.run((), token: token) { result in
        if case .failure(let error) = result, !(error is CancellationError) { body(error) }
        complete(result)
      }
    }
  }
}
