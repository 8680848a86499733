import Synchronization

/// Something that can be asked to stop: a run, a network request, a timer.
///
/// ``CancellationToken`` conforms, and so can any request handle a legacy API returns;
/// ``AsyncFunc/cancellable(name:fileID:line:_:)`` forwards a run's cancellation to it.
public protocol Cancellable: Sendable {
  /// Asks the work to stop. Calling it more than once has no further effect.
  func cancel()
}

/// The cancellation state of one run, shared by every stage of that run.
///
/// ``AsyncFunc/run(_:completion:)`` returns a token; cancelling it completes the run with
/// `CancellationError` at once, stops stages that have not started yet, and fires the
/// handlers that running stages registered with ``onCancel(_:)``.
///
/// ```swift
/// let token = CancellationToken()
/// token.onCancel { print("stopped") }
/// token.cancel()
/// token.cancel()
/// // prints stopped   (once)
/// ```
///
/// Not `final` only so that the library's own per-run objects can be the token their inner run
/// is given (a `timeout` race is the token it cancels when time runs out), which spares them an
/// allocation; it is not `open`, so nothing outside the library can subclass it, and every
/// member is `final`. Its handlers and its link to its parent are behind the `state` lock (a
/// `Locked` mutex), `flag` is atomic and the rest are `let`s: that is what makes the
/// `@unchecked Sendable` safe, and each subclass says what guards its own state.
public class CancellationToken: Cancellable, @unchecked Sendable {
  /// The registered handlers, in a slab: a registration names its entry by index, so adding
  /// and removing one is O(1) however many others there are (a fold's elements all register
  /// on one token). Freed entries form a list through `nextFree` and are reused.
  private struct State {
    var entries: [Entry] = []
    var firstFree: Int32 = -1
    var live = 0
    /// Each registration's number, unique on this token; an entry with id 0 is free. Checked on
    /// removal, so a stale registration never removes a newer handler in a reused entry.
    var lastID: UInt64 = 0
    /// Once set, every handler has been taken to run and new ones run at once.
    var isCancelled = false
    /// How many entries removals have examined in all: one each, whatever the order. Tests
    /// read it to prove removal never scans.
    var entriesExamined = 0
    /// A child's handler on its parent, made when the child gets its first handler.
    var parentLink = ParentLink.unlinked
  }

  private struct Entry {
    var handler: (@Sendable () -> Void)?
    var id: UInt64
    var nextFree: Int32
  }

  private enum ParentLink {
    /// No handler of this token needs the parent's cancellation forwarded yet.
    case unlinked
    /// A thread is registering on the parent; `detach` or `cancel` meanwhile ends the link.
    case linking
    case linked(Registration)
    /// Detached or cancelled: the parent has nothing more to forward.
    case done
  }

  /// Read on every stage start, so it is an atomic rather than a trip through the lock.
  private let flag = Atomic<Bool>(false)
  private let state = Locked(State())
  /// A child is cancelled the moment its parent is: ``isCancelled`` reads up the chain, so no
  /// stage on a child can decide to start after the parent's ``cancel()`` has begun.
  private let parent: CancellationToken?
  /// Carried to child tokens so that tracing follows a run into parallel branches.
  let observer: (any RunObserver)?
  /// The count this token's stages join, when it is not itself one.
  private let inheritedInFlight: InFlightWork?
  /// Whether this token is an ``InFlightWork``, the count of the bodies started on it.
  private let countsItself: Bool

  /// The count of bodies in flight that stages started on this token join: the nearest
  /// ``InFlightWork`` among this token and its ancestors. `nil` outside any limit.
  ///
  /// A count's own token is the count (one object, not two), so it is not stored: a token
  /// holding itself would never be freed.
  final var inFlight: InFlightWork? {
    countsItself ? unsafeDowncast(self, to: InFlightWork.self) : inheritedInFlight
  }

  /// Creates a token that is not cancelled.
  public convenience init() {
    self.init(observer: nil)
  }

  init(observer: (any RunObserver)?) {
    self.observer = observer
    parent = nil
    inheritedInFlight = nil
    countsItself = false
  }

  /// A child of `parent`, as ``makeChild()`` makes, for a subclass to be.
  init(parent: CancellationToken) {
    self.parent = parent
    observer = parent.observer
    inheritedInFlight = parent.inFlight
    countsItself = false
  }

  /// A child of `parent` that is an ``InFlightWork``: its stages count in it.
  init(countingChildOf parent: CancellationToken) {
    self.parent = parent
    observer = parent.observer
    inheritedInFlight = nil
    countsItself = true
  }

  /// Whether ``cancel()`` has been called, on this token or on the one it is a child of.
  ///
  /// - Complexity: O(*d*) for a token nested *d* deep in the operations of its run; a handful.
  public final var isCancelled: Bool {
    if flag.load(ordering: .acquiring) { return true }
    // Every token holds its parent, and this one is alive while it is read, so the walk up
    // needs no references of its own: a retain and a release per ancestor, on every stage
    // start, were most of what this cost.
    guard var ancestor = parent.map(Unmanaged.passUnretained) else { return false }
    while true {
      let (cancelled, next) = ancestor._withUnsafeGuaranteedRef { token in
        (token.flag.load(ordering: .acquiring), token.parent.map(Unmanaged.passUnretained))
      }
      if cancelled { return true }
      guard let next else { return false }
      ancestor = next
    }
  }

  /// Whether this token itself has been cancelled (its handlers taken), whatever its parent.
  final var hasRunItsHandlers: Bool { flag.load(ordering: .acquiring) }

  /// Cancels the run: the handlers registered so far run once, on the calling thread.
  ///
  /// Cancellation takes effect before any handler runs: from the moment `cancel()` begins,
  /// ``isCancelled`` is `true` here and on every child, so a stage that has not yet decided to
  /// start never starts.
  ///
  /// - Complexity: O(*h*) for *h* registered handlers.
  public final func cancel() {
    // The entries themselves are taken, not their closures: an array of closures would wrap
    // each one in a thunk of its own.
    let (entries, link) = state.withLock { state -> ([Entry], Registration?) in
      guard !state.isCancelled else { return ([], nil) }
      state.isCancelled = true
      flag.store(true, ordering: .releasing)
      var link: Registration?
      if case .linked(let registration) = state.parentLink { link = registration }
      state.parentLink = .done
      defer {
        state.entries = []
        state.firstFree = -1
        state.live = 0
      }
      return (state.entries, link)
    }
    link?.remove()  // Cancelled on its own: the parent need not forward its cancellation.
    for entry in entries { entry.handler?() }
  }

  /// Registers work to do when the token is cancelled; runs it at once if it already is.
  ///
  /// Remove the registration when the work it guards has finished, so a long run does not
  /// collect handlers of stages that are long done.
  ///
  /// ```swift
  /// let token = CancellationToken()
  /// token.cancel()
  /// token.onCancel { print("already cancelled") }
  /// // prints already cancelled   (at once)
  /// ```
  ///
  /// - Parameter handler: Runs at most once, on the thread that cancels.
  /// - Returns: A registration whose ``Registration/remove()`` unregisters the handler.
  /// - Complexity: O(1), amortized.
  @discardableResult
  public final func onCancel(_ handler: @escaping @Sendable () -> Void) -> Registration {
    if isCancelled {
      handler()
      return Registration(token: nil, index: 0, id: 0)
    }
    let added = state.withLock { state -> (index: Int32, id: UInt64, link: Bool)? in
      guard !state.isCancelled else { return nil }
      state.lastID += 1
      let entry = Entry(handler: handler, id: state.lastID, nextFree: -1)
      let index: Int32
      if state.firstFree >= 0 {
        index = state.firstFree
        state.firstFree = state.entries[Int(index)].nextFree
        state.entries[Int(index)] = entry
      } else {
        index = Int32(state.entries.count)
        state.entries.append(entry)
      }
      state.live += 1
      var link = false
      if parent != nil, case .unlinked = state.parentLink {
        state.parentLink = .linking
        link = true
      }
      return (index, state.lastID, link)
    }
    guard let added else {
      handler()
      return Registration(token: nil, index: 0, id: 0)
    }
    if added.link { linkToParent() }
    return Registration(token: self, index: added.index, id: added.id)
  }

  /// A handler's place on a token, to take it off when it is no longer needed.
  public struct Registration: Sendable {
    fileprivate let token: CancellationToken?
    /// The entry's index, or -1 for the link of a child made by `makeChild()`.
    fileprivate let index: Int32
    fileprivate let id: UInt64

    /// Unregisters the handler if it has not run yet. Idempotent.
    ///
    /// - Complexity: O(1); it visits no other registration.
    public func remove() {
      guard let token else { return }
      if index < 0 { token.detach() } else { token.removeHandler(index, id) }
    }
  }

  private func removeHandler(_ index: Int32, _ id: UInt64) {
    // Take the closure out under the lock, release it outside: releasing may run deinits.
    // It comes out in its entry, as a closure returned on its own would be wrapped in a thunk.
    let removed = state.withLock { state -> Entry? in
      let slot = Int(index)
      guard slot < state.entries.count else { return nil }
      state.entriesExamined += 1
      guard state.entries[slot].id == id else { return nil }
      let removed = state.entries[slot]
      state.entries[slot] = Entry(handler: nil, id: 0, nextFree: state.firstFree)
      state.firstFree = index
      state.live -= 1
      // The free list already covers a small slab, so it is kept as it is; a large one (a
      // fold's elements, once all have finished) is let go.
      if state.live == 0 && state.entries.count > 64 {
        state.entries = []
        state.firstFree = -1
      }
      return removed
    }
    _ = removed
  }

  /// The number of handlers registered and neither run nor removed; for tests.
  final var registrationCount: Int { state.withLock { $0.live } }

  /// How many entries all removals so far have examined; for tests.
  final var entriesExaminedByRemovals: Int { state.withLock { $0.entriesExamined } }

  /// Registers on the parent the handler that forwards its cancellation to this child.
  private func linkToParent() {
    guard let parent else { return }
    let registration = parent.onCancel { self.cancel() }
    let kept = state.withLock { state in
      guard case .linking = state.parentLink else { return false }
      state.parentLink = .linked(registration)
      return true
    }
    if !kept { registration.remove() }  // Detached or cancelled meanwhile.
  }

  /// Stops forwarding the parent's cancellation to this child's handlers: its work is done.
  private func detach() {
    let link = state.withLock { state -> Registration? in
      defer { state.parentLink = .done }
      if case .linked(let registration) = state.parentLink { return registration }
      return nil
    }
    link?.remove()
  }

  /// Stops forwarding the parent's cancellation to this child's handlers, as removing the
  /// link ``makeChild()`` returns does: for a child that is its own work's object.
  final func detachFromParent() { detach() }

  /// A token that is cancelled with this one, and can also be cancelled on its own.
  ///
  /// The child costs its parent nothing until it gets a handler of its own: its
  /// ``isCancelled`` reads the parent's state, and only its handlers need a registration on
  /// the parent to hear of the cancellation.
  ///
  /// - Returns: The child, and its link: remove the link once the child's work is done, so
  ///   the parent stops holding the child's handlers.
  final func makeChild() -> (child: CancellationToken, link: Registration) {
    let child = CancellationToken(parent: self)
    return (child, Registration(token: child, index: -1, id: 0))
  }
}

extension CancellationToken: CustomStringConvertible {
  /// `CancellationToken(cancelled)` or `CancellationToken(active)`.
  public final var description: String {
    isCancelled ? "CancellationToken(cancelled)" : "CancellationToken(active)"
  }
}
