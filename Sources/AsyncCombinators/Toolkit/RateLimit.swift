/// How fast a ``Limiter`` admits runs: so many permits per period, as a token bucket, a fixed
/// window or a sliding window.
///
/// Each run takes its weight in permits when it starts; permits are never given back, they
/// come again with time.
///
/// ```swift
/// print(RateLimit.tokenBucket(60, per: .seconds(60)))
/// print(RateLimit.fixedWindow(100, per: .seconds(1)))
/// print(RateLimit.slidingWindow(100, per: .seconds(1)))
/// // prints tokenBucket(60, per: 60.0 seconds, burst: 60)
/// // prints fixedWindow(100, per: 1.0 seconds)
/// // prints slidingWindow(100, per: 1.0 seconds, segments: 4)
/// ```
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
  enum Kind: Hashable {
    case tokenBucket(permits: Int, period: Duration, burst: Int)
    case fixedWindow(permits: Int, period: Duration)
    case slidingWindow(permits: Int, period: Duration, segments: Int)
  }

  let kind: Kind

  private init(_ kind: Kind) { self.kind = kind }

  /// A bucket of `burst` permits, full at first, refilled steadily at `permits` per `period`.
  ///
  /// Over any interval of length *T*, at most `burst + permits × T / period` runs start.
  ///
  /// - Precondition: `permits` and `burst` are at least 1 and `period` is more than zero; otherwise
  ///   the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - permits: How many permits come back per `period`; at least 1.
  ///   - period: The period; more than zero.
  ///   - burst: The bucket's size, what may start at once; `permits` when `nil`.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The rate.
  public static func tokenBucket(
    _ permits: Int, per period: Duration, burst: Int? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) -> RateLimit {
    check(permits, period, file, line)
    let burst = burst ?? permits
    require(
      burst >= 1, "RateLimit.tokenBucket: the burst must be at least 1", file: file, line: line)
    return RateLimit(.tokenBucket(permits: permits, period: period, burst: burst))
  }

  /// At most `permits` runs start in each window of `period`, counted from the limiter's
  /// creation; the count starts over at each window's start.
  ///
  /// Up to twice `permits` may start around a window's edge.
  ///
  /// - Precondition: `permits` is at least 1 and `period` is more than zero; otherwise the program
  ///   stops with a message naming the caller's line.
  /// - Parameters:
  ///   - permits: How many per window; at least 1.
  ///   - period: The window's length; more than zero.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The rate.
  public static func fixedWindow(
    _ permits: Int, per period: Duration, file: StaticString = #fileID, line: UInt = #line
  ) -> RateLimit {
    check(permits, period, file, line)
    return RateLimit(.fixedWindow(permits: permits, period: period))
  }

  /// At most `permits` runs start in any `segments` consecutive segments of
  /// `period / segments`: a window that slides a segment at a time.
  ///
  /// - Precondition: `permits` and `segments` are at least 1 and `period` is more than zero;
  ///   otherwise the program stops with a message naming the caller's line.
  /// - Parameters:
  ///   - permits: How many per window; at least 1.
  ///   - period: The window's length; more than zero.
  ///   - segments: How many steps the window slides by per `period`; at least 1.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  /// - Returns: The rate.
  public static func slidingWindow(
    _ permits: Int, per period: Duration, segments: Int = 4,
    file: StaticString = #fileID, line: UInt = #line
  ) -> RateLimit {
    check(permits, period, file, line)
    require(
      segments >= 1, "RateLimit.slidingWindow: segments must be at least 1", file: file,
      line: line)
    return RateLimit(.slidingWindow(permits: permits, period: period, segments: segments))
  }

  private static func check(
    _ permits: Int, _ period: Duration, _ file: StaticString, _ line: UInt
  ) {
    require(
      permits >= 1, "RateLimit: permits must be at least 1, not \(permits)", file: file,
      line: line)
    require(
      period > .zero, "RateLimit: the period must be more than zero", file: file, line: line)
  }

  /// The most permits a single run may take.
  var largestWeight: Int {
    switch kind {
    case .tokenBucket(_, _, let burst): burst
    case .fixedWindow(let permits, _), .slidingWindow(let permits, _, _): permits
    }
  }

  /// The call that makes this rate, as written.
  public var description: String {
    switch kind {
    case .tokenBucket(let permits, let period, let burst):
      "tokenBucket(\(permits), per: \(period), burst: \(burst))"
    case .fixedWindow(let permits, let period):
      "fixedWindow(\(permits), per: \(period))"
    case .slidingWindow(let permits, let period, let segments):
      "slidingWindow(\(permits), per: \(period), segments: \(segments))"
    }
  }
}

/// The permits a ``RateLimit`` has left, in whole nanoseconds since the gate was made, so that
/// refills are exact: a bucket of 60 per minute has one permit again at exactly 1 second.
struct RateBudget {
  private enum State {
    /// `credit` counts permits in units of 1/`permits` of a permit-period: a permit costs
    /// `period` units and each nanosecond adds `permits` units.
    case bucket(permits: Int, period: Int, capacity: Int, credit: Int, last: Int)
    case fixed(permits: Int, period: Int, window: Int, count: Int)
    /// Starts per segment, in a ring indexed by segment number.
    case sliding(permits: Int, segment: Int, current: Int, counts: [Int])
  }

  private var state: State

  init(_ rate: RateLimit) {
    switch rate.kind {
    case .tokenBucket(let permits, let period, let burst):
      let period = Self.nanoseconds(period)
      let capacity = Self.saturating(burst, period)
      state = .bucket(
        permits: permits, period: period, capacity: capacity, credit: capacity, last: 0)
    case .fixedWindow(let permits, let period):
      state = .fixed(permits: permits, period: Self.nanoseconds(period), window: 0, count: 0)
    case .slidingWindow(let permits, let period, let segments):
      let segment = max(1, Self.nanoseconds(period) / segments)
      state = .sliding(
        permits: permits, segment: segment, current: 0, counts: Array(repeating: 0, count: segments)
      )
    }
  }

  /// Takes `weight` permits at `now` if there are enough.
  mutating func take(_ weight: Int, at now: Duration) -> Bool {
    let now = Self.nanoseconds(now)
    refill(at: now)
    switch state {
    case .bucket(let permits, let period, let capacity, let credit, let last):
      let cost = Self.saturating(weight, period)
      guard credit >= cost else { return false }
      state = .bucket(
        permits: permits, period: period, capacity: capacity, credit: credit - cost, last: last)
    case .fixed(let permits, let period, let window, let count):
      guard count + weight <= permits else { return false }
      state = .fixed(permits: permits, period: period, window: window, count: count + weight)
    case .sliding(let permits, let segment, let current, var counts):
      guard counts.reduce(0, +) + weight <= permits else { return false }
      state = .bucket(permits: 0, period: 0, capacity: 0, credit: 0, last: 0)  // Unique `counts`.
      counts[current % counts.count] += weight
      state = .sliding(permits: permits, segment: segment, current: current, counts: counts)
    }
    return true
  }

  /// How long from `now` until `weight` permits are there, if nobody takes any meanwhile.
  func wait(for weight: Int, at now: Duration) -> Duration {
    let now = Self.nanoseconds(now)
    var budget = self
    budget.refill(at: now)
    switch budget.state {
    case .bucket(let permits, let period, _, let credit, _):
      let deficit = Self.saturating(weight, period) - credit
      guard deficit > 0 else { return .zero }
      return .nanoseconds((deficit + permits - 1) / permits)
    case .fixed(let permits, let period, let window, let count):
      guard count + weight > permits else { return .zero }
      return .nanoseconds((window + 1) * period - now)
    case .sliding(let permits, let segment, let current, let counts):
      var left = counts.reduce(0, +)
      guard left + weight > permits else { return .zero }
      // After k more segment starts, the k oldest segments no longer count.
      for step in 1...counts.count {
        left -= counts[(current + step) % counts.count]
        if left + weight <= permits { return .nanoseconds((current + step) * segment - now) }
      }
      return .nanoseconds((current + counts.count) * segment - now)
    }
  }

  private mutating func refill(at now: Int) {
    switch state {
    case .bucket(let permits, let period, let capacity, let credit, let last):
      guard now > last else { return }
      let added = Self.saturating(now - last, permits)
      let (sum, overflow) = credit.addingReportingOverflow(added)
      state = .bucket(
        permits: permits, period: period, capacity: capacity,
        credit: overflow ? capacity : min(capacity, sum), last: now)
    case .fixed(let permits, let period, let window, _):
      let current = now / period
      guard current != window else { return }
      state = .fixed(permits: permits, period: period, window: current, count: 0)
    case .sliding(let permits, let segment, let current, var counts):
      let now = now / segment
      guard now > current else { return }
      state = .bucket(permits: 0, period: 0, capacity: 0, credit: 0, last: 0)  // Unique `counts`.
      if now - current >= counts.count {
        for index in counts.indices { counts[index] = 0 }
      } else {
        for passed in (current + 1)...now { counts[passed % counts.count] = 0 }
      }
      state = .sliding(permits: permits, segment: segment, current: now, counts: counts)
    }
  }

  private static func saturating(_ a: Int, _ b: Int) -> Int {
    let (product, overflow) = a.multipliedReportingOverflow(by: b)
    return overflow ? .max : product
  }

  /// Whole nanoseconds, saturating; negative durations are zero.
  static func nanoseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return .max }
    let (sum, pastEnd) = whole.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
    return pastEnd ? .max : sum
  }
}
