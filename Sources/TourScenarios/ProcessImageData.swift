import AsyncCombinators

/// The two downloads, the decoder and the cleanup of seed 000's `processImageData`, faked.
enum ImageWork {
  struct Resource: Sendable, CustomStringConvertible {
    var path: String
    var description: String { path }
  }

  struct Image: Sendable, CustomStringConvertible {
    var steps: [String]
    var description: String { "Image(" + steps.joined(separator: ", ") + ")" }
  }

  static func loadWebResource(_ path: String) -> AsyncFunc<Void, Resource> {
    FakeNetwork.stage("load \(path)", milliseconds: 40) { Resource(path: path) }
  }

  static let decodeImage = FakeNetwork.stage("decodeImage", milliseconds: 20) {
    (profile: Resource, data: Resource) in Image(steps: ["decoded \(profile) + \(data)"])
  }

  static let dewarpAndCleanupImage = FakeNetwork.stage("dewarpAndCleanupImage", milliseconds: 10) {
    (image: Image) in Image(steps: image.steps + ["dewarped"])
  }
}

extension Tour {
  /// Seed 000's `processImageData`: two downloads at once, then decode, then clean up.
  public static let processImageData = Scenario(
    title: "processImageData",
    story: """
      The pyramid of four nested callbacks, as one line. The two 40 ms downloads do not \
      depend on each other, so <> runs them at once; decodeImage waits for both, dewarp for \
      decode. About 70 ms, where the nested callbacks, one download after the other, take 110.
      """
  ) {
    let profile = ImageWork.loadWebResource("dataprofile.txt")
    let data = ImageWork.loadWebResource("imagedata.dat")
    let processImageData =
      profile <> data +> ImageWork.decodeImage +> ImageWork.dewarpAndCleanupImage
    return [
      await Traced.run(
        "processImageData", processImageData, (),
        expecting: [
          .overlap("load dataprofile.txt", "load imagedata.dat"),
          .steps(["load dataprofile.txt", "decodeImage", "dewarpAndCleanupImage"]),
          .steps(["load imagedata.dat", "decodeImage"]),
        ])
    ]
  }
}
