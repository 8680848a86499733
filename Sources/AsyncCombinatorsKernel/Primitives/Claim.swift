import Synchronization

// The two races every join, race, timer, flight, batch and waiter of the library runs, decided
// in one place:
//
// - *First one wins* (`Claim`): several threads end the same thing (a result, a failure, a
//   timer, a cancellation); exactly one of them may act.
// - *Register, then keep if live, else take back* (`Keeper`, and `keepOrRevoke` under an owner's lock): a handler is
//   registered (on a token, on a timer queue) before its owner can store it, since the
//   registration may run the handler at once; by the time the owner stores it, the work it
//   guards may have ended. The handle is kept if the work is still live, and taken back by
//   whoever ends the work; otherwise the registering thread takes it back itself. Never both,
//   never neither.
//
// A `Keeper`'s states, one atomic word:
//
//         keep(handle)            end()
//   open ─────────────▶ kept ─────────────▶ ended     end() hands `handle` to its caller
//     │                                       ▲
//     └───────────────── end() ───────────────┘       a later keep(handle) takes it back
//
// `end()` moves to `ended` from either state; only its first call wins.

/// First one wins: of any number of threads calling ``claim()``, exactly one gets `true`.
///
/// Store it as a `let` of a class. A claim is one atomic exchange and never allocates; a
/// winner's writes before the claim are visible to a loser after its failed claim.
package struct Claim: ~Copyable, Sendable {
  private let won = Atomic<Bool>(false)

  package init() {}

  /// Whether this call is the first: `true` for exactly one caller, ever.
  package func claim() -> Bool {
    !won.exchange(true, ordering: .acquiringAndReleasing)
  }

  /// Whether some caller has claimed it. Only a hint while claims may race: act on
  /// ``claim()``.
  package var isClaimed: Bool { won.load(ordering: .acquiring) }
}

/// A registration that can be taken back: a handler on a token, a scheduled timer, or both.
@usableFromInline
package protocol Revocable: Sendable {
  /// Takes the registration back; its handler, if it has not run, never runs.
  func revoke()
}

extension CancellationToken.Registration: Revocable {
  @usableFromInline
  package func revoke() { remove() }
}

extension ScheduledTimer: Revocable {
  package func revoke() { cancel() }
}

/// A timer and the handler on a token that race it: taken back together.
package struct ArmedTimer: Revocable {
  package let timer: ScheduledTimer
  package let registration: CancellationToken.Registration

  package init(timer: ScheduledTimer, registration: CancellationToken.Registration) {
    self.timer = timer
    self.registration = registration
  }

  package func revoke() {
    timer.cancel()
    registration.remove()
  }
}

/// Keeps the handle of a registration made for some work until that work ends, when
/// whichever ends it takes the handle back (see the state diagram at the top of this file).
///
/// Subclass it: the handle then lives in the owner's own allocation, and the closures that
/// the registration holds can capture the owner alone, which needs no allocation of its own.
///
/// `@unchecked Sendable`: `handle` is written only by the one ``keep(_:)``, before its
/// releasing exchange publishes `kept`, and read only by the one ``end()`` whose acquiring
/// exchange saw `kept` (or by `deinit`, alone): the atomic orders every access to it.
@usableFromInline
package class Keeper<Handle: Revocable>: @unchecked Sendable {
  private enum Stage: UInt8 {
    case open = 0
    case kept = 1
    case ended = 2
  }

  private let stage = Atomic<UInt8>(Stage.open.rawValue)
  private var handle: Handle?

  @usableFromInline
  package init() {}

  /// Keeps `handle` if the work is still live; otherwise takes it back now. Call it once.
  ///
  /// - Returns: Whether it was kept.
  @discardableResult
  package final func keep(_ handle: Handle) -> Bool {
    self.handle = handle
    // Acquiring as well: a keeper that finds the work ended sees what its ender wrote before.
    let (kept, _) = stage.compareExchange(
      expected: Stage.open.rawValue, desired: Stage.kept.rawValue,
      ordering: .acquiringAndReleasing)
    if kept { return true }
    // Ended meanwhile: `end()` found nothing kept and read nothing.
    self.handle = nil
    handle.revoke()
    return false
  }

  /// Ends the work: the first call wins, and gets the handle kept so far (`nil` if
  /// ``keep(_:)`` has not run yet: it will take it back itself). Take it back, or use it.
  ///
  /// - Returns: `nil` for every call but the first; else whether a handle was kept, and it.
  package final func end() -> Handle?? {
    let before = stage.exchange(Stage.ended.rawValue, ordering: .acquiringAndReleasing)
    switch Stage(rawValue: before) {
    case .open: return .some(nil)
    case .kept: return .some(handle.take())
    default: return nil
    }
  }

  /// Ends the work, as ``end()`` does, and takes back the handle kept so far.
  ///
  /// - Returns: Whether this call was the first.
  @discardableResult
  package final func endAndRevoke() -> Bool {
    guard let kept = end() else { return false }
    kept?.revoke()
    return true
  }

  /// Whether the work has ended. Only a hint while ends may race: act on ``end()``.
  package final var hasEnded: Bool { stage.load(ordering: .acquiring) == Stage.ended.rawValue }
}

/// Keeps `handle` through `keep`, which an owner runs under its own lock to store it where
/// the work's end finds it, and returns `false` if the work has ended meanwhile; then takes
/// `handle` back. The lock-held twin of ``Keeper/keep(_:)``, for an owner whose state says
/// whether the work is live (a flight's seats, a batch's watches, a token's parent link).
///
/// - Returns: Whether it was kept.
@discardableResult
package func keepOrRevoke<Handle: Revocable>(_ handle: Handle, _ keep: (Handle) -> Bool) -> Bool {
  if keep(handle) { return true }
  handle.revoke()
  return false
}
