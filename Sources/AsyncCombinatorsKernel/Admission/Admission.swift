import Synchronization

/// A run waiting at an ``Admission`` for a slot: the object that will run is its own place in
/// the queue, so waiting allocates nothing beside it.
package protocol AdmissionWaiter: AnyObject, Sendable {
  /// Its place in the queue; read and written only under the gate's lock.
  var place: AdmissionPlace<Self> { get set }
  /// The token whose cancellation turns it away while it waits.
  var waitsOn: CancellationToken { get }
  /// It has a slot: start now on `input`, and call the gate's
  /// ``Admission/leave(weight:succeeded:)`` once done.
  func admitted(_ input: AnyValue)
  /// Its run was cancelled while it waited: it leaves without a slot, and must report so.
  func turnedAway()
  /// The gate's queue limit sent it away: it leaves without a slot and fails with `error`.
  func rejected(_ error: LimitExceeded)
}

/// Where an ``AdmissionWaiter`` stands, kept in the waiter and guarded by the gate's lock.
///
/// The queue is intrusive: a waiter is linked to its neighbours in its priority's lane and
/// on its token's watch, both ways, so taking any waiter out is O(1), and a waiter that leaves
/// is held by nothing of the gate's from that moment. Typed by the waiter, so that following
/// a link needs no cast.
///
/// Every link is a counted reference, so no link can outlive the waiter it names. A waiter
/// linked both ways is held by its neighbours, which hold it back: `unlink` clears every link
/// to and from a waiter, under the gate's lock, and the gate's `deinit` clears the links of
/// the waiters still queued, so no such cycle outlives the queue.
package struct AdmissionPlace<Waiter: AnyObject> {
  /// The waiters before and after it in its lane.
  fileprivate var next: Waiter?
  fileprivate var previous: Waiter?
  /// The waiters before and after it on the same token, in arrival order.
  fileprivate var nextInWatch: Waiter?
  fileprivate var previousInWatch: Waiter?
  /// The input it will start on, given to it when admitted and dropped when it leaves.
  fileprivate var input: AnyValue = ()
  /// Linked in a lane: neither admitted, turned away nor rejected yet.
  fileprivate var isWaiting = false
  /// Cancelled once the waiter leaves the queue, which stops its wait limit's timer.
  fileprivate var expiry: CancellationToken?
  fileprivate var weight = 1
  fileprivate var priority = 0
  /// How many admissions it still waits for: more than one for a waiter that stands for a
  /// fold's elements not yet started (see ``Admission/enter(_:runs:)``).
  fileprivate var runs = 1
  /// When it queued, on the gate's clock: kept for a CoDel limit alone, which measures waits.
  fileprivate var queuedAt: Duration = .zero

  package init() {}
}

/// How an ``Admission`` tells the time: the timers of a queue's wait limit and of a rate's
/// refill, and the time since the gate was made, on the caller's clock.
package struct AdmissionClock: Sendable {
  package let timers: TimerClock
  /// The time since the clock was made.
  package let elapsed: @Sendable () -> Duration

  package init<C: Clock>(_ clock: C) where C.Duration == Duration {
    timers = TimerClock(clock)
    let start = clock.now
    elapsed = { start.duration(to: clock.now) }
  }
}

/// The one admission mechanism of the package: `limit(_:)`, `serialized()`, ``Limiter``,
/// ``WorkQueue`` and the limited array folds are each a gate of this kind.
///
/// At most `capacity` weight is held at once; the rest waits, highest priority first and in
/// arrival order within a priority. The waiter at the head blocks those behind it until its
/// weight fits, so a large weight is never starved by small ones. A gate with a rate budget
/// also admits only as fast as the budget refills, on a timer. Waiting parks an object, not a
/// thread. A waiter whose run is cancelled leaves the queue at once, is let go by the gate,
/// and is turned away; those behind it are then admitted if they fit. The queue limit rejects
/// waiters with ``LimitExceeded``, never with a cancellation, and the lowest priority first: a
/// newcomer past a count limit takes the place of the newest waiter of the lowest priority if
/// its own is higher, and a CoDel limit (``CoDel``) measures each priority's waits on its own.
///
/// Grants happen in a drain loop that at most one thread runs at a time, so a holder that
/// finishes synchronously inside its grant frees its slot without recursing into the next
/// grant. A holder that leaves while no thread drains starts the loop, its slot going to the
/// head waiter in the same locked step.
///
/// The waiters on one token share one cancellation handler on it, a `Watch`, made when the
/// first of them queues and removed when the last leaves: inside a fold every element waits on
/// the fold's token, and a handler per waiter would take that token's lock, which every
/// element shares, twice per element.
///
/// Generic over the waiter, so that the queue holds the waiters themselves, not existentials
/// to open at every step.
package final class Admission<Waiter: AdmissionWaiter>: Sendable {
  /// The waiters queued on one token, and the one handler on it that turns them all away.
  ///
  /// Guarded by the gate's lock, which makes the `@unchecked Sendable` safe: the handler that
  /// holds it reads it only under that lock.
  private final class Watch: @unchecked Sendable {
    let token: ObjectIdentifier
    /// Its waiters in arrival order, linked through their places.
    var first: Waiter?
    var last: Waiter?
    /// The handler's id on the token, once registered.
    var registration: UInt64?
    /// In the gate's `watches`: false once its last waiter left or its token was cancelled.
    var isActive = true

    init(token: ObjectIdentifier) { self.token = token }
  }

  /// The waiters of one priority, in arrival order, linked through their places.
  private struct Lane {
    let priority: Int
    var first: Waiter?
    var last: Waiter?
    /// For a CoDel limit: when, on the gate's clock, the lane last saw a short wait; made as
    /// its first waiter queues, since its priority's queue was empty until then.
    var lastShort: Duration = .zero
  }

  /// What ``enter(_:input:weight:priority:)`` found.
  private enum Entry {
    case admitted
    case queued
    /// Queued as the first waiter on its token: the watch's handler is still to register.
    case queuedWatching(Watch)
    case rejected(retryAfter: Duration?)
  }

  /// One step of the drain loop; the admitted waiter's input is moved out beside it, not
  /// carried in the step, so that the step is copied out of the lock without the existential.
  private enum Step {
    case admit(Waiter, CancellationToken.Registration?, expiry: CancellationToken?)
    /// A CoDel limit turns the waiter away; then the idle callbacks if it was the last.
    case reject(
      Waiter, CancellationToken.Registration?, expiry: CancellationToken?,
      idle: [@Sendable () -> Void])
    /// Nothing more fits now; a rate budget refills enough for the head after `refillIn`, at
    /// `due` on the gate's clock: a refill timer to arm on `arm`. `disarm` is a refill timer's
    /// token to cancel, of a timer no longer needed.
    case stop(
      refillIn: Duration?, due: Duration = .zero, arm: CancellationToken? = nil,
      disarm: CancellationToken? = nil)
  }

  /// What a chain's members answer its head.
  private enum MembersAnswer {
    /// Every member admitted it: each holds its slot.
    case admitted
    /// A member turned it away and none took anything; the members that did wake the chain
    /// when they free something, and the rate ones could admit it after `refillIn`, the
    /// longest of their waits, when known.
    case turnedAway(refillIn: Duration?)
  }

  private struct State {
    var capacity: Int
    /// The weight admitted and not yet given back.
    var used = 0
    /// The waiters admitted and not yet gone.
    var holders = 0
    /// How many holders left after their work succeeded, and after it failed.
    var succeeded = 0
    var failed = 0
    var rate: RateBudget?
    /// The rule of a CoDel queue limit; its state is in the lanes.
    var codel: CoDel?
    var isPaused = false
    /// Lanes with waiters, highest priority first.
    var lanes: [Lane] = []
    var waitingCount = 0
    var isDraining = false
    /// When, on the gate's clock, the refill timer armed last fires, to drain again once the
    /// rate budget has refilled; `nil` when none is armed. A head that needs less than the one
    /// the timer was armed for (the earlier head left) arms an earlier one.
    var refillDue: Duration?
    /// The token of that timer, cancelled as soon as the timer is no longer needed: the queue
    /// emptied, or an earlier timer replaced it. A timer holds the gate until it ends.
    var refillTimer: CancellationToken?
    /// A watch per token that waiters in the queue wait on, by the token's identity: no other
    /// token can take that identity while the watch lives, since its waiters hold the token.
    var watches: [ObjectIdentifier: Watch] = [:]
    /// The watch used last: inside a fold, every waiter's, found without hashing.
    var recentWatch: Watch?
    /// Called once nothing is admitted and nothing waits.
    var whenIdle: [@Sendable () -> Void] = []
    /// The chains (``Limiter/init(all:file:line:)``) this gate turned a run away from, by the chain's
    /// identity: each is woken once, the next time this gate frees something or its queue
    /// moves, to ask again.
    var chainWakers: [ObjectIdentifier: @Sendable () -> Void] = [:]

    init(capacity: Int, rate: RateBudget?, codel: CoDel?) {
      self.capacity = capacity
      self.rate = rate
      self.codel = codel
    }

    /// Whether a waiter of `weight` and `priority` may start now, taking its slot if so.
    mutating func admitNow(weight: Int, priority: Int, on clock: AdmissionClock?) -> Bool {
      guard !isPaused, used + weight <= capacity else { return false }
      if !lanes.isEmpty && lanes[0].priority >= priority { return false }
      if rate != nil, !rate!.take(weight, at: clock?.elapsed() ?? .zero) { return false }
      used += weight
      holders += 1
      return true
    }

    /// As a chain's member, with the chain's lock held: whether a run of `weight` and
    /// `priority` may start now, taking its slot if so and only if `rest` (the chain's other
    /// members, asked while this gate's lock is held) admits it too.
    mutating func admitAsMember(
      weight: Int, priority: Int, on clock: AdmissionClock?, rest: () -> Bool
    ) -> Bool {
      guard !isPaused, used + weight <= capacity else { return false }
      if !lanes.isEmpty && lanes[0].priority >= priority { return false }
      var budget = rate
      if budget != nil, !budget!.take(weight, at: clock?.elapsed() ?? .zero) { return false }
      guard rest() else { return false }
      rate = budget
      used += weight
      holders += 1
      return true
    }

    /// Whether a run of `weight` and `priority` would wait or be rejected now.
    func turnsAway(weight: Int, priority: Int, on clock: AdmissionClock?) -> Bool {
      if isPaused || used + weight > capacity { return true }
      if !lanes.isEmpty && lanes[0].priority >= priority { return true }
      guard let rate else { return false }
      return rate.wait(for: weight, at: clock?.elapsed() ?? .zero) > .zero
    }

    /// How long until the rate budget could admit a run of `weight` and `priority`, after the
    /// waiters it would queue behind have taken theirs, then `ahead`; `nil` without a rate
    /// budget.
    ///
    /// - Complexity: O(*n*) in the waiters of `priority` and above.
    func retryAfter(
      weight: Int, priority: Int, ahead: [Int] = [], on clock: AdmissionClock?
    ) -> Duration? {
      guard let rate else { return nil }
      var weights = weightsAhead(of: priority)
      weights.append(contentsOf: ahead)
      weights.append(weight)
      return rate.wait(forEach: weights, at: clock?.elapsed() ?? .zero)
    }

    /// The weights of the waiters a run of `priority` would queue behind, in order.
    func weightsAhead(of priority: Int) -> [Int] {
      var weights: [Int] = []
      for lane in lanes where lane.priority >= priority {
        var next = lane.first
        while let waiter = next {
          weights.append(contentsOf: repeatElement(waiter.place.weight, count: waiter.place.runs))
          next = waiter.place.next
        }
      }
      return weights
    }

    /// The chains to wake, taken.
    mutating func takeChainWakers() -> [@Sendable () -> Void] {
      guard !chainWakers.isEmpty else { return [] }
      defer { chainWakers = [:] }
      return Array(chainWakers.values)
    }

    /// The refill timer's token, to cancel: nothing waits for it any more.
    mutating func disarm() -> CancellationToken? {
      refillDue = nil
      return refillTimer.take()
    }

    private func watch(for token: ObjectIdentifier) -> Watch? {
      if let recent = recentWatch, recent.token == token { return recent }
      return watches[token]
    }

    /// Links `waiter` last in its lane and on its token's watch: a new watch if it is the
    /// first.
    mutating func enqueue(_ waiter: Waiter) -> Watch? {
      waitingCount += waiter.place.runs
      waiter.place.isWaiting = true
      let priority = waiter.place.priority
      var index = 0
      while index < lanes.count && lanes[index].priority > priority { index += 1 }
      if index == lanes.count || lanes[index].priority != priority {
        let lane = Lane(
          priority: priority, first: waiter, last: waiter, lastShort: waiter.place.queuedAt)
        lanes.insert(lane, at: index)
      } else {
        let last = lanes[index].last!
        last.place.next = waiter
        waiter.place.previous = last
        lanes[index].last = waiter
      }
      let token = ObjectIdentifier(waiter.waitsOn)
      if let watch = watch(for: token) {
        watch.last!.place.nextInWatch = waiter
        waiter.place.previousInWatch = watch.last
        watch.last = waiter
        return nil
      }
      let watch = Watch(token: token)
      watch.first = waiter
      watch.last = waiter
      watches[token] = watch
      recentWatch = watch
      return watch
    }

    /// Takes `waiter` out of its lane and off its watch; if it was the last on the watch,
    /// ends the watch and returns its registration to remove. The caller holds the waiter.
    mutating func unlink(_ waiter: Waiter) -> CancellationToken.Registration? {
      waiter.place.isWaiting = false
      waitingCount -= waiter.place.runs
      let priority = waiter.place.priority
      var index = 0
      while lanes[index].priority != priority { index += 1 }
      let next = waiter.place.next
      let previous = waiter.place.previous
      waiter.place.next = nil
      waiter.place.previous = nil
      if let previous { previous.place.next = next } else { lanes[index].first = next }
      if let next { next.place.previous = previous } else { lanes[index].last = previous }
      if lanes[index].first == nil { lanes.remove(at: index) }

      let watch = watch(for: ObjectIdentifier(waiter.waitsOn))!
      let nextOnToken = waiter.place.nextInWatch
      let previousOnToken = waiter.place.previousInWatch
      waiter.place.nextInWatch = nil
      waiter.place.previousInWatch = nil
      if let previousOnToken {
        previousOnToken.place.nextInWatch = nextOnToken
      } else {
        watch.first = nextOnToken
      }
      if let nextOnToken {
        nextOnToken.place.previousInWatch = previousOnToken
      } else {
        watch.last = previousOnToken
      }
      guard watch.first == nil else { return nil }
      end(watch)
      return watch.registration.map { CancellationToken.Registration(on: waiter.waitsOn, id: $0) }
    }

    /// Takes `watch` out of the gate: its waiters have left, or are being turned away.
    mutating func end(_ watch: Watch) {
      watch.isActive = false
      watches[watch.token] = nil
      if recentWatch === watch { recentWatch = nil }
    }

    /// The next step of the drain loop: the head of the highest lane if it may start.
    mutating func nextStep(
      on clock: AdmissionClock?, input: inout AnyValue,
      members: ((_ weight: Int, _ priority: Int) -> MembersAnswer)? = nil
    ) -> Step {
      var now = Duration.zero
      if codel != nil, let clock {
        now = clock.elapsed()
        if let shed = shed(at: now) { return shed }
      }
      guard !isPaused, !lanes.isEmpty, let head = lanes[0].first else {
        return .stop(refillIn: nil)
      }
      let weight = head.place.weight
      guard used + weight <= capacity else { return .stop(refillIn: nil) }
      if rate != nil {
        let time = clock?.elapsed() ?? .zero
        guard rate!.take(weight, at: time) else {
          let refillIn = rate!.wait(for: weight, at: time)
          return .stop(refillIn: refillIn, due: time + refillIn)
        }
      }
      if let members, case .turnedAway(let refillIn) = members(weight, head.place.priority) {
        guard let refillIn else { return .stop(refillIn: nil) }
        let time = clock?.elapsed() ?? .zero
        return .stop(refillIn: refillIn, due: time + refillIn)
      }
      used += weight
      holders += 1
      if let codel {
        lanes[0].lastShort = codel.lastShort(
          lanes[0].lastShort, admittedAfter: now - head.place.queuedAt, at: now)
      }
      if head.place.runs > 1 {
        // One of the runs it stands for starts; the rest keep its place at the head.
        head.place.runs -= 1
        waitingCount -= 1
        return .admit(head, nil, expiry: nil)
      }
      let registration = unlink(head)
      swap(&input, &head.place.input)
      let expiry = head.place.expiry.take()
      return .admit(head, registration, expiry: expiry)
    }

    /// The first waiter a CoDel limit turns away at `now`, taken out: the oldest of a priority
    /// that is overloaded, if it has waited too long.
    ///
    /// - Complexity: O(*p*) in the priorities waiting.
    mutating func shed(at now: Duration) -> Step? {
      for lane in lanes {
        guard let head = lane.first,
          codel!.sheds(wait: now - head.place.queuedAt, lastShort: lane.lastShort, at: now)
        else { continue }
        let registration = unlink(head)
        head.place.input = ()
        let expiry = head.place.expiry.take()
        return .reject(head, registration, expiry: expiry, idle: takeIdleCallbacks())
      }
      return nil
    }

    /// Takes out the newest waiter of the lowest priority, for a newcomer of a higher one to
    /// take its place: the waiter, its watch's registration to remove if it was the last on
    /// it, and its wait limit's timer to cancel.
    mutating func evictNewestOfLowest() -> (
      Waiter, CancellationToken.Registration?, CancellationToken?
    ) {
      let newest = lanes[lanes.count - 1].last!
      let registration = unlink(newest)
      newest.place.input = ()
      return (newest, registration, newest.place.expiry.take())
    }

    /// The idle callbacks to call, if nothing is admitted and nothing waits.
    mutating func takeIdleCallbacks() -> [@Sendable () -> Void] {
      guard holders == 0, waitingCount == 0, !whenIdle.isEmpty else { return [] }
      defer { whenIdle = [] }
      return whenIdle
    }
  }

  private let state: Locked<State>
  package let queueLimit: QueueLimit
  package let clock: AdmissionClock?
  /// For a chain (``Limiter/init(all:file:line:)``): the gates each run must be admitted by as well,
  /// and holds a slot of while it runs; in the order of their identities, the one order in
  /// which every chain takes their locks, after its own. Empty for any other gate.
  package let members: [Admission]

  /// - Parameters:
  ///   - capacity: The most weight admitted at once.
  ///   - queue: How many may wait, and for how long.
  ///   - rate: The budget that paces admissions, if any.
  ///   - clock: The clock of the wait limit and the rate; needed for either.
  ///   - members: For a chain, the gates each run must also be admitted by; no two the same,
  ///     none a chain itself.
  package init(
    capacity: Int, queue: QueueLimit = .unbounded, rate: RateBudget? = nil,
    clock: AdmissionClock? = nil, members: [Admission] = []
  ) {
    var codel: CoDel?
    if case .codel(let target, let interval) = queue.kind {
      codel = CoDel(target: target, interval: interval)
    }
    state = Locked(State(capacity: capacity, rate: rate, codel: codel))
    queueLimit = queue
    self.clock = clock
    self.members = members.sorted { ObjectIdentifier($0) < ObjectIdentifier($1) }
  }

  deinit {
    // Breaks the cycles that links both ways make, and lets the lanes go one waiter at a
    // time: a long chain released at once would recurse.
    state.withLock { state in
      for watch in state.watches.values {
        watch.first = nil
        watch.last = nil
      }
      for index in state.lanes.indices {
        state.lanes[index].last = nil
        var next = state.lanes[index].first.take()
        while let waiter = next {
          next = waiter.place.next.take()
          waiter.place.previous = nil
          waiter.place.nextInWatch = nil
          waiter.place.previousInWatch = nil
        }
      }
    }
  }

  /// How many waiters the gate holds: exactly those still waiting.
  package var queuedEntries: Int { state.withLock { $0.waitingCount } }

  /// How many are admitted and not gone, how many wait, and how many left after success and
  /// after failure: read together, so that none is counted twice.
  package var counts: (admitted: Int, waiting: Int, succeeded: Int, failed: Int) {
    state.withLock { ($0.holders, $0.waitingCount, $0.succeeded, $0.failed) }
  }

  package var capacity: Int { state.withLock { $0.capacity } }

  /// How long until the gate is at rest, if nothing comes meanwhile: nothing admitted, nothing
  /// waiting, and its rate budget full again (and, for a chain, its members' budgets but those
  /// of `ignoring`); `nil` while something is admitted or waits.
  package func restsIn(ignoring: Set<ObjectIdentifier> = []) -> Duration? {
    let own = state.withLock { state -> Duration? in
      guard state.holders == 0, state.waitingCount == 0 else { return nil }
      return state.rate?.untilFull(at: clock?.elapsed() ?? .zero) ?? .zero
    }
    guard var longest = own else { return nil }
    for member in members where !ignoring.contains(ObjectIdentifier(member)) {
      let full = member.state.withLock {
        $0.rate?.untilFull(at: member.clock?.elapsed() ?? .zero) ?? .zero
      }
      longest = max(longest, full)
    }
    return longest
  }

  /// Admits `waiter` now if its weight fits, the budget allows, and nobody of its priority or
  /// above waits; otherwise it waits for its turn, or is rejected by the queue limit. If its
  /// ``AdmissionWaiter/waitsOn`` token is cancelled while it waits, it is turned away. An
  /// admitted waiter calls ``leave(weight:succeeded:)`` exactly once, when its work is done.
  package func enter(_ waiter: Waiter, input: AnyValue, weight: Int = 1, priority: Int = 0) {
    var expiry: (child: CancellationToken, link: CancellationToken.Registration)?
    if case .wait = queueLimit.kind { expiry = waiter.waitsOn.makeChild() }
    let timeLeft = clock?.timers.timeLeft(on: waiter.waitsOn)
    var evicted:
      (
        waiter: Waiter, registration: CancellationToken.Registration?,
        expiry: CancellationToken?, retryAfter: Duration?
      )?
    let entry = state.withLock { state -> Entry in
      switch decide(&state, weight: weight, priority: priority, timeLeft: timeLeft) {
      case .admitted: return .admitted
      case .rejected(let retryAfter): return .rejected(retryAfter: retryAfter)
      case .waits: break
      }
      waiter.place.weight = weight
      waiter.place.priority = priority
      waiter.place.input = input
      waiter.place.expiry = expiry?.child
      if state.codel != nil, let clock { waiter.place.queuedAt = clock.elapsed() }
      // The count is reached and `decide` let it wait: its priority is above the lowest one
      // waiting, whose newest waiter it replaces.
      if case .count(let most) = queueLimit.kind, state.waitingCount >= most {
        let (newest, registration, timer) = state.evictNewestOfLowest()
        evicted = (newest, registration, timer, nil)
      }
      let watch = state.enqueue(waiter)
      if let newest = evicted?.waiter {
        // Its hint as it leaves: behind every waiter, the newcomer too.
        evicted?.retryAfter = retryAfter(
          state, weight: newest.place.weight, priority: newest.place.priority)
      }
      guard let watch else { return .queued }
      return .queuedWatching(watch)
    }
    switch entry {
    case .admitted: return waiter.admitted(input)
    case .rejected(let retryAfter): return waiter.rejected(LimitExceeded(retryAfter: retryAfter))
    case .queued: break
    case .queuedWatching(let watch): register(watch, on: waiter.waitsOn)
    }
    if let evicted {
      evicted.registration?.remove()
      evicted.expiry?.cancel()
      evicted.waiter.rejected(LimitExceeded(retryAfter: evicted.retryAfter))
      // The head may have changed.
      drain()
    }
    if let expiry, case .wait(let most) = queueLimit.kind, let clock {
      // A waiter admitted meanwhile has cancelled `child`: the timer then ends at once.
      clock.timers.after(most, expiry.child) { expired in
        expiry.link.remove()
        if expired { self.expire(waiter) }
      }
    }
    // A rate-paced gate needs a refill timer for the new head, and a chain's head needs its
    // members to wake it.
    if clock != nil || !members.isEmpty { drain() }
  }

  /// Queues `waiter` for `runs` admissions in a row, as one waiter in one place: a limited
  /// fold's elements, which arrive together. Each admission takes its own slot of weight 1 and
  /// calls ``AdmissionWaiter/admitted(_:)`` with no input; the waiter stays at the head of its
  /// lane until its last run is admitted, and its holders leave one by one. Cancelling its
  /// token turns it away once, for all the runs not yet admitted.
  ///
  /// Only for a gate that waits without limit.
  package func enter(_ waiter: Waiter, runs: Int) {
    precondition(queueLimit.kind == .unbounded && runs >= 1)
    let watch = state.withLock { state in
      waiter.place.runs = runs
      return state.enqueue(waiter)
    }
    if let watch { register(watch, on: waiter.waitsOn) }
    drain()
  }

  /// Registers the handler that turns away every waiter on `watch`'s token.
  private func register(_ watch: Watch, on token: CancellationToken) {
    // Registered outside the lock: on a token cancelled already the handler runs at once. Kept
    // only if a waiter still needs it: every one may have left, or been turned away, meanwhile.
    keepOrRevoke(token.onCancel { self.turnAway(watch) }) { registration in
      state.withLock { _ in
        guard watch.isActive else { return false }
        watch.registration = registration.idOnToken
        return true
      }
    }
  }

  /// Admits or rejects a run at once when it can, before the caller builds its waiter: a run
  /// the queue limit rejects makes nothing but its error.
  ///
  /// On `.admitted` the slot is taken, and the caller calls ``leave(weight:succeeded:)`` once
  /// its work is done; on `.waits` the caller calls ``enter(_:input:weight:priority:)``, which
  /// decides again.
  package func attempt(weight: Int = 1, priority: Int = 0) -> Attempt {
    state.withLock { decide(&$0, weight: weight, priority: priority) }
  }

  package enum Attempt {
    case admitted
    case rejected(retryAfter: Duration?)
    case waits
  }

  /// Whether a run may start now (taking its slot), must be rejected, or may wait.
  ///
  /// - Parameter timeLeft: The time before the run's deadline on the gate's clock, if it has
  ///   one: a run whose permit would come at or after it is rejected rather than queued.
  private func decide(
    _ state: inout State, weight: Int, priority: Int, timeLeft: Duration? = nil
  ) -> Attempt {
    if members.isEmpty {
      if state.admitNow(weight: weight, priority: priority, on: clock) { return .admitted }
    } else if !state.isPaused, state.lanes.isEmpty || state.lanes[0].priority < priority,
      Self.takeAll(members[...], weight: weight, priority: priority)
    {
      state.used += weight
      state.holders += 1
      return .admitted
    }
    switch queueLimit.kind {
    case .none:
      return .rejected(retryAfter: retryAfter(state, weight: weight, priority: priority))
    case .count(let most) where state.waitingCount >= most:
      // The lowest priority is turned away: the newest waiter of the lowest one waiting, if
      // below this run's, which `enter` then takes out; else this run.
      guard let lowest = state.lanes.last, lowest.priority < priority else {
        return .rejected(retryAfter: retryAfter(state, weight: weight, priority: priority))
      }
      fallthrough
    default:
      if let timeLeft, let wait = retryAfter(state, weight: weight, priority: priority),
        wait > .zero, wait >= timeLeft
      {
        return .rejected(retryAfter: wait)
      }
      return .waits
    }
  }

  /// How long until a run of `weight` and `priority`, turned away now, could be admitted:
  /// for a chain, the longest of its members' answers that are known.
  private func retryAfter(_ state: State, weight: Int, priority: Int) -> Duration? {
    guard !members.isEmpty else {
      return state.retryAfter(weight: weight, priority: priority, on: clock)
    }
    let ahead = state.weightsAhead(of: priority)
    var longest: Duration?
    for member in members {
      let (turnsAway, wait) = member.state.withLock { memberState in
        (
          memberState.turnsAway(weight: weight, priority: priority, on: member.clock),
          memberState.retryAfter(
            weight: weight, priority: priority, ahead: ahead, on: member.clock)
        )
      }
      guard let wait, turnsAway || wait > .zero else { continue }
      longest = max(longest ?? .zero, wait)
    }
    return longest
  }

  /// Takes `weight` from every gate of `gates`, or from none: each gate's lock is held while
  /// the gates after it are asked, so that no other run sees a part taken.
  private static func takeAll(_ gates: ArraySlice<Admission>, weight: Int, priority: Int) -> Bool {
    guard let gate = gates.first else { return true }
    return gate.state.withLock { state in
      state.admitAsMember(weight: weight, priority: priority, on: gate.clock) {
        takeAll(gates.dropFirst(), weight: weight, priority: priority)
      }
    }
  }

  /// A chain's head asks its members: each admits it, or none takes anything and each that
  /// turns it away will wake this chain once it frees something.
  private func askMembers(weight: Int, priority: Int) -> MembersAnswer {
    let id = ObjectIdentifier(self)
    // A member that frees a slot between the two passes is asked again: each time round,
    // another run has moved on.
    while true {
      if Self.takeAll(members[...], weight: weight, priority: priority) { return .admitted }
      let wake: @Sendable () -> Void = { [weak self] in self?.drain() }
      var turnedAway = false
      var longest: Duration?
      for member in members {
        let wait = member.state.withLock { state -> Duration?? in
          guard state.turnsAway(weight: weight, priority: priority, on: member.clock) else {
            return nil
          }
          state.chainWakers[id] = wake
          return .some(state.retryAfter(weight: weight, priority: priority, on: member.clock))
        }
        guard let wait else { continue }
        turnedAway = true
        if let wait { longest = max(longest ?? .zero, wait) }
      }
      if turnedAway { return .turnedAway(refillIn: longest) }
    }
  }

  /// Gives back `weight`; the waiters that now fit get their slots.
  ///
  /// - Parameter succeeded: Whether the holder's work succeeded, to count it; `nil` to count
  ///   nothing.
  package func leave(weight: Int = 1, succeeded: Bool? = nil) {
    // A chain's run gives its members' slots back first: the chain's head may take them.
    for member in members { member.leave(weight: weight) }
    var input: AnyValue = ()
    var wakers: [@Sendable () -> Void] = []
    let (first, idle) = state.withLock { state -> (Step?, [@Sendable () -> Void]) in
      wakers = state.takeChainWakers()
      state.used -= weight
      state.holders -= 1
      switch succeeded {
      case true?: state.succeeded += 1
      case false?: state.failed += 1
      case nil: break
      }
      let idle = state.takeIdleCallbacks()
      // The slot goes to the head waiter in this same locked step.
      guard !state.isDraining else { return (nil, idle) }
      guard state.waitingCount > 0 else {
        return (state.refillTimer == nil ? nil : .stop(refillIn: nil, disarm: state.disarm()), idle)
      }
      state.isDraining = true
      return (takeStep(&state, input: &input), idle)
    }
    if let first { admitWaiting(from: first, input: input) }
    for wake in wakers { wake() }
    for callback in idle { callback() }
  }

  /// Sets the most weight admitted at once; a larger capacity admits waiters at once, and a
  /// smaller one takes effect as holders leave.
  package func setCapacity(_ capacity: Int) {
    state.withLock { $0.capacity = capacity }
    drain()
  }

  /// Stops admitting (running work goes on), or admits again.
  package func setPaused(_ paused: Bool) {
    state.withLock { $0.isPaused = paused }
    if !paused { drain() }
  }

  package var isPaused: Bool { state.withLock { $0.isPaused } }

  /// Calls `body` once nothing is admitted and nothing waits: at once if so already.
  package func whenIdle(_ body: @escaping @Sendable () -> Void) {
    let now = state.withLock { state in
      if state.holders == 0 && state.waitingCount == 0 { return true }
      state.whenIdle.append(body)
      return false
    }
    if now { body() }
  }

  /// Starts the drain loop unless a thread runs it already.
  private func drain() {
    var input: AnyValue = ()
    var wakers: [@Sendable () -> Void] = []
    defer { for wake in wakers { wake() } }
    let first = state.withLock { state -> Step? in
      wakers = state.takeChainWakers()
      guard !state.isDraining else { return nil }
      guard state.waitingCount > 0 else {
        // The last waiter left: its refill timer goes with it, not when it fires.
        return state.refillTimer == nil ? nil : .stop(refillIn: nil, disarm: state.disarm())
      }
      state.isDraining = true
      return takeStep(&state, input: &input)
    }
    if let first { admitWaiting(from: first, input: input) }
  }

  /// One step of the drain loop, taken by its runner under the lock: the next waiter to admit,
  /// with its input moved into `input`, or the loop's end, after which another thread may
  /// drain.
  private func takeStep(_ state: inout State, input: inout AnyValue) -> Step {
    let step =
      members.isEmpty
      ? state.nextStep(on: clock, input: &input)
      : state.nextStep(on: clock, input: &input) { self.askMembers(weight: $0, priority: $1) }
    guard case .stop(let refillIn, let due, _, _) = step else { return step }
    state.isDraining = false
    guard let refillIn else {
      return .stop(refillIn: nil, disarm: state.waitingCount == 0 ? state.disarm() : nil)
    }
    if let armed = state.refillDue, armed <= due { return .stop(refillIn: nil) }
    // An earlier refill than the armed one: the head that needed more left.
    let replaced = state.refillTimer
    let timer = CancellationToken()
    state.refillDue = due
    state.refillTimer = timer
    return .stop(refillIn: refillIn, due: due, arm: timer, disarm: replaced)
  }

  /// The drain loop, from its first step: admits waiters in order while they fit.
  private func admitWaiting(from first: Step, input firstInput: consuming AnyValue) {
    var step = first
    var input = firstInput
    while true {
      switch step {
      case .admit(let waiter, let registration, let expiry):
        registration?.remove()
        expiry?.cancel()
        waiter.admitted(input)
      case .reject(let waiter, let registration, let expiry, let idle):
        registration?.remove()
        expiry?.cancel()
        waiter.rejected(LimitExceeded(retryAfter: nil))
        for callback in idle { callback() }
      case .stop(let refillIn, _, let arm, let disarm):
        disarm?.cancel()
        guard let refillIn, let arm, let clock else { return }
        clock.timers.after(refillIn, arm) { expired in
          guard expired else { return }
          self.state.withLock { state in
            if state.refillTimer === arm { _ = state.disarm() }
          }
          self.drain()
        }
        return
      }
      input = ()
      step = state.withLock { takeStep(&$0, input: &input) }
    }
  }

  /// The watch's token was cancelled: every waiter on it leaves the queue, turned away.
  private func turnAway(_ watch: Watch) {
    let (turnedAway, expiries, idle) = state.withLock {
      state -> ([Waiter], [CancellationToken], [@Sendable () -> Void]) in
      guard watch.isActive else { return ([], [], []) }
      var waiters: [Waiter] = []
      var expiries: [CancellationToken] = []
      var next = watch.first
      while let waiter = next {
        next = waiter.place.nextInWatch
        _ = state.unlink(waiter)
        waiter.place.input = ()
        if let expiry = waiter.place.expiry.take() { expiries.append(expiry) }
        waiters.append(waiter)
      }
      return (waiters, expiries, state.takeIdleCallbacks())
    }
    for expiry in expiries { expiry.cancel() }
    for waiter in turnedAway { waiter.turnedAway() }
    // A large weight that left the head may let those behind it in.
    if !turnedAway.isEmpty { drain() }
    for callback in idle { callback() }
  }

  /// `waiter` waited as long as the queue limit allows: it leaves, rejected.
  private func expire(_ waiter: Waiter) {
    let taken = state.withLock {
      state -> (CancellationToken.Registration?, [@Sendable () -> Void])? in
      guard waiter.place.isWaiting else { return nil }
      let registration = state.unlink(waiter)
      waiter.place.input = ()
      waiter.place.expiry = nil
      return (registration, state.takeIdleCallbacks())
    }
    guard let (registration, idle) = taken else { return }
    registration?.remove()
    waiter.rejected(LimitExceeded(retryAfter: nil))
    drain()
    for callback in idle { callback() }
  }
}
