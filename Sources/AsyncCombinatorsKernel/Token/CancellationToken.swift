import Dispatch
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
/// Its state word is atomic, its handlers and its link to its parent are behind their table's
/// lock, `parent` is written only by `deinit`, and the rest are `let`s: that is what makes the
/// `@unchecked Sendable` safe. Its unsafe references are in one place, with their safety
/// argument: `AtomicTaggedReference` and `UnownedReference`, in `TaggedReference.swift`.
public final class CancellationToken: Cancellable, @unchecked Sendable {
  /// The token's state in one atomic word: the flags below, and its handler table once it has
  /// one (see ``AtomicTaggedReference``).
  ///
  /// Every change is one atomic operation on the word, so a handler's first registration, a
  /// cancellation and a detach never miss each other. The table is made only for the first
  /// handler: most tokens a run makes inside (a timeout's race, a limited element) never get
  /// one.
  private let word = AtomicTaggedReference<HandlerTable>()

  private enum Flag {
    /// ``cancel()`` has begun on this token itself.
    static let cancelled: UInt = 1
    /// Its work is done: it no longer forwards its parent's cancellation to its handlers.
    static let detached: UInt = 2
  }

  /// The registered handlers, in a slab: a registration names its entry by index, so adding
  /// and removing one is O(1) however many others there are (a fold's elements all register
  /// on one token). Freed entries form a list through `nextFree` and are reused.
  ///
  /// `@unchecked Sendable`: everything in it is behind `state`'s lock.
  fileprivate final class HandlerTable: @unchecked Sendable {
    struct State {
      var entries: [Entry] = []
      var firstFree: Int32 = -1
      var live: Int32 = 0
      /// How many handlers have been registered, for the high half of their ids.
      var registered: UInt32 = 0
      /// Once set, the handlers are being run, one at a time, and new ones run at once.
      var isCancelled = false
      /// The thread running the handlers, while it does.
      var runner: UInt = 0
      /// Set once every handler has run: a later ``cancel()`` returns at once.
      var handlersDone = false
      /// Callers of ``cancel()`` waiting for the handlers another thread is running.
      var waiters: [DispatchSemaphore] = []
      /// How many entries removals have examined in all: one each, whatever the order. Tests
      /// read it to prove removal never scans.
      var entriesExamined = 0
      /// A child's handler on its parent, made when the child gets its first handler.
      var parentLink: ParentLink
      /// Why the token was cancelled, once decided: the first to set it wins (see `cause`).
      var cause: (any Error)?
    }

    let state: Locked<State>

    init(linked: Bool) {
      state = Locked(State(parentLink: linked ? .unlinked : .done))
    }

    /// The token's cause: `cause` if none is decided yet, else the one decided first.
    func settleCause(_ cause: any Error) -> any Error {
      state.withLock { state in
        if let decided = state.cause { return decided }
        state.cause = cause
        return cause
      }
    }

    /// The next handler still registered at or after `index`, taken off; `nil` once there is
    /// none, when the table is emptied and the callers waiting for the handlers are woken.
    func takeHandler(from index: inout Int) -> (@Sendable () -> Void)? {
      let (handler, waiters) = state.withLock {
        state -> ((@Sendable () -> Void)?, [DispatchSemaphore]) in
        while index < state.entries.count {
          defer { index += 1 }
          guard let handler = state.entries[index].handler else { continue }
          state.entries[index] = Entry(handler: nil, id: .max, nextFree: -1)
          state.live -= 1
          return (handler, [])
        }
        state.entries = []
        state.firstFree = -1
        state.live = 0
        state.handlersDone = true
        defer { state.waiters = [] }
        return (nil, state.waiters)
      }
      for waiter in waiters { waiter.signal() }
      return handler
    }
  }

  fileprivate struct Entry {
    var handler: (@Sendable () -> Void)?
    /// The registration's id: the entry's index in the low half and, in the high half, how
    /// many handlers the token had had registered before it. A free entry's id is `.max`. So a
    /// stale registration misses the handler that reused its entry, unless 2^32 registrations
    /// on one token came in between.
    var id: UInt64
    var nextFree: Int32
  }

  fileprivate enum ParentLink {
    /// No handler of this token needs the parent's cancellation forwarded yet.
    case unlinked
    /// A thread is registering on the parent; `detach` or `cancel` meanwhile ends the link.
    case linking
    /// The registration's id on the parent.
    case linked(UInt64)
    /// Detached, cancelled or without a parent: there is nothing more to forward.
    case done
  }

  /// A child is cancelled the moment its parent is: ``isCancelled`` reads up the chain, so no
  /// stage on a child can decide to start after the parent's ``cancel()`` has begun.
  ///
  /// Written only by `deinit`, which hands a parent held nowhere else to the thread's
  /// `Trampoline`: a chain of tokens nested 100,000 deep is then freed in a loop.
  private var parent: CancellationToken?
  /// The root of this token's tree, whose `cancellationsBegun` counts the cancellations begun
  /// anywhere in the tree; `nil` for a root. Unowned, which is safe while the chain of parents
  /// holds the root for as long as this token lives: keep that true. Why it is not a strong
  /// reference: Performance.md, "What the code's shape buys, and the check that holds it".
  private let root: UnownedReference<CancellationToken>?
  /// On a root: how many cancellations have begun in its tree, which is what a descendant's
  /// cached "not cancelled" is valid for.
  private let cancellationsBegun = Atomic<UInt>(0)
  /// The root's `cancellationsBegun` when this token and all its ancestors were last found not
  /// cancelled: until another cancellation begins in the tree, that still holds.
  private let clearAt = Atomic<UInt>(.max)
  /// What the token carries to its children: the observer, so that tracing follows a run into
  /// parallel branches, and the deadlines set around the work. One box, shared by reference with
  /// the children, and `nil` unless the run is traced or under a deadline: a plain run makes none
  /// (Performance.md, "What the code's shape buys, and the check that holds it").
  private let context: Context?

  private final class Context: Sendable {
    let observer: (any StageObserver)?
    let deadlines: DeadlineRecord?
    init(observer: (any StageObserver)?, deadlines: DeadlineRecord?) {
      self.observer = observer
      self.deadlines = deadlines
    }

    /// `context` with `deadlines` in place of its own; `nil` when there is nothing to carry.
    static func with(_ context: Context?, deadlines: DeadlineRecord?) -> Context? {
      if deadlines === context?.deadlines { return context }
      guard context?.observer != nil || deadlines != nil else { return nil }
      return Context(observer: context?.observer, deadlines: deadlines)
    }
  }

  /// What watches the run this token belongs to, if anything.
  package var observer: (any StageObserver)? { context?.observer }

  /// The deadlines set around the work of this token, the innermost first.
  package var deadlines: DeadlineRecord? { context?.deadlines }

  /// The count of bodies in flight that stages started on this token join: the one this
  /// token was made to count in, else its parent's. `nil` outside any limit.
  package let inFlight: (any InFlightWork)?

  /// Creates a token that is not cancelled.
  public convenience init() {
    self.init(observer: nil)
  }

  package init(observer: (any StageObserver)?, deadlines: DeadlineRecord? = nil) {
    context =
      observer == nil && deadlines == nil
      ? nil : Context(observer: observer, deadlines: deadlines)
    parent = nil
    root = nil
    inFlight = nil
  }

  /// A child of `parent`, as ``makeChild(countingIn:)`` makes, under `deadlines` (its
  /// parent's, or a record enclosing them).
  private init(
    parent: CancellationToken, countingIn work: (any InFlightWork)?, deadlines: DeadlineRecord?
  ) {
    self.parent = parent
    root = parent.root ?? UnownedReference(parent)
    context = Context.with(parent.context, deadlines: deadlines)
    inFlight = work ?? parent.inFlight
  }

  /// An untraced, uncounted child of `parent`, under `deadlines`.
  private init(parent: CancellationToken, deadlines: DeadlineRecord?) {
    self.parent = parent
    root = parent.root ?? UnownedReference(parent)
    context = deadlines.map { Context(observer: nil, deadlines: $0) }
    inFlight = nil
  }

  deinit {
    if var parent = parent.take(), isKnownUniquelyReferenced(&parent) {
      Trampoline.release(consume parent)
    }
  }

  /// The root of the token's tree: its `root`, or itself.
  private var treeRoot: CancellationToken { root?.object ?? self }

  /// Whether ``cancel()`` has begun on this token itself.
  private var isCancelledItself: Bool { word.load().flags & Flag.cancelled != 0 }

  /// Whether ``cancel()`` has been called, on this token or on the one it is a child of.
  ///
  /// - Complexity: O(1) while no cancellation begins in the token's tree (its run and the
  ///   operations nested in it); after one, a token nested *d* deep walks its *d* ancestors
  ///   once.
  public var isCancelled: Bool {
    if isCancelledItself { return true }
    guard let parent else { return false }
    // Read before the walk: a cancellation begun before the tree's count was raised is
    // visible to the walk (the count is raised after the flag is set, with release ordering).
    let epoch = treeRoot.cancellationsBegun.load(ordering: .acquiring)
    if clearAt.load(ordering: .relaxed) == epoch { return false }
    // The walk stops at an ancestor already found clear at this count: whatever is above
    // that one was clear too, so a deep nesting walks once.
    var ancestor = parent
    while true {
      if ancestor.isCancelledItself { return true }
      guard ancestor.clearAt.load(ordering: .relaxed) != epoch, let next = ancestor.parent
      else { break }
      ancestor = next
    }
    clearAt.store(epoch, ordering: .relaxed)
    return false
  }

  /// Whether ``cancel()`` has begun on this token itself (its handlers are taken, or being
  /// taken), whatever its parent.
  package var hasRunItsHandlers: Bool { isCancelledItself }

  /// Cancels the run: the handlers registered so far run once, on the calling thread.
  ///
  /// Cancellation takes effect before any handler runs: from the moment `cancel()` begins,
  /// ``isCancelled`` is `true` here and on every child, so a stage that has not yet decided to
  /// start never starts. When another thread is already cancelling the token, or a child of
  /// it (a timeout that fired, a newer run that superseded this one), `cancel()` returns once
  /// that thread has run every handler, so any caller can rely on them having run.
  ///
  /// The same as ``cancel(cause:)`` with a `CancellationError`.
  ///
  /// - Complexity: O(*h*) for *h* registered handlers.
  public func cancel() {
    cancel(orCause: nil)
  }

  /// Cancels the run, as ``cancel()`` does, and says why: ``cause`` reads `cause` here and on
  /// every child, unless the token or an ancestor was cancelled first, whose cause stays.
  ///
  /// ```swift
  /// struct Shutdown: Error {}
  /// let token = CancellationToken()
  /// token.cancel(cause: Shutdown())
  /// token.cancel(cause: CancellationError())
  /// print(token.cause is Shutdown)
  /// // prints true
  /// ```
  ///
  /// A run cancelled this way still completes with `CancellationError`: the cause is for the
  /// bodies, observers and logs.
  ///
  /// - Parameter cause: Why; the first cause given to a token or to an ancestor wins.
  /// - Complexity: O(*h*) for *h* registered handlers, plus O(*d*) for an ancestor *d* levels
  ///   up cancelled meanwhile.
  public func cancel(cause: any Error) {
    cancel(orCause: cause)
  }

  /// ``cancel(cause:)``, where `nil` stands for a plain ``cancel()``'s `CancellationError`.
  private func cancel(orCause cause: (any Error)?) {
    if isCancelledItself { return waitForHandlers() }
    // An ancestor cancelled first gives its cause: the first cause given wins.
    let inherited = parent.flatMap { $0.isCancelled ? $0.resolvedCause() : nil }
    let before: AtomicTaggedReference<HandlerTable>.Value
    if inherited == nil && cause == nil {
      // The common case needs no table: a cancelled token without one says `CancellationError`.
      before = word.setFlags(Flag.cancelled)
      guard before.flags & Flag.cancelled == 0 else { return waitForHandlers() }
      _ = word.object(in: before)?.settleCause(CancellationError())
    } else {
      // The cause goes in before the flag, so whoever sees the flag finds the cause.
      guard let table = causeTable() else { return waitForHandlers() }
      _ = table.settleCause(inherited ?? cause ?? CancellationError())
      before = word.setFlags(Flag.cancelled)
      guard before.flags & Flag.cancelled == 0 else { return waitForHandlers() }
    }
    // After the flag, before any handler: every `isCancelled` read that may have cached this
    // token's descendants as clear now walks again.
    treeRoot.cancellationsBegun.add(1, ordering: .releasing)
    // No table: no handler was ever registered, and any registration from now on sees the flag.
    guard let table = word.object(in: before) else { return }
    let link = table.state.withLock { state -> UInt64? in
      state.isCancelled = true
      state.runner = currentThreadID()
      defer { state.parentLink = .done }
      if case .linked(let id) = state.parentLink { return id }
      return nil
    }
    // One at a time, taken under the lock as it runs: a registration removed meanwhile (its
    // work has finished) is never run.
    var next = 0
    while let handler = table.takeHandler(from: &next) {
      handler()
    }
    // Cancelled on its own: the parent need not forward its cancellation any more. Kept until
    // the handlers have run, so that a caller of the parent's `cancel()` meanwhile reaches
    // this token and waits for them, as a second caller of this token's `cancel()` does: a
    // `commit` under a `timeout` that fired holds back its run's `cancel()` too.
    if let link { parent?.removeHandler(link) }
  }

  /// Why the token was cancelled: the first cause given to it or to an ancestor, by
  /// ``cancel(cause:)`` (`CancellationError` for ``cancel()``); `nil` while it is not cancelled.
  ///
  /// A child cancelled through its parent has the parent's cause. Once set, the cause never
  /// changes, and every reader sees the same one, whichever of a token's own cancellation and
  /// an ancestor's came first. The library's cancellers each give theirs: `timeout` its
  /// ``TimeoutError``, `latest()` a ``SupersededError``, a failing join the failure that
  /// stopped it, `race` and `hedged` a ``LostRaceError`` to the attempts that lost.
  ///
  /// ```swift
  /// let run = CancellationToken()
  /// run.cancel(cause: TimeoutError(duration: .seconds(2)))
  /// print(run.cause.map { "\($0)" } ?? "none")
  /// // prints TimeoutError: no result within 2.0 seconds
  /// ```
  ///
  /// - Complexity: O(1) once read; the first read on a token cancelled through an ancestor
  ///   *d* levels up is O(*d*).
  public var cause: (any Error)? {
    guard isCancelled else { return nil }
    return resolvedCause()
  }

  /// The cause of a token that is cancelled, or has a cancelled ancestor; `nil` if neither.
  ///
  /// Walks up to the nearest token whose cause is decided, then decides it on each token on
  /// the way back down, each under its table's lock: a token's own cancellation racing an
  /// ancestor's is decided once, so every reader sees the same cause.
  private func resolvedCause() -> (any Error)? {
    var undecided: [CancellationToken] = []
    var token = self
    var found: (any Error)?
    while true {
      if let decided = token.decidedCause() {
        found = decided
        break
      }
      undecided.append(token)
      guard let next = token.parent else { break }
      token = next
    }
    guard var cause = found else { return nil }
    for token in undecided.reversed() {
      cause =
        token.causeTable()?.settleCause(cause)
        ?? CancellationError()  // Cancelled meanwhile without a table.
    }
    return cause
  }

  /// This token's own cause if it is decided: set, or the token cancelled by ``cancel()``.
  private func decidedCause() -> (any Error)? {
    let current = word.load()
    let cancelled = current.flags & Flag.cancelled != 0
    guard let table = word.object(in: current) else { return cancelled ? CancellationError() : nil }
    if let cause = table.state.withLock({ $0.cause }) { return cause }
    // Flagged with no cause: a plain `cancel()` is about to settle it; settle it here.
    guard cancelled else { return nil }
    return table.settleCause(CancellationError())
  }

  /// The earliest deadline set on `clock` for the work this token belongs to, or `nil`.
  ///
  /// `timeout(_:clock:)` sets one for the run it bounds, and ``withTimeout(_:clock:file:line:operation:)``
  /// for the `async` code it runs; a child token has its parent's. Nested deadlines on one clock
  /// keep the earliest. A deadline set on one clock is not seen on another: the same clock is
  /// the same instance for a class (such as `TestClock`), the same type for a struct (such as
  /// `ContinuousClock`).
  ///
  /// ```swift
  /// let fetch = AsyncFunc<Int, Int> { input, token, complete in
  ///   let left = token.deadline(on: ContinuousClock()).map { ContinuousClock.now.duration(to: $0) }
  ///   print(left.map { $0 <= .seconds(2) } ?? false)
  ///   complete(.success(input))
  /// }
  /// fetch.timeout(.seconds(2)).run(1) { _ in }
  /// // prints true
  /// ```
  ///
  /// - Complexity: O(*n*) for *n* nested deadlines around the work, whatever the depth of the
  ///   token tree.
  public func deadline<C: Clock>(on clock: C) -> C.Instant? {
    deadlines?.instant(on: clock)
  }

  /// The token of the `.async` body, or the ``withTimeout(_:clock:file:line:operation:)`` operation, this
  /// task runs in: an ``AsyncFunc`` awaited there starts on a child of it, with its deadlines
  /// and its cancellation.
  @TaskLocal package static var current: CancellationToken?

  /// Runs `body` with `token` as ``current``.
  @usableFromInline
  package static func withCurrent<T>(
    _ token: CancellationToken, _ body: () async throws -> T
  ) async rethrows -> T {
    try await $current.withValue(token, operation: body)
  }

  /// Returns once the handlers that another thread's ``cancel()`` is running have all run, so
  /// that every caller of `cancel()` can rely on them having run when it returns.
  private func waitForHandlers() {
    guard let table = word.loadObject() else { return }
    let waiting = table.state.withLock { state -> DispatchSemaphore? in
      // The running thread itself, cancelling again from a handler, must not wait for it.
      guard !state.handlersDone, state.runner != currentThreadID() else { return nil }
      let semaphore = DispatchSemaphore(value: 0)
      state.waiters.append(semaphore)
      return semaphore
    }
    waiting?.wait()
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
  public func onCancel(_ handler: @escaping @Sendable () -> Void) -> Registration {
    guard !isCancelled, let table = handlerTable() else {
      handler()
      return Registration(token: nil, id: 0)
    }
    let added = table.state.withLock { state -> (id: UInt64, link: Bool)? in
      guard !state.isCancelled else { return nil }
      let index: Int32
      if state.firstFree >= 0 {
        index = state.firstFree
        state.firstFree = state.entries[Int(index)].nextFree
      } else {
        index = Int32(state.entries.count)
        state.entries.append(Entry(handler: nil, id: .max, nextFree: -1))
      }
      let id = UInt64(state.registered) << 32 | UInt64(UInt32(index))
      state.registered &+= 1
      state.entries[Int(index)] = Entry(handler: handler, id: id, nextFree: -1)
      state.live += 1
      guard case .unlinked = state.parentLink else { return (id, false) }
      state.parentLink = .linking
      return (id, true)
    }
    guard let added else {
      handler()
      return Registration(token: nil, id: 0)
    }
    if added.link { linkToParent(table) }
    return Registration(token: self, id: added.id)
  }

  /// The token's handler table, made now if it has none; `nil` once the token is cancelled.
  private func handlerTable() -> HandlerTable? {
    tableMakingOne(while: { $0.flags & Flag.cancelled == 0 })
  }

  /// The token's table, to keep a cause in, made now if it has none; `nil` once the token is
  /// cancelled without one (its cause is then `CancellationError`, and stays so).
  private func causeTable() -> HandlerTable? {
    tableMakingOne(while: { $0.flags & Flag.cancelled == 0 || $0.hasObject })
  }

  /// The token's table while `allowed` holds for its word, made now if it has none.
  private func tableMakingOne(
    while allowed: (AtomicTaggedReference<HandlerTable>.Value) -> Bool
  ) -> HandlerTable? {
    // A detached child, or a root, never links to a parent.
    word.objectStoringOne(
      while: allowed,
      making: { HandlerTable(linked: self.parent != nil && $0.flags & Flag.detached == 0) })
  }

  /// A handler's place on a token, to take it off when it is no longer needed.
  public struct Registration: Sendable {
    fileprivate let token: CancellationToken?
    /// The entry's id (see `Entry`), or `.max` for the link of a child made by `makeChild()`.
    fileprivate let id: UInt64

    /// The registration without its token, for an owner that knows the token and keeps only
    /// the id; `nil` for a handler that ran at once.
    package var idOnToken: UInt64? { token == nil ? nil : id }

    /// The registration `id` (an ``idOnToken``) names on `token`.
    package init(on token: CancellationToken, id: UInt64) {
      self.init(token: token, id: id)
    }

    fileprivate init(token: CancellationToken?, id: UInt64) {
      self.token = token
      self.id = id
    }

    /// Unregisters the handler if it has not run yet. Idempotent.
    ///
    /// - Complexity: O(1); it visits no other registration.
    public func remove() {
      guard let token else { return }
      if id == .max { token.detach() } else { token.removeHandler(id) }
    }
  }

  private func removeHandler(_ id: UInt64) {
    guard let table = word.loadObject() else { return }
    // Take the closure out under the lock, release it outside: releasing may run deinits.
    // It comes out in its entry, not as a bare closure
    // (Performance.md, "What the code's shape buys, and the check that holds it").
    let removed = table.state.withLock { state -> Entry? in
      let slot = Int(truncatingIfNeeded: id & 0xFFFF_FFFF)
      guard slot < state.entries.count else { return nil }
      state.entriesExamined += 1
      guard state.entries[slot].id == id else { return nil }
      let removed = state.entries[slot]
      if state.isCancelled {
        // The handlers are being run in order: the entry only empties.
        state.entries[slot] = Entry(handler: nil, id: .max, nextFree: -1)
        state.live -= 1
        return removed
      }
      state.entries[slot] = Entry(handler: nil, id: .max, nextFree: state.firstFree)
      state.firstFree = Int32(slot)
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
  package var registrationCount: Int {
    guard let table = word.loadObject() else { return 0 }
    return table.state.withLock { Int($0.live) }
  }

  /// How many entries all removals so far have examined; for tests.
  package var entriesExaminedByRemovals: Int {
    guard let table = word.loadObject() else { return 0 }
    return table.state.withLock { $0.entriesExamined }
  }

  /// Registers on the parent the handler that forwards its cancellation to this child.
  private func linkToParent(_ table: HandlerTable) {
    guard let parent else { return }
    // Taken back if the child was detached or cancelled meanwhile.
    keepOrRevoke(parent.onCancel { self.cancel() }) { registration in
      table.state.withLock { state in
        guard case .linking = state.parentLink else { return false }
        state.parentLink = .linked(registration.id)
        return true
      }
    }
  }

  /// Stops forwarding the parent's cancellation to this child's handlers: its work is done.
  private func detach() {
    let before = word.setFlags(Flag.detached)
    // No table yet: one made from now on sees the flag and never links.
    guard let table = word.object(in: before) else { return }
    let link = table.state.withLock { state -> UInt64? in
      defer { state.parentLink = .done }
      if case .linked(let id) = state.parentLink { return id }
      return nil
    }
    if let link { parent?.removeHandler(link) }
  }

  /// A token that is cancelled with this one, and can also be cancelled on its own.
  ///
  /// The child registers nothing on its parent until it gets a handler of its own: its
  /// ``isCancelled`` reads the parent's state, and only its handlers need a registration on
  /// the parent to hear of the cancellation.
  ///
  /// - Parameter work: The count the child's stages join instead of this token's.
  /// - Returns: The child, and its link: remove the link once the child's work is done, so
  ///   the parent stops holding the child's handlers.
  package func makeChild(countingIn work: (any InFlightWork)? = nil) -> (
    child: CancellationToken, link: Registration
  ) {
    let child = CancellationToken(parent: self, countingIn: work, deadlines: deadlines)
    return (child, Registration(token: child, id: .max))
  }

  /// A child for a run awaited in this token's `.async` body: cancelled with this token, with its
  /// deadlines, but neither traced by this run's observer nor counted in its limits, as the
  /// awaited run is a run of its own.
  ///
  /// - Parameter deadlines: The child's deadlines; this token's unless given.
  package func makeAwaitedChild(deadlines: DeadlineRecord?? = nil) -> (
    child: CancellationToken, link: Registration
  ) {
    let child = CancellationToken(parent: self, deadlines: deadlines ?? self.deadlines)
    return (child, Registration(token: child, id: .max))
  }

  /// A child, as ``makeChild(countingIn:)`` makes, under a deadline at `instant` on `clock` as
  /// well as this token's (the earliest on a clock wins).
  package func makeChild<C: Clock>(
    deadline instant: C.Instant, on clock: C, countingIn work: (any InFlightWork)? = nil
  ) -> (child: CancellationToken, link: Registration) {
    let child = CancellationToken(
      parent: self, countingIn: work,
      deadlines: DeadlineRecord.adding(instant, on: clock, to: deadlines))
    return (child, Registration(token: child, id: .max))
  }
}

extension CancellationToken: CustomStringConvertible {
  /// `CancellationToken(cancelled)` or `CancellationToken(active)`.
  public var description: String {
    isCancelled ? "CancellationToken(cancelled)" : "CancellationToken(active)"
  }
}

extension CancellationToken {
  /// How many callers of ``cancel()`` wait for the handlers another thread runs; for tests.
  var waitingCancellerCount: Int {
    guard let table = word.loadObject() else { return 0 }
    return table.state.withLock { $0.waiters.count }
  }

  /// Whether the token has a handler table (made for a handler, or for a cause); for tests.
  var hasHandlerTable: Bool { word.loadObject() != nil }

  /// The identity of the context box the token carries, shared with its parent unless it
  /// adds a deadline; `nil` without one. For tests.
  var contextIdentity: ObjectIdentifier? { context.map(ObjectIdentifier.init) }

  /// Whether a thread has begun running this token's handlers; for tests.
  var hasBegunRunningHandlers: Bool {
    guard let table = word.loadObject() else { return false }
    return table.state.withLock { $0.runner != 0 }
  }
}
