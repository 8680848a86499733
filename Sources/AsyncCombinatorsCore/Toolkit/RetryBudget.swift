import AsyncCombinatorsKernel
import Synchronization

/// A store of retries shared by every function given it, so that a service that keeps failing
/// is not hit by every caller's retries at once.
///
/// Each retry spends `retryCost` tokens; each success refunds `successRefund`, up to the
/// initial amount. A retry that cannot be paid is not made: its run fails at once with the
/// error it would have retried. With the defaults, runs that keep failing get 100 retries
/// between them, then none until successes refill the store (five successes pay for one
/// retry).
///
/// ```swift
/// let budget = RetryBudget(tokens: 10, retryCost: 5)
/// let down = AsyncFunc<Int, Int>(name: "down") { _, complete in
///   complete(.failure(NetworkError.offline))
/// }
/// let fetch = down.retry(3, budget: budget)
/// for id in 1...3 { _ = try? await fetch(id) }
/// print(budget.available)
/// // prints 0
/// ```
///
/// Safe to use from any thread.
public final class RetryBudget: Sendable {
  private let tokens: Int
  let retryCost: Int
  let successRefund: Int
  private let balance: Atomic<Int>

  /// Creates a full budget.
  ///
  /// Any values in the ranges below work, up to `Int.max`.
  ///
  /// - Precondition: `tokens >= 0`, `retryCost >= 1` and `successRefund >= 0`; otherwise the
  ///   program stops with a message naming the argument and the caller's line.
  /// - Parameters:
  ///   - tokens: What the budget holds when full; 0 or more.
  ///   - retryCost: What each retry spends; 1 or more.
  ///   - successRefund: What each success gives back, up to `tokens`; 0 or more.
  ///   - file: The caller's file, named when an argument is out of range.
  ///   - line: The caller's line, named when an argument is out of range.
  public init(
    tokens: Int = 500, retryCost: Int = 5, successRefund: Int = 1,
    file: StaticString = #fileID, line: UInt = #line
  ) {
    require(
      tokens >= 0, "RetryBudget(tokens: \(tokens)): must not be negative", file: file,
      line: line)
    require(
      retryCost >= 1, "RetryBudget(retryCost: \(retryCost)): must be at least 1", file: file,
      line: line)
    require(
      successRefund >= 0, "RetryBudget(successRefund: \(successRefund)): must not be negative",
      file: file, line: line)
    self.tokens = tokens
    self.retryCost = retryCost
    self.successRefund = successRefund
    balance = Atomic(tokens)
  }

  /// The tokens left now.
  public var available: Int { balance.load(ordering: .relaxed) }

  /// Takes the cost of one retry, if the budget holds it.
  func spend() -> Bool {
    var current = balance.load(ordering: .relaxed)
    while current >= retryCost {
      let (exchanged, found) = balance.compareExchange(
        expected: current, desired: current - retryCost, ordering: .relaxed)
      if exchanged { return true }
      current = found
    }
    return false
  }

  /// Gives back one success's refund, up to the initial amount.
  func refund() {
    guard successRefund > 0 else { return }
    var current = balance.load(ordering: .relaxed)
    while current < tokens {
      let (exchanged, found) = balance.compareExchange(
        expected: current, desired: current + min(successRefund, tokens - current),
        ordering: .relaxed)
      if exchanged { return }
      current = found
    }
  }

  /// `RetryBudget(tokens: 500, retryCost: 5, successRefund: 1)`, for a retry's description.
  var call: String {
    "RetryBudget(tokens: \(tokens), retryCost: \(retryCost), successRefund: \(successRefund))"
  }
}
