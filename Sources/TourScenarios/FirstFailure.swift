import AsyncCombinators

/// The error a fake download fails with.
struct NotFound: Error, CustomStringConvertible {
  var path: String
  var description: String { "NotFound(\(path))" }
}

extension Tour {
  /// A branch of `<>` fails: the whole fails at once and the other branch is cancelled.
  public static let firstFailureCancelsTheRest = Scenario(
    title: "the first failure cancels the rest",
    story: """
      missing.dat fails after 10 ms. The <> completes with that error at once and cancels \
      the 80 ms download still running: both bars end at 10 ms (▓ marks a stage that \
      failed, ▒ one that was cancelled), and decodeImage never starts.
      """
  ) {
    let missing = FakeNetwork.stage("load missing.dat", milliseconds: 10) {
      () throws -> ImageWork.Resource in throw NotFound(path: "missing.dat")
    }
    let slow = FakeNetwork.stage("load big.dat", milliseconds: 80) {
      ImageWork.Resource(path: "big.dat")
    }
    return [
      await Traced.run(
        "failure", slow <> missing +> ImageWork.decodeImage, (),
        expecting: [
          .overlap("load big.dat", "load missing.dat"), .failed("load missing.dat"),
          .cancelled("load big.dat"), .neverStarted("decodeImage"),
        ])
    ]
  }
}
