/*:
 # Batch upload

 The HoneyBee article's hardest case. The user picks dozens of media references to upload.
 Each one is *exported* (turned into a `Media` object, computation-heavy) and then
 *uploaded* (network, sometimes fails for a moment). The requirements:

 - uploads in parallel, but at most 4 at once, so the network card is not flooded;
 - exports one at a time, and never on the main queue;
 - the upload, and only the upload, is retried once;
 - the upload runs on its Core Data context's queue;
 - the four UI callbacks run on the main queue;
 - a per-item completion for every reference, success or failure;
 - victory if no more than half fail, otherwise one error.

 The hand-written GCD version in the article is 75 lines of semaphores and counters. Here
 it is a handful of lines, each saying one requirement.
 */
import AsyncCombinators
import Dispatch
import Synchronization

/*:
 ## The app, faked

 A `Media`, an export that fails for expired references, an upload that fails once for
 "flaky" ones and always for "bad" ones, and a context that runs blocks on its own queue,
 as `NSManagedObjectContext.perform` does.
 */
struct Media: Sendable {
  let ref: String
}

enum UploadError: Error {
  case expired(String)
  case network(String)
}

let ui = DispatchQueue(label: "ui")  // The main queue in an app.
let background = DispatchQueue(label: "background", attributes: .concurrent)
let network = DispatchQueue(label: "network", attributes: .concurrent)

struct ManagedObjectContext: BlockPerformer {
  let queue = DispatchQueue(label: "context")
  func perform(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }
}
let context = ManagedObjectContext()

let uploadAttempts = Mutex<[String: Int]>([:])

func export(_ ref: String, completion: @escaping @Sendable (Media?, (any Error)?) -> Void) {
  background.async {
    if ref.hasPrefix("expired") {
      completion(nil, UploadError.expired(ref))
    } else {
      completion(Media(ref: ref), nil)
    }
  }
}

func upload(_ media: Media, completion: @escaping @Sendable ((any Error)?) -> Void) {
  let attempt = uploadAttempts.withLock { attempts in
    attempts[media.ref, default: 0] += 1
    return attempts[media.ref]!
  }
  network.asyncAfter(deadline: .now() + .milliseconds(10)) {
    let fails = media.ref.hasPrefix("bad") || (media.ref.hasPrefix("flaky") && attempt == 1)
    completion(fails ? UploadError.network(media.ref) : nil)
  }
}

/*:
 The four UI callbacks of the article. In an app they update a progress bar and show alerts.
 */
func errorHandler(_ error: any Error) { print("error: \(error)") }
func singleUploadCompletion(_ ref: String) { print("finished \(ref)") }
func singleUploadSuccess(_ media: Media) { print("uploaded \(media.ref)") }
func totalProcessSuccess() { print("victory") }

/*:
 ## The recipe

 Lift each legacy function once. `valueOrError` turns the Objective-C style
 `(Media?, Error?)` callback into a result, and treats "neither" as a contract violation
 instead of trusting it never happens.
 */
let exportMedia = AsyncFunc<String, Media>.valueOrError(name: "export", export)
let uploadMedia = AsyncFunc<Media, Media>(name: "upload") { media, complete in
  upload(media) { error in complete(error.map { .failure($0) } ?? .success(media)) }
}
let onCompletion = AsyncFunc<String, Void>.sync(name: "singleUploadCompletion") {
  singleUploadCompletion($0)
}
let onSuccess = AsyncFunc<Media, Void>.sync(name: "singleUploadSuccess") {
  singleUploadSuccess($0)
}
let onVictory = AsyncFunc<[Void], Void>.sync(name: "totalProcessSuccess") { _ in
  totalProcessSuccess()
}
let onError = AsyncFunc<Result<Void, any Error>, Void>.sync(name: "errorHandler") { result in
  if case .failure(let error) = result { errorHandler(error) }
}

/*:
 One item: export off the main queue, one at a time across *all* items (`limit(1)` makes one
 shared gate), then upload on the context with one retry — the performer inside the retry, so
 every attempt starts on the context — then celebrate on the UI queue. `finally` reports the
 reference whatever happened.
 */
let uploadOne =
  (exportMedia.on(background).limit(1)
  +> uploadMedia.on(context).retry(1)
  +> onSuccess.on(ui))
  .finally(onCompletion.on(ui))

/*:
 The batch: at most 4 items at once, victory if no more than half fail. `settled()` turns the
 outcome into a value so the error handler, too, is a stage that runs on the UI queue.
 */
let batchUpload =
  (uploadOne.concurrentMap(limit: 4, acceptableFailure: .ratio(0.5))
  +> onVictory.on(ui))
  .settled() +> onError.on(ui)

example("The recipe reads like the requirements") {
  print(uploadOne)
  // prints (export.on(background).limit(1) +> upload.on(ManagedObjectContext).retry(1)
  //   +> singleUploadSuccess.on(ui)).finally(singleUploadCompletion.on(ui))
}

example("Two of eight fail: victory") {
  let refs = ["good-1", "flaky-2", "good-3", "expired-4", "good-5", "bad-6", "good-7", "flaky-8"]
  try await batchUpload(refs)
  // prints "finished …" once per reference, "uploaded …" for the six that made it,
  // then "victory". flaky-2 and flaky-8 were uploaded on their second attempt.
}

example("Five of eight fail: one error") {
  let refs = ["bad-a", "bad-b", "good-c", "bad-d", "expired-e", "good-f", "bad-g", "good-h"]
  try await batchUpload(refs)
  // prints a few "finished …" lines, then one
  // error: FailureRateExceeded: 5 of 8 elements failed, tolerance .ratio(0.5) (…)
  // The items still in flight when the verdict came were cancelled.
}

/*:
 What the recipe does not contain is as telling: no semaphore (waiting items are entries in a
 queue, not blocked threads), no counter of successes, no `DispatchGroup`, no
 `DispatchQueue.main.async` sprinkled through callbacks, and no way to call a completion twice.
 */
