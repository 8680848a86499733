import AsyncCombinators
import Foundation
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct VersionTests {
  /// The package's top directory, found from this file's place in it.
  static let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  @Test func the_version_is_semantic_and_is_the_newest_entry_of_the_changelog() throws {
    let parts = asyncCombinatorsVersion.split(separator: ".", omittingEmptySubsequences: false)
    #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
    let changelog = try String(
      contentsOf: Self.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
    let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }
    #expect(newest?.hasPrefix("## \(asyncCombinatorsVersion) ") == true)
  }

  @Test func the_readme_names_the_version_the_manifest_lines_and_the_platforms() throws {
    let readme = try String(
      contentsOf: Self.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    #expect(readme.contains("from: \"\(asyncCombinatorsVersion)\""))
    #expect(readme.contains(".product(name: \"AsyncCombinators\", package: \"AsyncCombinators\")"))
    for platform in ["macOS 15", "iOS 18", "tvOS 18", "watchOS 11", "visionOS 2", "Linux"] {
      #expect(readme.contains(platform), "README.md does not name \(platform)")
    }
  }
}
