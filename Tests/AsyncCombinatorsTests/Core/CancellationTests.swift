import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {}

@Suite(.timeLimit(.minutes(1))) struct CancellationTests {
  @Test func cancel_completes_with_cancellation_error_once_while_the_stage_is_parked() {
    let parked = ParkedCompletion<Int>()
    let tokenFired = Gate()
    let stage = AsyncFunc<Int, Int>(name: "cancel.parked") { _, token, complete in
      token.onCancel { tokenFired.open() }
      parked.park(complete)
    }
    let nextRuns = Recorder<Int>()
    let next = AsyncFunc<Int, Int>.sync { x in
      nextRuns.record(x)
      return x
    }
    let results = Recorder<Result<Int, any Error>>()
    let token = (stage +> next).run(1) { results.record($0) }
    #expect(results.count == 0)
    token.cancel()
    #expect(results.all.map(isCancellation) == [true])  // Before `cancel()` returned.
    #expect(tokenFired.isOpen)
    parked.complete(.success(2))  // A value after cancellation: dropped.
    token.cancel()
    #expect(results.count == 1)
    #expect(nextRuns.count == 0)
    #expect(FaultRecorder.shared.violations(named: "cancel.parked").isEmpty)
  }

  @Test func already_cancelled_token_starts_nothing() {
    let started = Recorder<Int>()
    let stage = AsyncFunc<Int, Int> { x, complete in
      started.record(x)
      complete(.success(x))
    }
    let token = CancellationToken()
    token.cancel()
    let results = Recorder<Result<Int, any Error>>()
    (stage +> AsyncFunc.sync { $0 }).run(1, token: token) { results.record($0) }
    #expect(started.count == 0)
    #expect(results.all.map(isCancellation) == [true])
  }

  @Test func cancel_after_completion_changes_nothing() {
    let results = Recorder<Result<Int, any Error>>()
    let token = AsyncFunc<Int, Int>.sync { $0 }.run(1) { results.record($0) }
    token.cancel()
    #expect(results.count == 1)
    #expect((try? results.all[0].get()) == 1)
  }

  @Test func cancellation_reaches_every_running_branch() {
    let fired = (0..<3).map { _ in Gate() }
    let parked = (0..<3).map { _ in ParkedCompletion<Int>() }
    func branch(_ index: Int) -> AsyncFunc<Int, Int> {
      AsyncFunc { _, token, complete in
        token.onCancel { fired[index].open() }
        parked[index].park(complete)
      }
    }
    let results = Recorder<Result<((Int, Int), Int), any Error>>()
    let token = (branch(0) <> branch(1) <> branch(2)).run(1) { results.record($0) }
    parked[1].complete(.success(1))  // One branch already done.
    token.cancel()
    #expect(fired[0].isOpen && fired[2].isOpen)
    #expect(results.all.map(isCancellation) == [true])
    parked[0].complete(.success(0))
    parked[2].complete(.success(2))
    #expect(results.count == 1)
  }

  @Test func cancelling_the_awaiting_task_cancels_the_run() async {
    let parked = ParkedCompletion<Int>()
    let tokenFired = Gate()
    let stage = AsyncFunc<Int, Int> { _, token, complete in
      token.onCancel { tokenFired.open() }
      parked.park(complete)
    }
    let nextRuns = Recorder<Int>()
    let next = AsyncFunc<Int, Int>.sync { x in
      nextRuns.record(x)
      return x
    }
    let task = Task { try await (stage +> next)(1) }
    await parked.arrived.wait()
    task.cancel()
    let result = await task.result
    #expect(isCancellation(result))
    #expect(tokenFired.isOpen)
    parked.complete(.success(1))
    #expect(nextRuns.count == 0)
  }

  @Test func cancellation_is_never_wrapped() async {
    let inner = ParkedCompletion<Int>()
    let parked = AsyncFunc<Int, Int> { _, complete in inner.park(complete) }
    let pipeline =
      (AsyncFunc<Int, Int>.sync { $0 } <> parked).map { $0 + $1 } +> AsyncFunc.async { $0 }
    let task = Task { try await pipeline(1) }
    await inner.arrived.wait()
    task.cancel()
    let result = await task.result
    guard case .failure(let error) = result else {
      Issue.record("expected cancellation, got \(result)")
      return
    }
    #expect(type(of: error) == CancellationError.self)
  }

  @Test func cancellation_error_thrown_by_a_stage_passes_through_unchanged() async {
    let stage = AsyncFunc<Int, Int>.sync { _ in throw CancellationError() }
    let result = await runToCompletion(stage <> AsyncFunc.sync { $0 }, 1)
    guard case .failure(let error) = result else {
      Issue.record("expected a failure, got \(result)")
      return
    }
    #expect(type(of: error) == CancellationError.self)
  }
}
