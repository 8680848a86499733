import AsyncCombinatorsKernel

/// One limiter per key, made when a key is first seen and dropped after `idleAfter` with
/// nothing running, waiting or owed (a rate limit's bucket full again).
///
/// "10 requests a second per customer": give each customer a limiter of its own, made by
/// `make` when its first run comes, and limit a function by it with
/// ``AsyncFunc/limited(by:key:weight:file:line:)``. Runs of different keys never wait on each other; a
/// key's runs obey exactly its own limiter, made once however many threads bring its first
/// runs together. A key's limiter is let go once it has been at rest for `idleAfter`, so the
/// keys a service has seen do not pile up; a key seen again gets a new limiter, which is
/// exact, since the old one owed nothing. To limit each key and all of them together, let
/// `make` chain the key's own limiter with a shared one (``Limiter/init(all:file:line:)``): a limiter
/// that two keys' chains have held is shared, and a key owes it nothing when it is let go (a
/// key that is the only one ever to hold it waits until it is full again too).
///
/// ```swift
/// let clock = TestClock()
/// let perCustomer = KeyedLimiter<String>(idleAfter: .seconds(60), clock: clock) { _ in
///   Limiter(rate: .tokenBucket(1, per: .seconds(1)), queue: .none, clock: clock)
/// }
/// let call = AsyncFunc<String, String>.sync(name: "call") { "served \($0)" }
///   .limited(by: perCustomer, key: { $0 })
/// for customer in ["ann", "bob", "ann"] { call.run(customer) { print($0) } }
/// print(perCustomer.count)
/// clock.advance(by: .seconds(60))
/// print(perCustomer.count)
/// // prints success("served ann")
/// // prints success("served bob")
/// // prints failure(LimitExceeded: no slot free; retry after 1.0 seconds)
/// // prints 2
/// // prints 0
/// ```
///
/// `make` is called under the keyed limiter's lock: it must not use this keyed limiter.
public final class KeyedLimiter<Key: Hashable & Sendable>: Sendable, CustomStringConvertible {
  /// A key's limiter, and what tells when it may be dropped.
  private struct Entry {
    let limiter: Limiter
    /// Runs that have taken the limiter and not yet entered its gate: the gate shows
    /// nothing of them yet, so the key is not dropped meanwhile.
    var entering = 0
    /// Whether a callback waits for the gate to be idle.
    var watchesIdle = false
    /// The timer that drops the key once it has been at rest for `idleAfter`; cancelled by
    /// the next run.
    var idleTimer: CancellationToken?
  }

  /// What follows a rest timer.
  private enum RestStep {
    /// The key was dropped, or the timer is stale.
    case done
    /// Something runs at the key's limiter: wait until it is idle again.
    case waitIdle
    /// Idle, but still owed: check again after the wait, on the timer's token.
    case wait(Duration, CancellationToken)
  }

  /// The keys' limiters, and the chains' member limiters they hold: a member two keys' chains
  /// have held is shared, and lives on when one key's chain is let go, so that key owes it
  /// nothing. A member stays counted (and its identity cannot be reused) while a chain holds
  /// it.
  private struct Table {
    var entries: [Key: Entry] = [:]
    var members: [ObjectIdentifier: (chains: Int, isShared: Bool)] = [:]

    /// Makes the entry of `key` with `make`, counting its members.
    mutating func make(_ key: Key, _ make: (Key) -> Limiter) -> Entry {
      let entry = Entry(limiter: make(key))
      for member in entry.limiter.gate.members {
        let id = ObjectIdentifier(member)
        let chains = (members[id]?.chains ?? 0) + 1
        members[id] = (chains, chains > 1 || members[id]?.isShared == true)
      }
      return entry
    }

    /// Drops the entry of `key`, and its members' counts.
    mutating func drop(_ key: Key) {
      guard let entry = entries.removeValue(forKey: key) else { return }
      for member in entry.limiter.gate.members {
        let id = ObjectIdentifier(member)
        if members[id]!.chains == 1 { members[id] = nil } else { members[id]!.chains -= 1 }
      }
    }

    /// The members of `limiter`, a chain, that other keys' chains hold or have held.
    func shared(in limiter: Limiter) -> Set<ObjectIdentifier> {
      Set(limiter.gate.members.lazy.map(ObjectIdentifier.init).filter { members[$0]!.isShared })
    }
  }

  private let table = Locked(Table())
  private let make: @Sendable (Key) -> Limiter
  private let idleAfter: Duration
  private let timers: TimerClock

  /// A keyed limiter that makes each key's limiter with `make`.
  ///
  /// - Precondition: `idleAfter` is not negative.
  /// - Parameters:
  ///   - idleAfter: How long a key's limiter is kept at rest before it is let go; zero or
  ///     more.
  ///   - clock: The clock `idleAfter` counts on.
  ///   - file: The caller's file, named when `idleAfter` is negative.
  ///   - line: The caller's line, named when `idleAfter` is negative.
  ///   - make: Makes the limiter of a key, once per key while it is kept.
  public init<C: Clock>(
    idleAfter: Duration = .seconds(60), clock: C = ContinuousClock(),
    file: StaticString = #fileID, line: UInt = #line,
    _ make: @escaping @Sendable (Key) -> Limiter
  ) where C.Duration == Duration {
    require(
      idleAfter >= .zero, "KeyedLimiter(idleAfter: \(idleAfter)): must not be negative",
      file: file, line: line)
    self.idleAfter = idleAfter
    self.make = make
    timers = TimerClock(clock)
  }

  deinit {
    // Let the rest timers go now rather than when they fire.
    for timer in table.withLock({ $0.entries.values.compactMap(\.idleTimer) }) { timer.cancel() }
  }

  /// The keys that have a limiter now.
  public var count: Int { table.withLock { $0.entries.count } }

  /// `KeyedLimiter(idleAfter: 60.0 seconds)`.
  public var description: String { "KeyedLimiter(idleAfter: \(idleAfter))" }

  /// The limiter of `key`, made if it has none, held against dropping until ``checkIn(_:_:)``.
  func checkOut(_ key: Key) -> Limiter {
    let (limiter, timer) = table.withLock { table -> (Limiter, CancellationToken?) in
      var entry = table.entries.removeValue(forKey: key) ?? table.make(key, make)
      entry.entering += 1
      let timer = entry.idleTimer.take()
      table.entries[key] = entry
      return (entry.limiter, timer)
    }
    timer?.cancel()
    return limiter
  }

  /// A run of `key` has entered `limiter`'s gate: the gate shows it from now on.
  func checkIn(_ key: Key, _ limiter: Limiter) {
    let watches = table.withLock { table -> Bool in
      guard var entry = table.entries[key], entry.limiter === limiter else { return false }
      entry.entering -= 1
      let watches = entry.entering == 0 && !entry.watchesIdle
      if watches { entry.watchesIdle = true }
      table.entries[key] = entry
      return watches
    }
    guard watches else { return }
    limiter.gate.whenIdle { [weak self] in self?.becameIdle(key, limiter) }
  }

  /// Nothing runs or waits at `key`'s limiter: it is dropped after `idleAfter` if nothing
  /// comes, and once nothing is owed.
  private func becameIdle(_ key: Key, _ limiter: Limiter) {
    let timer = table.withLock { table -> CancellationToken? in
      guard var entry = table.entries[key], entry.limiter === limiter else { return nil }
      entry.watchesIdle = false
      // A run entering now watches again once it is in.
      guard entry.entering == 0 else {
        table.entries[key] = entry
        return nil
      }
      let timer = CancellationToken()
      entry.idleTimer = timer
      table.entries[key] = entry
      return timer
    }
    if let timer { arm(timer, after: idleAfter, key, limiter) }
  }

  private func arm(
    _ timer: CancellationToken, after wait: Duration, _ key: Key, _ limiter: Limiter
  ) {
    timers.after(wait, timer) { [weak self] expired in
      if expired { self?.restTimeUp(key, limiter, timer) }
    }
  }

  /// `timer` fired: drops the key if its limiter is at rest; otherwise waits until it is.
  private func restTimeUp(_ key: Key, _ limiter: Limiter, _ timer: CancellationToken) {
    let next = table.withLock { table -> RestStep in
      guard var entry = table.entries[key], entry.idleTimer === timer, entry.entering == 0 else {
        return .done
      }
      // A member other keys share keeps its own account: only this key's own must be full.
      guard let restsIn = limiter.gate.restsIn(ignoring: table.shared(in: limiter)) else {
        // Only a run of this key reaches its gate, and each run cancels the timer first.
        entry.idleTimer = nil
        entry.watchesIdle = true
        table.entries[key] = entry
        return .waitIdle
      }
      guard restsIn > .zero else {
        table.drop(key)
        return .done
      }
      let next = CancellationToken()
      entry.idleTimer = next
      table.entries[key] = entry
      return .wait(restsIn, next)
    }
    switch next {
    case .done: break
    case .waitIdle: limiter.gate.whenIdle { [weak self] in self?.becameIdle(key, limiter) }
    case .wait(let wait, let next): arm(next, after: wait, key, limiter)
    }
  }
}

extension AsyncFunc {
  /// Runs this function through the limiter of its input's key in `limiter`.
  ///
  /// Each run finds its key's limiter, made on the key's first run, and goes through it as
  /// ``limited(by:weight:priority:file:line:)`` goes through a ``Limiter``: it takes `weight` when it
  /// starts, waits in that key's queue, and is rejected by that key's queue limit. Runs of
  /// different keys never wait on each other.
  ///
  /// ```swift
  /// let perUser = KeyedLimiter<Int> { _ in Limiter(concurrency: 1) }
  /// let fetch = AsyncFunc<Int, String>.sync(name: "fetch") { "user \($0)" }
  ///   .limited(by: perUser, key: { $0 })
  /// print(try await fetch(7))
  /// // prints user 7
  /// ```
  ///
  /// - Precondition: `weight` is at least 1, and at most the largest weight of the limiter a
  ///   run's key has: a run whose key's limiter is smaller stops the program.
  /// - Parameters:
  ///   - limiter: The keyed limiter, which every function limited by it shares.
  ///   - key: The key of an input.
  ///   - weight: How much of the key's limiter a run takes; from 1 to that limiter's
  ///     concurrency (or its burst, for a rate).
  ///   - file: The caller's file, named when `weight` is out of range.
  ///   - line: The caller's line, named when `weight` is out of range.
  /// - Returns: A function with the same input and output, limited per key.
  /// - Complexity: O(1) on average per run to find its key, then as its key's limiter.
  public func limited<Key: Hashable & Sendable>(
    by limiter: KeyedLimiter<Key>, key: @escaping @Sendable (Input) -> Key, weight: Int = 1,
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc {
    require(
      weight >= 1, "limited(by:key:weight: \(weight)): the weight must be at least 1",
      file: file, line: line)
    let inner = program
    let call =
      weight == 1
      ? "limited(by: \(limiter), key: { … })"
      : "limited(by: \(limiter), key: { … }, weight: \(weight))"
    return AsyncFunc(modifying: inner, call: call) { input, token, report in
      let key = key(unbox(input, as: Input.self))
      let keyLimiter = limiter.checkOut(key)
      defer { limiter.checkIn(key, keyLimiter) }
      require(
        weight <= keyLimiter.largestWeight,
        "limited(by:key:weight: \(weight)): the weight must be at most "
          + "\(keyLimiter.largestWeight), the size of \(keyLimiter)", file: file, line: line)
      LimitedFunction(keyLimiter.gate, inner, weight: weight)
        .enter(input, token: token, report: report)
    }
  }
}
