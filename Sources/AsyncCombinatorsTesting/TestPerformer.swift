import AsyncCombinators

/// A ``BlockPerformer`` that holds every block until the test runs it.
///
/// Give it to `on(_:)` and the hop happens when, and on the thread where, the test says:
/// ``runNext()`` runs the oldest held block, ``runAll()`` runs blocks until none is held
/// (including blocks that the ones it runs hand over). Nothing runs by itself, so a test can
/// check what happened before the hop, cancel during it, or interleave two performers.
///
/// ```swift
/// let ui = TestPerformer()
/// let show = AsyncFunc<Int, Int>.sync(name: "show") { $0 * 10 }.on(ui)
/// show.run(4) { print($0) }
/// print(ui.pendingCount)
/// ui.runAll()
/// // prints 1
/// // prints success(40)
/// ```
///
/// Named like ``TestClock``: the performer a test owns.
public final class TestPerformer: BlockPerformer {
  private let held = Locked<[@Sendable () -> Void]>([])

  /// A performer with nothing held.
  public init() {}

  /// Holds `work` until the test runs it.
  public func perform(_ work: @escaping @Sendable () -> Void) {
    held.withLock { $0.append(work) }
  }

  /// How many blocks are held.
  public var pendingCount: Int { held.withLock { $0.count } }

  /// Runs the oldest held block on the calling thread.
  ///
  /// - Returns: Whether there was one.
  @discardableResult
  public func runNext() -> Bool {
    let next = held.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    guard let next else { return false }
    next()
    return true
  }

  /// Runs held blocks, oldest first, on the calling thread, until none is held.
  ///
  /// - Returns: How many ran.
  @discardableResult
  public func runAll() -> Int {
    var count = 0
    while runNext() { count += 1 }
    return count
  }
}
