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
/// What quiet frees is the owner's: the object that owns the slot (a limit's run, a fold's
/// element) is its own count, rather than an object beside it, and keeps an
/// ``InFlightCount`` that does the counting. Stages count in it through a child token made
/// with ``CancellationToken/makeChild(countingIn:)``. A protocol rather than a base class: the
/// owners live in the layer above the kernel, which cannot subclass a kernel class.
package protocol InFlightWork: AnyObject, Sendable {
  /// Counts one more body; `false` (and nothing counted) once the work is quiet.
  func enter() -> Bool
  /// Counts one body out, or the owner's hold on the result.
  func leave()
}

/// The count an ``InFlightWork`` keeps: it starts at one, the owner's hold.
package struct InFlightCount: ~Copyable, Sendable {
  private let count = Atomic<Int>(1)
  private let enclosing: (any InFlightWork)?

  /// - Parameter enclosing: The count around this one, if any: it holds one for this count
  ///   until this one is quiet.
  package init(within enclosing: (any InFlightWork)?) {
    self.enclosing = enclosing?.enter() == true ? enclosing : nil
  }

  /// Counts one more body; `false` (and nothing counted) once the work is quiet.
  package func enter() -> Bool {
    var current = count.load(ordering: .relaxed)
    while current > 0 {
      let (exchanged, original) = count.weakCompareExchange(
        expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
      if exchanged { return true }
      current = original
    }
    return false
  }

  /// Counts one body out; `true` on the one call that brings the count to zero, after which the
  /// owner frees what quiet frees and then calls ``leaveEnclosing()``.
  package func leave() -> Bool {
    count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
  }

  /// Gives back the hold this count had on the one around it: once, after quiet.
  package func leaveEnclosing() { enclosing?.leave() }
}
