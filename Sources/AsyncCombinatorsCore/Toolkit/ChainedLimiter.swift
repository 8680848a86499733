import AsyncCombinatorsKernel

extension Limiter {
  /// Admits a run only when every one of `limiters` admits it, taking from all or from none.
  ///
  /// "No more than 10 a second, and no more than 100 a minute": chain a limiter per rule. A
  /// run takes its weight from each limiter in one step, while it holds each limiter's lock,
  /// so no other run sees a part taken; a run one of them turns away takes nothing from any.
  /// Runs wait in the chain's own queue, in arrival order, holding nothing while they wait: a
  /// run admitted by the first limiter and not the second does not keep the first one's
  /// permits. The waiting head asks again when a limiter that turned it away frees a slot, or
  /// when its permits are due. A run that also goes through a limiter directly queues there
  /// as usual; a chain's run asks a limiter only when none of that limiter's own waiters is
  /// ahead of it.
  ///
  /// The chain's queue limit is the strictest of its limiters': `.none` if one has it, else
  /// the smallest `.count(n)`, else the shortest `.wait(d)`, else the `.codel` of the
  /// shortest target, else `.unbounded`. A rejected
  /// run's ``LimitExceeded/retryAfter`` is the longest of the hints of the limiters that
  /// turned it away (`nil` when none of them can tell). A chain in `limiters` counts as its
  /// own limiters; a limiter given twice counts once. The limiters may be shared with other
  /// chains and functions; they should count on one clock.
  ///
  /// ```swift
  /// let clock = TestClock()
  /// let perSecond = Limiter(rate: .tokenBucket(2, per: .seconds(1)), queue: .none, clock: clock)
  /// let perMinute = Limiter(rate: .tokenBucket(3, per: .seconds(60)), queue: .none, clock: clock)
  /// let call = AsyncFunc<Int, Int>.sync(name: "call") { $0 }
  ///   .limited(by: Limiter(all: [perSecond, perMinute]))
  /// for n in 1...3 { call.run(n) { print($0) } }  // the third is over 2 a second
  /// clock.advance(by: .seconds(1))
  /// for n in 4...5 { call.run(n) { print($0) } }  // the fifth is over 3 a minute
  /// // prints success(1)
  /// // prints success(2)
  /// // prints failure(LimitExceeded: no slot free; retry after 0.5 seconds)
  /// // prints success(4)
  /// // prints failure(LimitExceeded: no slot free; retry after 19.0 seconds)
  /// ```
  ///
  /// - Precondition: `limiters` is not empty.
  /// - Parameters:
  ///   - limiters: The limiters each run must be admitted by; at least one.
  ///   - file: The caller's file, named when `limiters` is empty.
  ///   - line: The caller's line, named when `limiters` is empty.
  /// - Complexity: O(*m*) per run in the *m* limiters, each lock taken once; a rejection's
  ///   hint O(*m* × *n*) in the *n* runs waiting ahead.
  public convenience init(
    all limiters: [Limiter], file: StaticString = #fileID, line: UInt = #line
  ) {
    require(
      !limiters.isEmpty, "Limiter(all: []): give at least one limiter", file: file, line: line)
    var members: [Admission<LimitedRun>] = []
    var seen: Set<ObjectIdentifier> = []
    for limiter in limiters {
      let gates = limiter.gate.members.isEmpty ? [limiter.gate] : limiter.gate.members
      for gate in gates where seen.insert(ObjectIdentifier(gate)).inserted {
        members.append(gate)
      }
    }
    let queue = QueueLimit.strictest(of: members.map(\.queueLimit))
    let gate = Admission(
      capacity: .max, queue: queue, clock: members.lazy.compactMap(\.clock).first,
      members: members)
    self.init(
      gate: gate, largestWeight: limiters.map(\.largestWeight).min()!,
      description: "Limiter(all: [\(limiters.map(\.description).joined(separator: ", "))])")
  }
}

extension QueueLimit {
  /// The strictest of `limits`: `.none` if one is, else the smallest count, else the shortest
  /// wait, else the CoDel of the shortest target, else `.unbounded`.
  static func strictest(of limits: [QueueLimit]) -> QueueLimit {
    var count: Int?
    var wait: Duration?
    var codel: QueueLimit?
    for limit in limits {
      switch limit.kind {
      case .none: return .none
      case .count(let n): count = min(count ?? n, n)
      case .wait(let d): wait = min(wait ?? d, d)
      case .codel(let target, _):
        if case .codel(let shortest, _)? = codel?.kind, shortest <= target { break }
        codel = limit
      case .unbounded: break
      }
    }
    if let count { return .count(count) }
    if let wait { return .wait(wait) }
    return codel ?? .unbounded
  }
}
