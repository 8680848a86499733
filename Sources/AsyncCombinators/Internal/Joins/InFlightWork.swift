import Synchronization

/// Counts the callback bodies that a limit's slot, or a fold's element, has started and that
/// have not yet called back or released their completion — including bodies of runs that were
/// cancelled, timed out or lost a race, whose results were delivered long ago.
///
/// A limit is about real work: the slot is given back when this count reaches zero, not when
/// the run's result is delivered. The count starts at one, the hold of the result still to
/// come, which the owner gives up with ``leave()`` once it has delivered that result. It
/// travels on the run's token (children inherit it), so every stage started on that token or
/// its children, however deeply nested in modifiers, counts. A nested count holds one on the
/// count around it until it is itself quiet.
///
/// Zero is final: ``enter()`` refuses to count once the work is quiet, and the stage it was
/// asked for then finds its token cancelled (a scope goes quiet early only by cancellation).
///
/// What quiet frees is a subclass's ``becameQuiet()``: the object that owns the slot (a
/// limit's run, a fold's element) is its own count, rather than an object beside it. Stages
/// count in it through a child token made with ``CancellationToken/makeChild(countingIn:)``.
///
/// `@unchecked Sendable`, with no lock: the count is atomic and `enclosing` is a `let`. The
/// class is not final, so the compiler cannot check its subclasses; each keeps its own state
/// safe and says how.
class InFlightWork: @unchecked Sendable {
  private let count = Atomic<Int>(1)
  private let enclosing: InFlightWork?

  /// - Parameter enclosing: The count around this one, if any: it holds one for this count
  ///   until this one is quiet.
  init(within enclosing: InFlightWork?) {
    self.enclosing = enclosing?.enter() == true ? enclosing : nil
  }
  /// Called once, on the thread whose ``leave()`` brings the count to zero: free the slot.
  func becameQuiet() {}

  /// Counts one more body; `false` (and nothing counted) once the work is quiet.
  final func enter() -> Bool {
    var current = count.load(ordering: .relaxed)
    while current > 0 {
      let (exchanged, original) = count.weakCompareExchange(
        expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
      if exchanged { return true }
      current = original
    }
    return false
  }

  /// Counts one body out, or the owner's hold on the result.
  final func leave() {
    guard count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
    becameQuiet()
    enclosing?.leave()
  }
}
