import AsyncCombinatorsKernel

/// The version of AsyncCombinators this code is: the git tag of its release, and the newest
/// entry of its `CHANGELOG.md`.
///
/// Releases follow Semantic Versioning, tagged by the bare version (`1.0.0`, no `v`). Log it
/// beside a bug report, or check it where behaviour changed between releases.
///
/// ```swift
/// print(asyncCombinatorsVersion)
/// // prints 1.0.0
/// ```
public let asyncCombinatorsVersion = "1.0.0"
