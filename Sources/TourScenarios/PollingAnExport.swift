import AsyncCombinators
import Synchronization

/// What an export job's status call answers.
struct ExportStatus: Sendable, CustomStringConvertible {
  let percent: Int
  var isDone: Bool { percent >= 100 }
  var description: String { isDone ? "done" : "\(percent)%" }
}

/// An export job's status on the fake network: each poll finds it `step` percent further on.
private func exportStatus(step: Int, log: Log) -> AsyncFunc<String, ExportStatus> {
  let polls = Atomic(0)
  return FakeNetwork.stage("status", milliseconds: 5) { (job: String) -> ExportStatus in
    let poll = polls.add(1, ordering: .relaxed).newValue
    let status = ExportStatus(percent: min(100, poll * step))
    log("poll \(poll): \(job) \(status)")
    return status
  }
}

extension Tour {
  /// Polling an export job with `repeating` until it is done, or until the schedule gives up.
  public static let pollingAnExport = Scenario(
    title: "polling an export job",
    story: """
      An export job reports how far it has got. status.repeating(.spaced(20 ms).upTo(5 s), \
      until: { $0.isDone }) polls it every 20 ms: the job is done on the fourth poll, and \
      that status is the result. A job that barely moves is polled under \
      .fibonacci(10 ms).intersection(.recurs(4)): waits of 10, 10, 20 and 30 ms, then the \
      schedule ends and the run ends with the last status, not an error.
      """
  ) {
    let quick = Log()
    let polled = exportStatus(step: 25, log: quick).repeating(
      .spaced(.milliseconds(20)).upTo(.seconds(5)), until: { $0.isDone })
    let finished = await Traced.run(
      "until done", polled, "export-7", log: quick,
      expecting: [
        .oneAtATime("status"),
        .logged([
          "poll 1: export-7 25%", "poll 2: export-7 50%", "poll 3: export-7 75%",
          "poll 4: export-7 done",
        ]),
      ])

    let slow = Log()
    let patient = exportStatus(step: 5, log: slow).repeating(
      .fibonacci(.milliseconds(10)).intersection(.recurs(4)), until: { $0.isDone })
    let gaveUp = await Traced.run(
      "until the schedule ends", patient, "export-8", log: slow,
      expecting: [
        .oneAtATime("status"),
        .logged([
          "poll 1: export-8 5%", "poll 2: export-8 10%", "poll 3: export-8 15%",
          "poll 4: export-8 20%", "poll 5: export-8 25%",
        ]),
      ])
    return [finished, gaveUp]
  }
}
