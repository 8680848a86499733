/// A fold whose elements start as its gate admits them.
package protocol FoldStarter: AnyObject, Sendable {
  /// The gate admitted the next element: start it, or give the slot straight back.
  func startNext()
}

/// The gate of a limited fold: its elements take their slots one by one as it admits them.
///
/// Not generic, so that the folds, a layer up, call the admission core's code as this module
/// compiles it for its one waiter, ``FoldSlots``: keep it, and its waiter, in this module
/// (Performance.md, "What the code's shape buys, and the check that holds it").
package final class FoldGate: Sendable {
  private let gate: Admission<FoldSlots>

  /// - Parameter capacity: The most elements in flight at once.
  package init(capacity: Int) { gate = Admission(capacity: capacity) }

  /// Queues `runs` elements of `fold`, admitted one by one in order; cancelling `token` turns
  /// away those not yet admitted.
  package func enter(_ fold: any FoldStarter, waitsOn token: CancellationToken, runs: Int) {
    gate.enter(FoldSlots(fold, waitsOn: token), runs: runs)
  }

  /// An element's slot is free.
  package func leave() { gate.leave() }
}

/// The waiter that stands in a limited fold's gate for every element not yet started; each
/// admission starts the next one.
///
/// Its fold reacts to its own cancellation, and its gate never rejects, so being turned away
/// needs nothing more. `place` is guarded by the gate's lock, the rest are `let`s: that is what
/// makes the `@unchecked Sendable` safe.
package final class FoldSlots: AdmissionWaiter, @unchecked Sendable {
  package var place = AdmissionPlace<FoldSlots>()
  package let waitsOn: CancellationToken
  private let fold: any FoldStarter

  package init(_ fold: any FoldStarter, waitsOn token: CancellationToken) {
    self.fold = fold
    waitsOn = token
  }

  package func admitted(_: AnyValue) { fold.startNext() }
  package func turnedAway() {}
  package func rejected(_: LimitExceeded) {}
}
