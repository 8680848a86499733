import AsyncCombinators
import Synchronization

extension Tour {
  /// A handler with a 300 ms budget whose retry gives up early, rather than sleep past it.
  public static let deadlines = Scenario(
    title: "a deadline that travels with the work",
    story: """
      A handler has 300 ms to answer: (load profile <> load stock.retry(3, delay: 150 ms)) \
      under timeout(300 ms). The stock service fails after 40 ms each time. The first retry \
      waits, but a second wait would end past the deadline, so the retry gives up at once \
      (the ⏹ row) with the service's error, instead of sleeping into a TimeoutError; the \
      failure cancels the slow profile load, whose row says why.
      """
  ) {
    let profile = FakeNetwork.stage("load profile", milliseconds: 1_000) { (id: Int) in id }
    let stock = FakeNetwork.stage("load stock", milliseconds: 40) { (_: Int) throws -> Int in
      throw ServiceUnavailable()
    }
    let handler = (profile <> stock.retry(3, delay: .milliseconds(150)))
      .timeout(.milliseconds(300))
    let traced = await Traced.run(
      "handler", handler, 7, expecting: [.failed("load stock"), .cancelled("load profile")])
    // The timeline's own account of why: the retry given up, and the cause of the cancel.
    var log = traced.timeline.marks.compactMap { mark -> String? in
      guard case .retryGaveUp(let attempt, let wait) = mark.kind else { return nil }
      return "retry gave up after attempt \(attempt): a wait of \(wait) would pass the deadline"
    }
    log += traced.timeline.spans.compactMap { span in
      span.cancellationCause.map { "\(span.name) cancelled: \($0)" }
    }
    return [
      Traced(
        label: traced.label, structure: traced.structure, result: traced.result,
        timeline: traced.timeline, log: log,
        expectations: traced.expectations + [
          .logged([
            "retry gave up after attempt 2: a wait of 0.15 seconds would pass the deadline",
            "load profile cancelled: ServiceUnavailable",
          ])
        ])
    ]
  }
}
