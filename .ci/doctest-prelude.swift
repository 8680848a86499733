// The doc-tests' prelude: the fakes that the examples in the docs and doc comments use without
// defining them — a user's SDK, a network, a disk, a screen. .ci/doctest compiles it into the
// examples' program (module `App`), so an example sees these names unless it defines its own.
//
// Every fake answers quickly and deterministically. Values print the way the docs show them
// (`User(name: "Ada")`, `Image(ada.png)`), and errors print their own name without a module.
// State that examples observe (a worker's trace) is reset before each guide or doc comment
// runs, by `resetFakes()`.
import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Foundation
import Synchronization

// MARK: - Users and images: the profile screen of Getting Started

struct User: Sendable, Hashable, CustomStringConvertible {
  let name: String
  var description: String { "User(name: \"\(name)\")" }
}

struct Image: Sendable, Hashable, CustomStringConvertible {
  let file: String
  static let placeholder = Image(file: "placeholder.png")
  /// Decodes image data: the data is the file's name.
  static func decode(_ data: Data) async throws -> Image {
    Image(file: String(decoding: data, as: UTF8.self))
  }
  var description: String { "Image(\(file))" }
}

let ada = User(name: "Ada")
private let people = [7: ada]
private let friendsOf = ["Ada": [User(name: "Grace"), User(name: "Alan")]]

/// Calls back after `milliseconds` on a global queue, as a network SDK would.
func later(_ milliseconds: Int, _ work: @escaping @Sendable () -> Void) {
  DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: work)
}

/// The callback SDK of Getting Started: user 7 is Ada, whose friends are Grace and Alan.
func fetchUser(_ id: Int, completion: @escaping @Sendable (Result<User, any Error>) -> Void) {
  later(20) { completion(people[id].map { .success($0) } ?? .failure(NotFound())) }
}
func fetchAvatar(_ user: User, completion: @escaping @Sendable (Result<Image, any Error>) -> Void) {
  later(40) { completion(.success(Image(file: user.name.lowercased() + ".png"))) }
}
func fetchFriends(
  _ user: User, completion: @escaping @Sendable (Result<[User], any Error>) -> Void
) {
  later(20) { completion(.success(friendsOf[user.name] ?? [])) }
}

/// A profile screen's stages by user id.
let avatar = AsyncFunc<Int, Image>(name: "avatar") { id, complete in
  later(10) { complete(.success(Image(file: "avatar\(id).png"))) }
}
let profile = AsyncFunc<Int, String>.sync(name: "profile") { "user \($0)" }
let friends = AsyncFunc<Int, [User]>.sync(name: "friends") { _ in friendsOf["Ada"] ?? [] }

// MARK: - Errors

struct NotFound: Error, CustomStringConvertible {
  var description: String { "NotFound" }
}
struct ParseError: Error, CustomStringConvertible {
  let text: String
  init(_ text: String = "") { self.text = text }
  static func notANumber(_ text: String) -> ParseError { ParseError(text) }
  var description: String { "ParseError(\(text))" }
}
struct DecodeError: Error, CustomStringConvertible {
  var description: String { "DecodeError" }
}
enum NetworkError: Error, CustomStringConvertible {
  case dropped, offline
  var description: String { "NetworkError.\(self == .dropped ? "dropped" : "offline")" }
}
enum CalculationError: Error, CustomStringConvertible {
  case inputOutOfRange
  var description: String { "CalculationError.inputOutOfRange" }
}

// MARK: - Counting, logging

/// A thread-safe counter: `next()` returns the count so far and adds one.
final class Counter: Sendable {
  private let count = Mutex(0)
  func next() -> Int {
    count.withLock { count in
      defer { count += 1 }
      return count
    }
  }
  var value: Int { count.withLock { $0 } }
}

struct Logger: Sendable {
  func error(_ message: String) { FileHandle.standardError.write(Data((message + "\n").utf8)) }
}
let log = Logger()

// MARK: - Queues, a disk, a network

let disk = DispatchQueue(label: "disk")
let network = DispatchQueue(label: "network")
let exportQueue = DispatchQueue(label: "export")

/// A request an SDK returns: cancelling it drops its answer.
final class Request: Cancellable {
  private let cancelled = Atomic(false)
  var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
  func cancel() { cancelled.store(true, ordering: .releasing) }
}

struct Status: Sendable, CustomStringConvertible {
  let ready: Bool
  var description: String { ready ? "ready" : "pending" }
}

/// An HTTP client: `fetch` and `get` answer with the URL's path as data.
final class Client: Sendable {
  func fetch(_ url: URL, completion: @escaping @Sendable (Result<Data, any Error>) -> Void) {
    network.async { completion(.success(Data(url.path.utf8))) }
  }
  @discardableResult
  func get(_ url: URL, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
    -> Request
  {
    let request = Request()
    network.async { if !request.isCancelled { completion(.success(Data(url.path.utf8))) } }
    return request
  }
  @discardableResult
  func poll(_ url: URL, completion: @escaping @Sendable (Result<Status, any Error>) -> Void)
    -> Request
  {
    let request = Request()
    network.async { if !request.isCancelled { completion(.success(Status(ready: true))) } }
    return request
  }
}
let client = Client()
let session = Client()
extension Client {
  @discardableResult
  func download(_ url: URL, completion: @escaping @Sendable (Result<Data, any Error>) -> Void)
    -> Request
  { get(url, completion: completion) }
}

/// An Objective-C style loader: `(value?, error?)`.
final class LegacyLoader: Sendable {
  func load(_ path: String, completion: @escaping @Sendable (Data?, (any Error)?) -> Void) {
    disk.async { completion(Data(path.utf8), nil) }
  }
}
let legacyLoader = LegacyLoader()

let url = URL(string: "https://example.com/media/1")!
let query = "swift"
let input = 7
let userID = 7

/// Image sizes of one picture, by URL.
let small = AsyncFunc<URL, Int>.sync(name: "small") { _ in 120 }
let medium = AsyncFunc<URL, Int>.sync(name: "medium") { _ in 480 }
let large = AsyncFunc<URL, Int>.sync(name: "large") { _ in 1920 }

/// Fetching pages: `fetch` loads a URL, `fetchNext` the page after the one it is given.
let fetch = AsyncFunc<URL, Data>(name: "fetch") { url, complete in
  client.fetch(url, completion: complete)
}
let fetchNext = AsyncFunc<Data, Data>.sync(name: "fetchNext") { $0 + Data("/next".utf8) }
let fetchProfile = AsyncFunc<Int, Data>(name: "fetchProfile") { id, complete in
  network.asyncAfter(deadline: .now() + .milliseconds(20)) {
    complete(.success(Data("profile \(id)".utf8)))
  }
}

/// What a pipeline saved last.
final class ResponseCache: Sendable {
  private let saved = Mutex<[Data]>([])
  func save(_ data: Data) { saved.withLock { $0.append(data) } }
  func removeAll() { saved.withLock { $0.removeAll() } }
  var last: Data { saved.withLock { $0.last ?? Data() } }
}
let cache = ResponseCache()

// MARK: - The image pipeline of the overview

/// Loads a file's bytes (its name, here) from disk.
func load(_ path: String) -> AsyncFunc<Void, Data> {
  AsyncFunc(name: "load \(path)") { _, complete in
    disk.asyncAfter(deadline: .now() + .milliseconds(10)) { complete(.success(Data(path.utf8))) }
  }
}
/// Loads something that may fail, synchronously.
func load() throws -> Data { Data("saved".utf8) }

let decode = AsyncFunc<(Data, Data), Image>.sync(name: "decode") { profile, data in
  Image(file: String(decoding: data, as: UTF8.self))
}
let dewarp = AsyncFunc<Image, Image>.sync(name: "dewarp") { Image(file: "dewarped " + $0.file) }

/// A pipeline that takes a user id and answers after 20 ms.
let pipeline = AsyncFunc<Int, String>(name: "pipeline") { id, complete in
  network.asyncAfter(deadline: .now() + .milliseconds(20)) { complete(.success("user\(id)")) }
}

/// A timeline of `fetch +> decode` on the network queue, 20 ms each (see Timeline's docs).
let timeline: Timeline = {
  let fetch = AsyncFunc<URL, Data>(name: "fetch") { url, complete in
    network.asyncAfter(deadline: .now() + .milliseconds(20)) { complete(.success(Data())) }
  }
  let decode = AsyncFunc<Data, Image>(name: "decode") { _, complete in
    network.asyncAfter(deadline: .now() + .milliseconds(20)) {
      complete(.success(.placeholder))
    }
  }
  let recorded = Timeline()
  let done = DispatchSemaphore(value: 0)
  network.async {  // started on `network`, as the chart in Timeline's docs shows
    (fetch +> decode).run(url, observer: recorded) { _ in done.signal() }
  }
  done.wait()  // the work runs on `network`, never on the thread that waits
  return recorded
}()

// MARK: - Media: the batch upload of Common Patterns

struct Media: Sendable, CustomStringConvertible {
  let title: String
  func save() throws {}
  var description: String { "Media(\(title))" }
}

/// Exports a media reference, Objective-C style: `(media?, error?)`.
final class Exporter: Sendable {
  func export(_ reference: String, completion: @escaping @Sendable (Media?, (any Error)?) -> Void) {
    exportQueue.async { completion(Media(title: reference), nil) }
  }
}
let exporter = Exporter()

/// Uploads media, `(error?)` style.
final class Uploader: Sendable {
  func upload(_ media: Media, completion: @escaping @Sendable ((any Error)?) -> Void) {
    network.async { completion(nil) }
  }
}
let uploader = Uploader()
let uploadMedia = AsyncFunc<Media, Void>.errorOnly(name: "uploadMedia") { media, callback in
  uploader.upload(media, completion: callback)
}

/// Uploads a file by name; "broken.mov" fails.
let upload = AsyncFunc<String, Int>(name: "upload") { file, complete in
  network.async {
    complete(file == "broken.mov" ? .failure(NetworkError.dropped) : .success(file.count))
  }
}
let files = ["a.mov", "b.mov", "c.mov", "broken.mov", "e.mov"]
let mediaReferences = (1...12).map { "media\($0)" }

/// Core Data, faked: a context runs blocks on its own queue.
final class NSManagedObjectContext: Sendable {
  private let queue = DispatchQueue(label: "context")
  func perform(_ block: @escaping @Sendable () -> Void) { queue.async(execute: block) }
}
let managedObjectContext = NSManagedObjectContext()
/// The managed object context as a `BlockPerformer`.
struct ManagedContext: BlockPerformer {
  let context: NSManagedObjectContext
  func perform(_ work: @escaping @Sendable () -> Void) { context.perform(work) }
}
let context = ManagedContext(context: managedObjectContext)

// MARK: - A screen

/// A label whose text can be set from any thread.
final class Label: Sendable {
  private let current = Mutex("")
  var text: String {
    get { current.withLock { $0 } }
    set { current.withLock { $0 = newValue } }
  }
}
let label = Label()

final class Banner: Sendable { func show() {} }
let banner = Banner()

struct Item: Sendable, CustomStringConvertible {
  let title: String
  var description: String { title }
}
final class Screen: Sendable { func show(_ items: [Item]) {} }
let screen = Screen()
func rank(_ items: [Item]) -> [Item] { items.sorted { $0.title < $1.title } }

/// A legacy search client that returns a cancellable request.
final class LegacyClient: Sendable {
  @discardableResult
  func search(_ query: String, completion: @escaping @Sendable (Result<[Item], any Error>) -> Void)
    -> Request
  {
    let request = Request()
    network.asyncAfter(deadline: .now() + .milliseconds(20)) {
      if !request.isCancelled { completion(.success([Item(title: query)])) }
    }
    return request
  }
}
let legacyClient = LegacyClient()

/// Shows a search result; the batch upload's progress and completion callbacks.
func show(_ result: Result<[String], any Error>) {}
func show(_ items: [String]) {}
func showError(_ error: any Error) {}
func singleUploadCompletion(_ reference: String) {}
func totalProcessSuccess() {}
func errorHandler(_ error: any Error) {}

/// A search index: words that start with the query, after 20 ms; cancellable.
final class SearchIndex: Sendable {
  private let words = ["sway", "swift", "swiftly", "swim"]
  func lookUp(_ query: String) async throws -> [String] {
    try await Task.sleep(for: .milliseconds(20))
    return words.filter { $0.hasPrefix(query) }
  }
}
let index = SearchIndex()

let searchPipeline = AsyncFunc<String, [String]>.async(name: "search") {
  try await index.lookUp($0)
}

// MARK: - A worker whose calls leave a trace (the OrderedQueue guides)

/// Squares numbers, slowly, and remembers when each call started and finished.
final class Worker: Sendable {
  private let events = Mutex<[String]>([])
  func square(_ x: Int, label: String) async throws -> Int {
    events.withLock { $0.append("start \(label)") }
    try await Task.sleep(for: .milliseconds(5))
    guard x <= 1000 else { throw CalculationError.inputOutOfRange }
    events.withLock { $0.append("finish \(label)") }
    return x * x
  }
  func trace() async -> [String] { events.withLock { $0 } }
  func reset() { events.withLock { $0.removeAll() } }
}
let worker = Worker()

/// Called by the harness before each guide or doc comment runs.
func resetFakes() {
  worker.reset()
  cache.removeAll()
}

// Test fakes the newer guides' examples share, as a test target would write them.

/// Records values from any thread, in order.
final class Recorder<Value: Sendable>: Sendable {
  private let values = Mutex<[Value]>([])
  func record(_ value: Value) { values.withLock { $0.append(value) } }
  var all: [Value] { values.withLock { $0 } }
  var count: Int { values.withLock { $0.count } }
}

/// Holds one completion until the example calls it, or never.
final class ParkedCompletion<Output: Sendable>: Sendable {
  private let held = Mutex<(@Sendable (Result<Output, any Error>) -> Void)?>(nil)
  func park(_ completion: @escaping @Sendable (Result<Output, any Error>) -> Void) {
    held.withLock { $0 = completion }
  }
  func complete(_ result: Result<Output, any Error>) { held.withLock { $0 }?(result) }
}

/// Holds every completion it is given, in arrival order, until the example releases one.
final class ParkedCompletions<Value: Sendable>: Sendable {
  private let parked = Mutex<[@Sendable (Result<Value, any Error>) -> Void]>([])
  func park(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
    parked.withLock { $0.append(completion) }
  }
  func release(_ index: Int, _ result: Result<Value, any Error>) {
    parked.withLock { $0[index] }(result)
  }
}

extension Result {
  /// The error of a failure; `nil` for a success.
  var failure: Failure? {
    guard case .failure(let error) = self else { return nil }
    return error
  }
}

// MARK: - A service that slows down under load (the AdaptiveLimits guide)

/// A service on a `TestClock` that serves `capacity` calls at once in 10 ms: a call's latency
/// is 10 ms × max(1, in flight / capacity), and a call that would take over 100 ms fails with
/// `TimeoutError` at 100 ms. Calls complete from the clock's timers, on the thread that
/// advances it, so what an example prints is the same every time.
final class SimulatedService: Sendable {
  private struct State {
    var capacity: Int
    var inFlight = 0
    var calling = true
  }
  private let state: Mutex<State>
  private let clock: TestClock

  init(capacity: Int, clock: TestClock) {
    state = Mutex(State(capacity: capacity))
    self.clock = clock
  }

  /// A change applies to the calls that start after it.
  var capacity: Int {
    get { state.withLock { $0.capacity } }
    set { state.withLock { $0.capacity = newValue } }
  }

  var call: AsyncFunc<Int, Int> {
    AsyncFunc(name: "service") { [self] input, complete in
      let latency = state.withLock { state -> Duration in
        state.inFlight += 1
        return .milliseconds(10) * max(1, Double(state.inFlight) / Double(state.capacity))
      }
      let timeout = Duration.milliseconds(100)
      _ = clock.scheduleTimer(at: clock.now.advanced(by: min(latency, timeout))) { [self] in
        state.withLock { $0.inFlight -= 1 }
        complete(latency > timeout ? .failure(TimeoutError(duration: timeout)) : .success(input))
      }
    }
  }

  /// Starts `clients` callers that call through `limiter` again as soon as a call ends, until
  /// ``stop()``.
  func callBackToBack(clients: Int, through limiter: Limiter) {
    let limited = call.limited(by: limiter)
    for client in 0..<clients { keepCalling(client, limited) }
  }

  /// Stops the callers, and lets the calls under way end.
  func stop() {
    state.withLock { $0.calling = false }
    while let next = clock.nextDeadline { clock.advance(to: next) }
  }

  private func keepCalling(_ client: Int, _ limited: AsyncFunc<Int, Int>) {
    limited.run(client) { [self] _ in
      guard state.withLock({ $0.calling }) else { return }
      keepCalling(client, limited)
    }
  }
}
