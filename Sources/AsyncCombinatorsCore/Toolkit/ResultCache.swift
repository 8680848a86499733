import AsyncCombinatorsKernel

/// The results of a function, by key, kept for ``AsyncFunc/memoized(in:)``: each key is called
/// for once, and the runs after it get the kept result.
///
/// Runs of a key that is not kept share one call in flight, as ``AsyncFunc/shared()`` does,
/// and the call's success is kept; its failure too when `cachingFailures` is `true`.
/// A cancelled call is never kept. `lifetime` drops an entry once that long has passed on the
/// cache's clock since it was kept: it is let go by the cache's next use, whatever key that is
/// for, and never counts toward `capacity`. `capacity` drops the least recently used live
/// entry to make room. Functions memoized in one cache share its entries and its calls in
/// flight.
///
/// ```swift
/// let users = ResultCache<Int, String>(name: "users", lifetime: .seconds(60), capacity: 100)
/// let user = AsyncFunc<Int, String>.sync(name: "user") { "user\($0)" }.memoized(in: users)
/// print(user)
/// print(try await user(7), users.value(for: 7) ?? "none", users.count)
/// users.prime(8, with: "eight")
/// users.forget(7)
/// print(users.value(for: 7) ?? "none", users.value(for: 8) ?? "none")
/// print(users)
/// // prints user.memoized(in: users)
/// // prints user7 user7 1
/// // prints none eight
/// // prints users: ResultCache(1 entry, capacity: 100, lifetime: 60.0 seconds)
/// ```
public final class ResultCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  /// What descriptions call the cache, such as `user.memoized(in: users)`.
  public let name: String?
  let table: FlightTable

  /// Creates an empty cache.
  ///
  /// - Precondition: `capacity` is not negative and `lifetime`, when given, is more than zero;
  ///   otherwise the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - name: What descriptions call the cache.
  ///   - lifetime: How long an entry is kept, from when it was stored, on `clock`; `nil` keeps
  ///     it until it is evicted or forgotten. An entry whose lifetime has passed is gone at
  ///     that instant exactly, and its value is let go by the next use of the cache, for any
  ///     key.
  ///   - capacity: The most live entries kept; storing one more drops the least recently used.
  ///     Zero keeps nothing, so the cache only shares calls in flight.
  ///   - cachingFailures: Whether failures are kept too (cancellation never is).
  ///   - clock: The clock `lifetime` is measured on.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  public init<C: Clock>(
    name: String? = nil, lifetime: Duration? = nil, capacity: Int = .max,
    cachingFailures: Bool = false, clock: C = ContinuousClock(),
    file: StaticString = #fileID, line: UInt = #line
  ) where C.Duration == Duration {
    require(
      capacity >= 0, "ResultCache(capacity: \(capacity)): the capacity must not be negative",
      file: file, line: line)
    if let lifetime {
      require(
        lifetime > .zero, "ResultCache(lifetime: \(lifetime)): the lifetime must be positive",
        file: file, line: line)
    }
    self.name = name
    let start = clock.now
    let now: @Sendable () -> Duration = { start.duration(to: clock.now) }
    table = FlightTable(
      policy: CachePolicy(
        lifetime: lifetime, capacity: capacity, cachingFailures: cachingFailures,
        elapsed: now))
    // The entries drop what has expired as they go: they need the lifetime for every store.
    table.stripes[0].state.withLock { $0.entries = CacheEntries(lifetime: lifetime) }
  }

  /// The value kept for `key`, if a success is kept and its lifetime has not passed; it then
  /// counts as used, for `capacity`.
  ///
  /// - Parameter key: The key to look up.
  /// - Returns: The kept value, or `nil`.
  /// - Complexity: O(1) on average.
  public func value(for key: Key) -> Value? {
    let now = table.policy!.now()
    let key = FlightKey(key)
    let kept = table.stripes[0].state.withLock {
      $0.entries!.lookup(key, now: now, lifetime: table.policy!.lifetime)
    }
    return (try? kept?.get()).map { unbox($0, as: Value.self) }
  }

  /// Keeps `value` for `key` without a call, as if a call had just returned it.
  ///
  /// A call already in flight for `key` still delivers its own result to the runs that joined
  /// it, and keeps that result when it lands.
  ///
  /// - Parameters:
  ///   - key: The key.
  ///   - value: The value to keep.
  /// - Complexity: O(1) on average.
  public func prime(_ key: Key, with value: Value) {
    let policy = table.policy!
    let now = policy.now()
    let key = FlightKey(key)
    table.stripes[0].state.withLock {
      $0.entries!.store(.success(value), for: key, now: now, capacity: policy.capacity)
    }
  }

  /// Drops what is kept for `key`; a call in flight for it keeps nothing when it lands, and
  /// the next run of `key` makes a new call rather than joining it.
  ///
  /// - Parameter key: The key.
  public func forget(_ key: Key) {
    let now = table.policy!.now()
    table.stripes[0].state.withLock { $0.entries!.removeExpired(now: now) }
    table.forget(FlightKey(key))
  }

  /// Drops every entry, and detaches every call in flight as ``forget(_:)`` does.
  public func forgetAll() { table.forgetAll() }

  /// How many entries are kept: expired entries are dropped first.
  ///
  /// - Complexity: O(1) amortized: each expired entry is dropped once.
  public var count: Int {
    let now = table.policy!.now()
    return table.stripes[0].state.withLock { state in
      state.entries!.removeExpired(now: now)
      return state.entries!.count
    }
  }
}

extension ResultCache: CustomStringConvertible {
  /// The cache's name and settings, and how many entries it keeps:
  /// `users: ResultCache(3 entries, capacity: 100, lifetime: 60.0 seconds)`.
  public var description: String {
    let policy = table.policy!
    let entries = count
    var parts = ["\(entries) \(entries == 1 ? "entry" : "entries")"]
    if policy.capacity != .max { parts.append("capacity: \(policy.capacity)") }
    if let lifetime = policy.lifetime { parts.append("lifetime: \(lifetime)") }
    if policy.cachingFailures { parts.append("cachingFailures: true") }
    let body = "ResultCache(\(parts.joined(separator: ", ")))"
    return name.map { "\($0): \(body)" } ?? body
  }

  /// How a modifier's description names the cache.
  var callName: String { name ?? "ResultCache<\(Key.self), \(Value.self)>" }
}

/// What a ``ResultCache`` keeps, and its clock, erased: the time since the cache was made.
struct CachePolicy: Sendable {
  let lifetime: Duration?
  let capacity: Int
  let cachingFailures: Bool
  let elapsed: @Sendable () -> Duration

  /// The time on the cache's clock, read only when entries expire.
  func now() -> Duration { lifetime == nil ? .zero : elapsed() }

  /// Whether `result` may be kept: never a cancellation, failures only when asked.
  func keeps(_ result: AnyResult) -> Bool {
    guard capacity > 0 else { return false }
    guard case .failure(let error) = result else { return true }
    return cachingFailures && !(error is CancellationError)
  }
}

/// Kept results in least-recently-used order: a dictionary into slots linked from the most
/// recently used (`newest`) to the least (`oldest`), freed slots reused.
///
/// With a lifetime, the slots are also linked in the order they were stored, which is the
/// order they expire in: every operation first lets go of the expired ones at the stale end,
/// so an expired entry never counts toward the capacity, never pushes out a live one, and is
/// not kept until its own key is looked up. Each entry is dropped once, so that is O(1)
/// amortized per operation.
///
/// A slot's parts are in arrays of their own: the links, which every hit rewrites, are plain
/// integers, never copied along with a key and result.
struct CacheEntries {
  /// How long an entry is kept; `nil` keeps it until evicted or forgotten.
  let lifetime: Duration?
  private var keys: [FlightKey?] = []
  private var results: [AnyResult?] = []
  /// When each was stored, as the time since the cache was made.
  private var stored: [Duration] = []
  /// Toward `newest`, and toward `oldest`; -1 at either end.
  private var newer: [Int] = []
  private var older: [Int] = []
  /// With a lifetime: toward the slot stored next (`freshest` at the end), and toward the one
  /// stored before (`stalest` at the end); -1 at either end.
  private var storedAfter: [Int] = []
  private var storedBefore: [Int] = []
  private var slots: [FlightKey: Int] = [:]
  private var free: [Int] = []
  private var newest = -1
  private var oldest = -1
  private var freshest = -1
  private var stalest = -1

  init(lifetime: Duration? = nil) { self.lifetime = lifetime }

  var count: Int { slots.count }

  /// The result kept for `key`, moved to the newest; an expired one is dropped instead.
  mutating func lookup(_ key: FlightKey, now: Duration, lifetime: Duration?) -> AnyResult? {
    removeExpired(now: now)
    guard let slot = slots[key] else { return nil }
    // Stored out of clock order by a racing thread, so not reached by `removeExpired` yet.
    if let lifetime = self.lifetime ?? lifetime, now - stored[slot] >= lifetime {
      remove(key)
      return nil
    }
    if slot != newest {
      unlink(slot)
      linkAsNewest(slot)
    }
    return results[slot]
  }

  /// Keeps `result` for `key` as the newest entry, dropping the expired ones, then the oldest
  /// beyond `capacity`.
  mutating func store(_ result: AnyResult, for key: FlightKey, now: Duration, capacity: Int) {
    guard capacity > 0 else { return }
    removeExpired(now: now)
    if let slot = slots[key] {
      results[slot] = result
      stored[slot] = now
      unlink(slot)
      linkAsNewest(slot)
      if lifetime != nil {
        unlinkStored(slot)
        linkAsFreshest(slot)
      }
      return
    }
    let slot: Int
    if let reused = free.popLast() {
      slot = reused
      keys[slot] = key
      results[slot] = result
      stored[slot] = now
    } else {
      slot = keys.count
      keys.append(key)
      results.append(result)
      stored.append(now)
      newer.append(-1)
      older.append(-1)
      if lifetime != nil {
        storedAfter.append(-1)
        storedBefore.append(-1)
      }
    }
    slots[key] = slot
    linkAsNewest(slot)
    if lifetime != nil { linkAsFreshest(slot) }
    if slots.count > capacity, let evicted = keys[oldest] { remove(evicted) }
  }

  mutating func remove(_ key: FlightKey) {
    guard let slot = slots.removeValue(forKey: key) else { return }
    unlink(slot)
    if lifetime != nil { unlinkStored(slot) }
    keys[slot] = nil
    results[slot] = nil
    free.append(slot)
  }

  mutating func removeAll() { self = CacheEntries(lifetime: lifetime) }

  /// Drops the entries whose lifetime has passed by `now`, from the stalest, and stops at the
  /// first that is still alive.
  mutating func removeExpired(now: Duration) {
    guard let lifetime else { return }
    while stalest >= 0, now - stored[stalest] >= lifetime, let key = keys[stalest] {
      remove(key)
    }
  }

  private mutating func unlink(_ slot: Int) {
    let (toNewer, toOlder) = (newer[slot], older[slot])
    if toNewer >= 0 { older[toNewer] = toOlder } else { newest = toOlder }
    if toOlder >= 0 { newer[toOlder] = toNewer } else { oldest = toNewer }
    newer[slot] = -1
    older[slot] = -1
  }

  private mutating func linkAsNewest(_ slot: Int) {
    older[slot] = newest
    newer[slot] = -1
    if newest >= 0 { newer[newest] = slot } else { oldest = slot }
    newest = slot
  }

  private mutating func unlinkStored(_ slot: Int) {
    let (after, before) = (storedAfter[slot], storedBefore[slot])
    if after >= 0 { storedBefore[after] = before } else { freshest = before }
    if before >= 0 { storedAfter[before] = after } else { stalest = after }
    storedAfter[slot] = -1
    storedBefore[slot] = -1
  }

  private mutating func linkAsFreshest(_ slot: Int) {
    storedBefore[slot] = freshest
    storedAfter[slot] = -1
    if freshest >= 0 { storedAfter[freshest] = slot } else { stalest = slot }
    freshest = slot
  }
}
