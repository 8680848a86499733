import AsyncCombinators
import AsyncCombinatorsTesting
import Dispatch
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Suite struct RetryBudgetTests {
  private static func failing(_ attempts: Tally) -> AsyncFunc<Int, Int> {
    AsyncFunc(name: "down") { _, complete in
      attempts.add()
      complete(.failure(TestError(attempts.value)))
    }
  }

  @Test func the_defaults_give_runs_that_keep_failing_exactly_one_hundred_retries() {
    let budget = RetryBudget()
    let attempts = Tally()
    let fetch = Self.failing(attempts).retry(10, budget: budget)
    for run in 0..<30 { fetch.run(run) { _ in } }
    #expect(attempts.value == 30 + 100)
    #expect(budget.available == 0)
  }

  @Test func a_retry_that_cannot_be_paid_fails_the_run_at_once_with_its_error() {
    let budget = RetryBudget(tokens: 5, retryCost: 5)
    let attempts = Tally()
    let fetch = Self.failing(attempts).retry(3, budget: budget)
    let results = Recorder<Int?>()
    fetch.run(0) { results.record(($0.failure as? TestError)?.id) }  // one retry, then none
    fetch.run(0) { results.record(($0.failure as? TestError)?.id) }  // none
    #expect(results.all == [2, 3])
    #expect(attempts.value == 3)
  }

  @Test func successes_refund_up_to_the_initial_amount() {
    let budget = RetryBudget(tokens: 10, retryCost: 5, successRefund: 1)
    let attempts = Tally()
    let down = Self.failing(attempts).retry(5, budget: budget)
    down.run(0) { _ in }
    #expect(budget.available == 0)
    let up = AsyncFunc<Int, Int>.sync { $0 }.retry(1, budget: budget)
    for run in 0..<5 { up.run(run) { _ in } }
    #expect(budget.available == 5)
    down.run(0) { _ in }
    #expect(attempts.value == 3 + 2)  // one paid retry
    for run in 0..<50 { up.run(run) { _ in } }
    #expect(budget.available == 10)  // never beyond the initial amount
  }

  @Test func one_budget_is_shared_by_every_function_given_it() {
    let budget = RetryBudget(tokens: 10, retryCost: 5)
    let attempts = Tally()
    Self.failing(attempts).retry(1, budget: budget).run(0) { _ in }
    Self.failing(attempts).retry(1, budget: budget).run(0) { _ in }
    Self.failing(attempts).retry(1, budget: budget).run(0) { _ in }
    #expect(attempts.value == 3 + 2)
  }

  @Test func spending_from_many_threads_pays_exactly_what_the_budget_holds() {
    let budget = RetryBudget(tokens: 1000, retryCost: 1)
    let paid = Atomic(0)
    DispatchQueue.concurrentPerform(iterations: 4) { _ in
      for _ in 0..<500 where budget.spend() { paid.add(1, ordering: .relaxed) }
    }
    #expect(paid.load(ordering: .relaxed) == 1000)
    #expect(budget.available == 0)
  }
}
