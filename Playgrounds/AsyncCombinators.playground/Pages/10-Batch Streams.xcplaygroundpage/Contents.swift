/*:
 # 10. Batches at any size: streams, progress, every outcome

 Real batches (a photo library, a bucket listing, the rows of a query) are often too large to
 hold as an array, want to show progress while they run, and need to say which elements
 failed even when the failures were tolerated. Three tools cover that.

 ## Progress

 Every fold takes a `progress:` closure as its last argument. It is called as elements
 finish, on a lane of its own so that a slow closure holds up no element, never two calls at
 once; reports that pile up while it runs are coalesced into the newest, and the last call
 returns before the result.
 */
import AsyncCombinators
import Synchronization

let resize = delayed("resize", milliseconds: 5) { (photo: Int) -> String in
  guard photo % 10 != 7 else { throw PlaygroundError("photo \(photo) is corrupt") }
  return "photo-\(photo)-small.jpg"
}

example("progress of a batch of 20") {
  let batch = resize.concurrentMap(limit: 4, acceptableFailure: .ratio(0.1)) { progress in
    if progress.completed == progress.total { print(progress) }
  }
  print(try await batch(Array(1...20)).count, "resized")
  // prints 20/20 done (2 failed, 0 in flight)
  // prints 18 resized
}
/*:
 ## Every element's outcome

 `concurrentMapResults` keeps each element's `Result` in input order, so the tolerated
 failures stay visible. Beyond its tolerance it still fails the whole.
 */
example("which photos failed, and why") {
  let outcomes = try await resize.concurrentMapResults(limit: 4)(Array(1...20))
  for (index, outcome) in outcomes.enumerated() {
    if case .failure(let error) = outcome { print("photo \(index + 1): \(error)") }
  }
  // prints photo 7: photo 7 is corrupt
  // prints photo 17: photo 17 is corrupt
}
/*:
 ## Streams in, streams out

 `concurrentMap(over:limit:)` takes any `AsyncSequence` and returns one. It pulls from the
 source only as the consumer takes outputs (at most `limit` ahead, plus a reorder window of
 `limit` when ordered), so a million elements need no more memory than eight. Break out of
 the loop and the running elements are cancelled and the source is left alone.
 */
/// A million photos, produced one at a time as they are asked for, counting the asks.
final class PhotoLibrary: Sendable {
  let handedOut = Atomic<Int>(0)

  var photos: AsyncStream<Int> {
    AsyncStream(unfolding: {
      let photo = self.handedOut.add(1, ordering: .relaxed).newValue
      return photo <= 1_000_000 ? photo : nil
    })
  }
}

example("a stream of a million photos, taken until three are enough") {
  let library = PhotoLibrary()
  var taken = 0
  for try await small in resize.concurrentMap(
    over: library.photos, limit: 8, acceptableFailure: .count(5))
  {
    print(small)
    taken += 1
    if taken == 3 { break }
  }
  print("pulled no more than 3 + 2 * 8:", library.handedOut.load(ordering: .relaxed) <= 19)
  // prints photo-1-small.jpg
  // prints photo-2-small.jpg
  // prints photo-3-small.jpg
  // prints pulled no more than 3 + 2 * 8: true
}
