import AsyncCombinatorsKernel

/// A join whose elements hold slots, told when one element's bodies are all done.
protocol SlotJoin: StageParent {
  func slotFreed()
}

/// One element of a limited fold, array or stream: where it reports (its result goes to the
/// join at once), the count of its bodies in flight, which gives the element's slot back once
/// no body of it is left, and the token the element runs on.
///
/// It holds the join as a protocol rather than as a `FanOut<Element>`, so that it is not generic
/// over the element (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// `@unchecked Sendable`, with no lock: `join` is a `let`; `element` is set at `init`, read
/// by the starter before the element's bodies run, and let go once they are all done.
final class ElementWork: InFlightWork, StageParent, @unchecked Sendable {
  private let count: InFlightCount
  private let join: any SlotJoin
  /// The token the element runs on: a child of the fold's `branches` that counts in this
  /// element. Let go when quiet, as the token holds this element as its count.
  private(set) var element: (child: CancellationToken, link: CancellationToken.Registration)?

  init(_ join: any SlotJoin, childOf branches: CancellationToken) {
    self.join = join
    count = InFlightCount(within: branches.inFlight)
    element = branches.makeChild(countingIn: self)
  }

  /// No body of the element is left: the fold's token forwards its cancellation here no more.
  /// That handler held the element's token, and the token this object, until now.
  func enter() -> Bool { count.enter() }

  func leave() {
    guard count.leave() else { return }
    becameQuiet()
    count.leaveEnclosing()
  }

  /// Called once, on the thread whose ``leave()`` brings the count to zero.
  private func becameQuiet() {
    element.take()?.link.remove()
    join.slotFreed()
  }

  func childSucceeded(_ value: consuming AnyValue, tag index: Int) {
    join.childSucceeded(value, tag: index)
    leave()
  }

  func childFailed(_ error: any Error, tag index: Int) {
    join.childFailed(error, tag: index)
    leave()
  }
}
