import Synchronization

/// Decides a race between completions: exactly one `claim()` returns `true`.
final class Once: Sendable {
  private let claimed = Atomic<Bool>(false)

  func claim() -> Bool {
    !claimed.exchange(true, ordering: .acquiringAndReleasing)
  }
}
