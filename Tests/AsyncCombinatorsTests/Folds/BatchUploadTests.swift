import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The HoneyBee article's batch upload, with fakes, checked against every requirement:
/// at most 4 items at once (and 4 reached), exports one at a time and off the main queue,
/// only the upload retried and only once, the upload on its context's queue, every UI
/// callback on the UI queue, one per-item completion per element, and victory when no more
/// than half fail.
@Suite struct BatchUploadTests {
  struct Media: Sendable, Equatable {
    let ref: String
  }

  enum UploadError: Error {
    case expired(String)
    case network(String)
  }

  /// Which queue a block runs on, for the fakes to check.
  static let role = DispatchSpecificKey<String>()

  /// A Core Data context stand-in: it runs blocks on its own private queue.
  struct FakeContext: BlockPerformer {
    let queue = DispatchQueue(label: "context")
    init() { queue.setSpecific(key: BatchUploadTests.role, value: "context") }
    func perform(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }
  }

  /// The app: the legacy callback functions and the four UI callbacks of the article, faked.
  /// A ref's prefix decides its fate: `good`, `flaky` (the first upload fails), `bad` (every
  /// upload fails) or `expired` (the export fails).
  final class App: Sendable {
    let ui = DispatchQueue(label: "ui")  // The main queue, for a test process.
    let context = FakeContext()
    let work = testQueue("work")
    let network = testQueue("network")
    let exports = InFlight()
    let uploads = InFlight()
    /// Holds the first uploads' results until 4 are in flight at once: proves the limit is
    /// reached. Parked closures, not blocked threads.
    private let held = Locked((isOpen: false, parked: [@Sendable () -> Void]()))
    let events = Recorder<String>()
    let exportCalls = Recorder<String>()
    let uploadCalls = Recorder<String>()
    let misplaced = Recorder<String>()

    init(holdUntilFour: Bool) {
      if !holdUntilFour { held.withLock { $0.isOpen = true } }
      ui.setSpecific(key: role, value: "ui")
      DispatchQueue.main.setSpecific(key: role, value: "main")
      if holdUntilFour {
        // Only so that a broken limit fails the test instead of hanging it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 10) { self.releaseHeld() }
      }
    }

    private func check(_ expected: String, _ what: String) {
      let actual = DispatchQueue.getSpecific(key: role)
      if actual != expected { misplaced.record("\(what) on \(actual ?? "another queue")") }
    }

    func export(_ ref: String, completion: @escaping @Sendable (Media?, (any Error)?) -> Void) {
      exportCalls.record(ref)
      if DispatchQueue.getSpecific(key: role) == "main" { misplaced.record("export on main") }
      exports.enter()
      work.async {
        self.exports.leave()
        if ref.hasPrefix("expired") {
          completion(nil, UploadError.expired(ref))
        } else {
          completion(Media(ref: ref), nil)
        }
      }
    }

    func upload(_ media: Media, completion: @escaping @Sendable ((any Error)?) -> Void) {
      check("context", "upload")
      let attempt = uploadCalls.all.filter { $0 == media.ref }.count + 1
      uploadCalls.record(media.ref)
      uploads.enter()
      let fails = media.ref.hasPrefix("bad") || (media.ref.hasPrefix("flaky") && attempt == 1)
      let finish: @Sendable () -> Void = {
        self.network.async {
          self.uploads.leave()
          completion(fails ? UploadError.network(media.ref) : nil)
        }
      }
      let isHeld = held.withLock { held in
        if !held.isOpen { held.parked.append(finish) }
        return !held.isOpen
      }
      if !isHeld { return finish() }
      if uploads.now >= 4 { releaseHeld() }
    }

    private func releaseHeld() {
      let parked = held.withLock { held in
        held.isOpen = true
        defer { held.parked = [] }
        return held.parked
      }
      for finish in parked { finish() }
    }

    func errorHandler(_ error: any Error) {
      check("ui", "errorHandler")
      events.record("error")
    }

    func singleUploadCompletion(_ ref: String) {
      check("ui", "singleUploadCompletion")
      events.record("completed \(ref)")
    }

    func singleUploadSuccess(_ media: Media) {
      check("ui", "singleUploadSuccess")
      events.record("uploaded \(media.ref)")
    }

    func totalProcessSuccess() {
      check("ui", "totalProcessSuccess")
      events.record("victory")
    }

    func events(_ prefix: String) -> [String] {
      events.all.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }
  }

  /// The article's recipe, in this library.
  static func uploadOne(_ app: App) -> AsyncFunc<String, Void> {
    let export = AsyncFunc<String, Media>.valueOrError(name: "export", app.export)
    let upload = AsyncFunc<Media, Media>(name: "upload") { media, complete in
      app.upload(media) { error in complete(error.map { .failure($0) } ?? .success(media)) }
    }
    let singleUploadSuccess = AsyncFunc<Media, Void>.sync(
      name: "singleUploadSuccess", app.singleUploadSuccess)
    let singleUploadCompletion = AsyncFunc<String, Void>.sync(
      name: "singleUploadCompletion", app.singleUploadCompletion)

    return
      (export.on(app.work).limit(1)
      +> upload.on(app.context).retry(1)
      +> singleUploadSuccess.on(app.ui))
      .finally(singleUploadCompletion.on(app.ui))
  }

  static func batchUpload(_ app: App) -> AsyncFunc<[String], Void> {
    let totalProcessSuccess = AsyncFunc<[Void], Void>.sync(name: "totalProcessSuccess") { _ in
      app.totalProcessSuccess()
    }
    let report = AsyncFunc<Result<Void, any Error>, Void>.sync(name: "report") { result in
      if case .failure(let error) = result { app.errorHandler(error) }
    }
    let batch =
      uploadOne(app).concurrentMap(limit: 4, acceptableFailure: .ratio(0.5))
      +> totalProcessSuccess.on(app.ui)
    return batch.settled() +> report.on(app.ui)
  }

  static func run(_ refs: [String], holdUntilFour: Bool) async throws -> App {
    let app = App(holdUntilFour: holdUntilFour)
    try await batchUpload(app)(refs)
    return app
  }

  @Test func the_batch_succeeds_when_no_more_than_half_fail() async throws {
    let refs =
      ["good-0", "flaky-1", "good-2", "good-3", "bad-4", "good-5", "flaky-6", "good-7"]
      + ["good-8", "good-9", "good-10", "expired-11"]
    let app = try await Self.run(refs, holdUntilFour: true)

    // At most 4 at once, and 4 reached: the first four uploads waited for each other.
    #expect(app.uploads.peak == 4)
    // Exports one at a time, never on the main queue.
    #expect(app.exports.peak == 1)
    // Only the upload is retried, once: flaky and bad uploads twice, exports once.
    #expect(app.exportCalls.all.sorted() == refs.sorted())
    let uploads = Dictionary(app.uploadCalls.all.map { ($0, 1) }, uniquingKeysWith: +)
    for ref in refs {
      let expected = ref.hasPrefix("expired") ? nil : ref.hasPrefix("good") ? 1 : 2
      #expect(uploads[ref] == expected, "\(ref)")
    }
    // Every callback on the UI queue, the upload on the context's queue, no export on main.
    #expect(app.misplaced.all == [])
    // One per-item completion for every element; a success call for each success.
    #expect(app.events("completed ").sorted() == refs.sorted())
    #expect(
      app.events("uploaded ").sorted()
        == refs.filter { !$0.hasPrefix("bad") && !$0.hasPrefix("expired") }.sorted())
    // 2 of 12 failed: victory, no error.
    #expect(app.events.all.filter { $0 == "victory" }.count == 1)
    #expect(app.events.all.contains("error") == false)
    #expect(app.events.all.last == "victory")
  }

  @Test func exactly_half_failing_is_still_a_success() async throws {
    let refs = ["good-0", "bad-1", "good-2", "bad-3", "good-4", "bad-5"]
    let app = try await Self.run(refs, holdUntilFour: false)
    #expect(app.events.all.last == "victory")
    #expect(app.events("completed ").sorted() == refs.sorted())
    #expect(app.misplaced.all == [])
  }

  @Test func more_than_half_failing_reports_one_error_on_the_ui_queue() async throws {
    let refs = ["bad-0", "good-1", "bad-2", "bad-3", "expired-4", "good-5"]
    let app = try await Self.run(refs, holdUntilFour: false)
    #expect(app.events.all.contains("victory") == false)
    #expect(app.events.all.filter { $0 == "error" }.count == 1)
    #expect(app.events.all.last == "error")
    #expect(app.misplaced.all == [])
    #expect(app.exports.peak == 1)
    #expect(app.uploads.peak <= 4)
    // The verdict cancels the items still running; each item that finished reported once.
    let completed = app.events("completed ")
    #expect(Set(completed).count == completed.count)
    #expect(Set(completed).isSubset(of: refs))
    #expect(Set(app.uploadCalls.all.filter { $0.hasPrefix("bad") }).count >= 1)
  }

  @Test func the_recipe_reads_like_the_requirements() {
    let app = App(holdUntilFour: false)
    #expect(
      "\(Self.uploadOne(app))"
        == "(export.on(AsyncCombinatorsTesting.work).limit(1) +> upload.on(FakeContext).retry(1)"
        + " +> singleUploadSuccess.on(ui)).finally(singleUploadCompletion.on(ui))")
  }
}
