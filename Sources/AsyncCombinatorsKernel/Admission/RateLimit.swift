/// How fast a ``Limiter`` admits runs: so many permits per period, as a token bucket, a fixed
/// window or a sliding window.
///
/// Each run takes its weight in permits when it starts; permits are never given back, they
/// come again with time.
///
/// Any permits, burst and segments from 1 to `Int.max` and any period above zero that a
/// `Duration` holds work exactly, down to the attosecond; a value out of range is a misuse,
/// which stops the program with a message naming the caller's line.
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
  package enum Kind: Hashable {
    case tokenBucket(permits: Int, period: Duration, burst: Int)
    case fixedWindow(permits: Int, period: Duration)
    case slidingWindow(permits: Int, period: Duration, segments: Int)
  }

  package let kind: Kind

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
  package var largestWeight: Int {
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

/// The permits a ``RateLimit`` has left, counted in whole attoseconds since the gate was made,
/// so that refills are exact for any rate a user can write: a bucket of 60 per minute has one
/// permit again at exactly 1 second, and a million a day is a million, not what fits in a
/// product of nanoseconds. No product of permits, period and burst is ever formed in a type it
/// could overflow.
package struct RateBudget {
  private enum State {
    /// `tokens` whole permits, at most `burst`, and `fraction` of one more, in units of
    /// 1/`period` of a permit (each attosecond adds `permits` units), as of `last`.
    case bucket(
      permits: Int, period: Int128, burst: Int, tokens: Int, fraction: Int128, last: Int128)
    case fixed(permits: Int, period: Int128, window: Int128, count: Int)
    /// The starts in each of the last `segments` segments that had any, oldest first, and
    /// their sum: never more entries than starts, however many segments the window has.
    case sliding(
      permits: Int, segment: Int128, segments: Int, current: Int128, starts: [SegmentStarts],
      total: Int)
  }

  /// How many started in one segment of a sliding window.
  private struct SegmentStarts {
    let segment: Int128
    var count: Int
  }

  private var state: State

  /// The longest wait a budget reports: past it, a wait would not fit a clock's instant.
  package static let longestWait = Duration.seconds(Int64.max / 4)

  package init(_ rate: RateLimit) {
    switch rate.kind {
    case .tokenBucket(let permits, let period, let burst):
      state = .bucket(
        permits: permits, period: period.attoseconds, burst: burst, tokens: burst, fraction: 0,
        last: 0)
    case .fixedWindow(let permits, let period):
      state = .fixed(permits: permits, period: period.attoseconds, window: 0, count: 0)
    case .slidingWindow(let permits, let period, let segments):
      // At most one segment per attosecond, so that the segments span the period, not more.
      let segments = Int(min(Int128(segments), period.attoseconds))
      state = .sliding(
        permits: permits, segment: period.attoseconds / Int128(segments), segments: segments,
        current: 0, starts: [], total: 0)
    }
  }

  /// Takes `weight` permits at `now` if there are enough.
  package mutating func take(_ weight: Int, at now: Duration) -> Bool {
    let now = Self.attoseconds(now)
    refill(at: now)
    switch state {
    case .bucket(let permits, let period, let burst, let tokens, let fraction, let last):
      guard tokens >= weight else { return false }
      state = .bucket(
        permits: permits, period: period, burst: burst, tokens: tokens - weight,
        fraction: fraction, last: last)
    case .fixed(let permits, let period, let window, let count):
      guard weight <= permits - count else { return false }
      state = .fixed(permits: permits, period: period, window: window, count: count + weight)
    case .sliding(let permits, let segment, let segments, let current, var starts, let total):
      guard weight <= permits - total else { return false }
      state = .fixed(permits: 0, period: 1, window: 0, count: 0)  // Unique `starts`.
      if starts.last?.segment == current {
        starts[starts.count - 1].count += weight
      } else {
        starts.append(SegmentStarts(segment: current, count: weight))
      }
      state = .sliding(
        permits: permits, segment: segment, segments: segments, current: current,
        starts: starts, total: total + weight)
    }
    return true
  }

  /// How long from `now` until `weight` permits are there, if nobody takes any meanwhile; at
  /// most ``longestWait``.
  package func wait(for weight: Int, at now: Duration) -> Duration {
    let now = Self.attoseconds(now)
    var budget = self
    budget.refill(at: now)
    switch budget.state {
    case .bucket(let permits, let period, _, let tokens, let fraction, _):
      guard tokens < weight else { return .zero }
      // (weight − tokens) × period − fraction units, at `permits` units an attosecond; the
      // product takes 256 bits.
      let need = UInt128(weight - tokens).multipliedFullWidth(by: UInt128(period))
      let (low, borrow) = need.low.subtractingReportingOverflow(UInt128(fraction))
      let high = borrow ? need.high - 1 : need.high
      let divisor = UInt128(permits)
      guard high < divisor else { return Self.longestWait }
      let (quotient, remainder) = divisor.dividingFullWidth((high, low))
      return Self.duration(quotient, roundingUp: remainder > 0)
    case .fixed(let permits, let period, _, let count):
      guard weight > permits - count else { return .zero }
      return Self.duration(UInt128(period - now % period))
    case .sliding(let permits, let segment, let segments, let current, let starts, let total):
      guard weight > permits - total else { return .zero }
      // A segment's starts stop counting when the segment `segments` after it begins.
      var left = total
      let toNext = segment - now % segment
      for entry in starts {
        left -= entry.count
        if weight <= permits - left {
          let whole = entry.segment + Int128(segments) - current - 1
          return Self.duration(UInt128(whole * segment + toNext))
        }
      }
      return Self.longestWait  // Not reached: once every segment has left, `weight` fits.
    }
  }

  /// How long from `now` until the budget is full again, if nobody takes any meanwhile.
  package func untilFull(at now: Duration) -> Duration {
    switch state {
    case .bucket(_, _, let burst, _, _, _): wait(for: burst, at: now)
    case .fixed(let permits, _, _, _), .sliding(let permits, _, _, _, _, _):
      wait(for: permits, at: now)
    }
  }

  /// How long from `now` until `weights`, in order, have each taken their permits, the next
  /// as soon as the one before it has: when the last of them could start, if nobody else
  /// takes any meanwhile; at most ``longestWait``.
  ///
  /// - Complexity: O(*n*) in the number of weights, times the segments with starts of a
  ///   sliding window.
  package func wait(forEach weights: some Sequence<Int>, at now: Duration) -> Duration {
    var budget = self
    var time = now
    for weight in weights {
      let wait = budget.wait(for: weight, at: time)
      guard wait < Self.longestWait - (time - now) else { return Self.longestWait }
      time += wait
      _ = budget.take(weight, at: time)
    }
    return time - now
  }

  private mutating func refill(at now: Int128) {
    switch state {
    case .bucket(let permits, let period, let burst, var tokens, var fraction, let last):
      guard now > last else { return }
      if tokens < burst {
        // Whole periods first, then the rest: each product below stays within its type.
        let (periods, rest) = (now - last).quotientAndRemainder(dividingBy: period)
        let room = Int128(burst - tokens)
        if periods >= room {
          (tokens, fraction) = (burst, 0)
        } else {
          let (part, remainder) = UInt128(period).dividingFullWidth(
            UInt128(rest).multipliedFullWidth(by: UInt128(permits)))
          // remainder + fraction, less than two periods, without forming the sum.
          let carry: Int128 = fraction >= period - Int128(remainder) ? 1 : 0
          let added = periods * Int128(permits) + Int128(part) + carry
          if added >= room {
            (tokens, fraction) = (burst, 0)
          } else {
            tokens += Int(added)
            fraction =
              carry == 1
              ? fraction - (period - Int128(remainder))
              : fraction + Int128(remainder)
          }
        }
      }
      state = .bucket(
        permits: permits, period: period, burst: burst, tokens: tokens, fraction: fraction,
        last: now)
    case .fixed(let permits, let period, let window, _):
      let current = now / period
      guard current != window else { return }
      state = .fixed(permits: permits, period: period, window: current, count: 0)
    case .sliding(let permits, let segment, let segments, let current, var starts, var total):
      let now = now / segment
      guard now > current else { return }
      var gone = 0
      while gone < starts.count, starts[gone].segment <= now - Int128(segments) {
        total -= starts[gone].count
        gone += 1
      }
      if gone > 0 {
        state = .fixed(permits: 0, period: 1, window: 0, count: 0)  // Unique `starts`.
        starts.removeFirst(gone)
      }
      state = .sliding(
        permits: permits, segment: segment, segments: segments, current: now, starts: starts,
        total: total)
    }
  }

  /// `attoseconds`, rounded up by one when asked, as a duration of at most ``longestWait``.
  private static func duration(_ attoseconds: UInt128, roundingUp: Bool = false) -> Duration {
    let longest = UInt128(longestWait.attoseconds)
    guard attoseconds < longest else { return longestWait }
    return Duration(attoseconds: Int128(attoseconds + (roundingUp ? 1 : 0)))
  }

  /// Whole attoseconds; negative durations are zero.
  package static func attoseconds(_ duration: Duration) -> Int128 { max(0, duration.attoseconds) }
}
