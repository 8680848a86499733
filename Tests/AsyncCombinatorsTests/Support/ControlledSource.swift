import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// An asynchronous sequence of `0, 1, 2, ...` (up to `count`, or without end) that counts
/// every pull, can check a condition at each pull, can throw at a given position, and says
/// when its iteration ended (its iterator was released).
///
/// Its iterator is deliberately not `Sendable`, as many real sources' are not.
struct ControlledSource: AsyncSequence, Sendable {
  typealias Element = Int

  /// What the test reads: pulls so far, and whether the iteration has ended.
  final class Probe: Sendable {
    private let pullCount = Atomic<Int>(0)
    let iterationEnded = Gate()

    init() {}

    var pulls: Int { pullCount.load(ordering: .sequentiallyConsistent) }
    fileprivate func pulled() -> Int {
      pullCount.add(1, ordering: .sequentiallyConsistent).newValue
    }
  }

  let probe = Probe()
  var count: Int? = nil
  var failAt: Int? = nil
  /// Called with the number of pulls so far (this one included), before the element is given.
  var onPull: @Sendable (Int) -> Void = { _ in }

  func makeAsyncIterator() -> Iterator {
    Iterator(source: self, end: EndOfIteration(probe))
  }

  struct Iterator: AsyncIteratorProtocol {
    let source: ControlledSource
    let end: EndOfIteration
    var position = 0

    mutating func next() async throws -> Int? {
      if let count = source.count, position >= count { return nil }
      source.onPull(source.probe.pulled())
      if position == source.failAt { throw TestError(position) }
      defer { position += 1 }
      return position
    }
  }

  /// Opens the probe's gate when the iterator holding it is released.
  final class EndOfIteration {
    let probe: Probe
    init(_ probe: Probe) { self.probe = probe }
    deinit { probe.iterationEnded.open() }
  }
}

@available(*, unavailable)
extension ControlledSource.Iterator: Sendable {}

/// A plain asynchronous sequence over an array, non-throwing.
struct ArraySource<Element: Sendable>: AsyncSequence, Sendable {
  let elements: [Element]

  init(_ elements: [Element]) { self.elements = elements }

  func makeAsyncIterator() -> Iterator { Iterator(elements: elements) }

  struct Iterator: AsyncIteratorProtocol {
    let elements: [Element]
    var position = 0

    mutating func next() async -> Element? {
      guard position < elements.count else { return nil }
      defer { position += 1 }
      return elements[position]
    }
  }
}
