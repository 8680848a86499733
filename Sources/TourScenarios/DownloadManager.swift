import AsyncCombinators
import Dispatch
import Synchronization

extension Tour {
  /// A download manager: a work queue of two with priorities, a pause and a resume, a live
  /// progress line, and the server's rate limit honoured.
  public static let downloadManager = Scenario(
    title: "a download manager",
    story: """
      Seven fake downloads through a WorkQueue(limit: 2), submitted while it is paused: the \
      file the user tapped has .high priority and starts first, the photos follow in the \
      order they came. A Limiter(rate: .tokenBucket(1, per: 20 ms, burst: 2)) stands for the \
      server's terms: two start at once, then one per 20 ms, which the timeline shows. When \
      the third download ends the queue pauses (the running one finishes, none starts) and \
      resumes 30 ms later; drained() returns after the last.
      """
  ) {
    let bar = liveProgress?("downloads")
    let timeline = Timeline()
    let log = Log()
    let downloads = WorkQueue(limit: 2)
    let server = Limiter(rate: .tokenBucket(1, per: .milliseconds(20), burst: 2))
    let startOrder = Mutex<[String]>([])
    let fetch = FakeNetwork.stage(
      "download", milliseconds: 10, started: { name in startOrder.withLock { $0.append(name) } }
    ) { (name: String) in name }.limited(by: server)
    let finished = Atomic(0)
    let files: [(String, WorkQueue.Priority)] =
      (1...6).map { ("photo-\($0).jpg", .normal) } + [("tapped.pdf", .high)]
    downloads.pause()
    for (name, priority) in files {
      fetch.queued(on: downloads, priority: priority).run(name, observer: timeline) { _ in
        bar?.update(downloads.progress)
        // A result is delivered before its slot passes on: no other has started meanwhile.
        guard finished.add(1, ordering: .relaxed).newValue == 3 else { return }
        downloads.pause()
        let progress = downloads.progress
        let waiting = (progress.total ?? 0) - progress.completed - progress.inFlight
        log("paused after 3 downloads: \(waiting) waiting")
        FakeNetwork.queue.asyncAfter(deadline: .now() + .milliseconds(30)) {
          log("resumed")
          downloads.resume()
        }
      }
    }
    downloads.resume()
    await downloads.drained()
    bar?.update(downloads.progress)
    log("started in order: " + startOrder.withLock { $0 }.joined(separator: ", "))
    let starts = timeline.spans.filter { $0.name == "download" }.map(\.startedAt).sorted()
    // Seven starts with a burst of two take at least five refills of 20 ms.
    let spread = (starts.last ?? .zero) - (starts.first ?? .zero)
    log("rate honoured: \(spread >= .milliseconds(95) ? "yes" : "no, \(spread)")")
    log("\(downloads.progress)")
    return [
      Traced(
        label: "downloadManager", structure: "\(fetch.queued(on: downloads))",
        result: "drained", timeline: timeline, log: log.lines,
        expectations: [
          .logged([
            "paused after 3 downloads: 3 waiting",
            "resumed",
            "started in order: tapped.pdf, photo-1.jpg, photo-2.jpg, photo-3.jpg, photo-4.jpg, "
              + "photo-5.jpg, photo-6.jpg",
            "rate honoured: yes",
            "7/7 done (0 failed, 0 in flight)",
          ])
        ])
    ]
  }
}
