// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "AsyncCombinators",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "AsyncCombinators", targets: ["AsyncCombinators"]),
    .library(name: "AsyncCombinatorsTesting", targets: ["AsyncCombinatorsTesting"]),
  ],
  targets: [
    // The layers, each depending only on those below it (Architecture.md's layer table).
    .target(name: "AsyncCombinatorsKernel"),
    .target(name: "AsyncCombinatorsCore", dependencies: ["AsyncCombinatorsKernel"]),
    .target(name: "AsyncCombinatorsPromise", dependencies: ["AsyncCombinatorsCore"]),
    .target(
      name: "AsyncCombinators",
      dependencies: ["AsyncCombinatorsKernel", "AsyncCombinatorsCore", "AsyncCombinatorsPromise"]),
    .target(name: "AsyncCombinatorsTesting", dependencies: ["AsyncCombinators"]),
    .target(name: "TourScenarios", dependencies: ["AsyncCombinators", "AsyncCombinatorsTesting"]),
    .executableTarget(name: "Tour", dependencies: ["TourScenarios"]),
    .executableTarget(
      name: "Benchmarks", dependencies: ["AsyncCombinators", "AsyncCombinatorsTesting"]),
    // The allocation check `.ci/allocations` runs: allocations per run of the main paths.
    .target(name: "CAllocationCounter"),
    .executableTarget(
      name: "AllocationChecks", dependencies: ["AsyncCombinators", "CAllocationCounter"]),
    .testTarget(
      name: "AsyncCombinatorsTests", dependencies: ["AsyncCombinators", "AsyncCombinatorsTesting"]),
    .testTarget(name: "TourTests", dependencies: ["TourScenarios", "AsyncCombinators"]),
  ],
  swiftLanguageModes: [.v6]
)
