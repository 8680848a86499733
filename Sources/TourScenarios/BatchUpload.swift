import AsyncCombinators
import Synchronization

/// The export and the upload of seed 000's batch upload, faked. A reference's prefix decides
/// its fate: `good`, `flaky` (its first upload fails), `bad` (every upload fails) or
/// `expired` (its export fails).
enum UploadWork {
  struct Media: Sendable, CustomStringConvertible {
    var ref: String
    var description: String { ref }
  }

  enum UploadError: Error {
    case expired(String)
    case network(String)
  }

  /// Turns a reference into `Media` in 5 ms: the computation-heavy step.
  static let export = FakeNetwork.stage("export", milliseconds: 5) {
    (ref: String) throws -> Media in
    guard !ref.hasPrefix("expired") else { throw UploadError.expired(ref) }
    return Media(ref: ref)
  }

  /// Sends `Media` in 20 ms: the step that sometimes fails for a moment.
  static func upload() -> AsyncFunc<Media, Media> {
    let server = Server()
    return FakeNetwork.stage("upload", milliseconds: 20) { media in
      let attempt = server.attempt(media.ref)
      let fails = media.ref.hasPrefix("bad") || (media.ref.hasPrefix("flaky") && attempt == 1)
      guard !fails else { throw UploadError.network(media.ref) }
      return media
    }
  }

  /// Counts the upload attempts of each reference.
  private final class Server: Sendable {
    private let attempts = Mutex<[String: Int]>([:])

    /// Counts one more attempt at `ref` and returns its number, from 1.
    func attempt(_ ref: String) -> Int {
      attempts.withLock { attempts in
        attempts[ref, default: 0] += 1
        return attempts[ref]!
      }
    }
  }
}

extension Tour {
  /// Seed 000's hardest case: many items, at most 4 at once, exports one at a time, the upload
  /// retried once, and victory if no more than half fail.
  public static let batchUpload = Scenario(
    title: "batch upload",
    story: """
      The HoneyBee article's batch upload, with fakes: at most 4 items at once, exports one \
      at a time (limit(1) is one gate shared by every item), each upload retried once, and \
      success while no more than half of the items fail. expired-4 fails its export, bad-6 \
      both uploads, flaky-2 only its first: 2 of 6 fail, so the batch succeeds.
      """
  ) {
    let uploadOne = UploadWork.export.limit(1) +> UploadWork.upload().retry(1)
    let batch = uploadOne.concurrentMap(limit: 4, acceptableFailure: .ratio(0.5))
    let refs = ["good-1", "flaky-2", "good-3", "expired-4", "good-5", "bad-6"]
    // An export frees the gate before its item's upload starts, so the next export is due
    // before that upload can end: both are delivered on the fake network's one queue, and
    // the next item's upload starts while the first is still running.
    return [
      await Traced.run(
        "batchUpload", batch, refs,
        expecting: [.oneAtATime("export"), .overlap("upload", "upload")])
    ]
  }
}
