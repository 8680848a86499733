import AsyncCombinatorsKernel
import Synchronization

/// Runs `operation` with a deadline `duration` from now on `clock`, visible to every
/// ``AsyncFunc`` awaited inside it. Past the deadline the operation is cancelled with a
/// ``TimeoutError`` cause; once it has returned, this throws `TimeoutError(duration:)`.
///
/// The `async` twin of ``AsyncFunc/timeout(_:clock:file:line:)``, for plain `async` code. A
/// function awaited inside (`try await f(x)`, in the operation or in the `.async` bodies it
/// reaches) starts on a token that carries the deadline (read with
/// ``CancellationToken/deadline(on:)``), so its `retry`, `hedged` and rate limits spend the
/// same budget, and at the deadline its token is cancelled with the `TimeoutError` as its
/// ``CancellationToken/cause``, before the task running `operation` is cancelled. Structured:
/// this returns or throws only after `operation` has returned, so no work is left running
/// behind the throw. A run started with ``AsyncFunc/run(_:completion:)`` is a run of its own,
/// outside the deadline. Nested in another `withTimeout`, or in an `.async` body under a
/// `timeout`, on the same clock, the earliest deadline wins.
///
/// ```swift
/// let lookup = AsyncFunc<Int, Int> { input, token, complete in
///   print(token.deadline(on: ContinuousClock()) != nil)
///   complete(.success(input))
/// }
/// let value = try await withTimeout(.seconds(2)) { try await lookup(7) }
/// print(value)
/// // prints true
/// // prints 7
/// ```
///
/// - Precondition: `duration` is not negative.
/// - Parameters:
///   - duration: The time allowed, from the call; not negative.
///   - clock: The clock the deadline is on; `ContinuousClock()` unless given.
///   - file: The caller's file, named when `duration` is negative.
///   - line: The caller's line, named when `duration` is negative.
///   - operation: The work; it runs in a child task of the caller's.
/// - Returns: What `operation` returned, if it returned before the deadline.
/// - Throws: `TimeoutError(duration:)` if the deadline came first, whatever `operation` did
///   once cancelled; otherwise what `operation` threw, or `CancellationError` from a cancelled
///   caller.
public func withTimeout<T: Sendable, C: Clock>(
  _ duration: Duration, clock: C = ContinuousClock(), file: StaticString = #fileID,
  line: UInt = #line, operation: @Sendable () async throws -> T
) async throws -> T where C.Duration == Duration {
  require(
    duration >= .zero, "withTimeout(\(duration)): the duration must not be negative",
    file: file, line: line)
  let scope = CancellationToken.current
  let deadlines =
    duration < TimerClock.horizon
    ? DeadlineRecord.adding(clock.now.advanced(by: duration), on: clock, to: scope?.deadlines)
    : scope?.deadlines
  let made = scope?.makeAwaitedChild(deadlines: deadlines)
  let token = made?.child ?? CancellationToken(observer: nil, deadlines: deadlines)
  defer { made?.link.remove() }
  // The timer is armed before the operation starts, so its instant is the call's.
  let alarm = TimeoutAlarm()
  TimerClock(clock).deadline(after: duration).arm(on: alarm.stop) { expired in
    if expired { token.cancel(cause: TimeoutError(duration: duration)) }
    alarm.ring(expired)
  }
  let result = await withTaskCancellationHandler {
    await withoutActuallyEscaping(operation) { operation in
      await withTaskGroup(of: Result<T, any Error>?.self) { group in
        group.addTask {
          defer { alarm.stop.cancel() }  // The operation returned: the timer comes off.
          do {
            return .success(
              try await CancellationToken.withCurrent(token) { try await operation() })
          } catch {
            return .failure(error)
          }
        }
        group.addTask {
          // `nil` when the alarm rang: the operation is then cancelled, and awaited.
          await alarm.wait()
          return nil
        }
        var outcome: Result<T, any Error> = .failure(CancellationError())
        while let next = await group.next() {
          if let result = next {
            outcome = result
          } else {
            group.cancelAll()
          }
        }
        return outcome
      }
    }
  } onCancel: {
    token.cancel()
    alarm.stop.cancel()
  }
  if alarm.expired { throw TimeoutError(duration: duration) }
  return try result.get()
}

/// The timer of one ``withTimeout(_:clock:file:line:operation:)`` call, rung once: at the deadline
/// (`expired`), or when `stop` is cancelled first. The task that waits for it is kept until it
/// rings, or woken at once if it has rung.
///
/// `@unchecked Sendable`: `stop` and `keeper` are `let`s, `rang` atomic.
private final class TimeoutAlarm: @unchecked Sendable {
  private let keeper = Keeper<Sleeper>()

  /// The task waiting for the alarm: taking it back wakes it.
  struct Sleeper: Revocable {
    let continuation: CheckedContinuation<Void, Never>
    func revoke() { continuation.resume() }
  }

  /// Cancelled when the operation returns or the caller is cancelled: the timer comes off.
  let stop = CancellationToken()
  /// Whether it rang at the deadline; written before it rings.
  private let rangExpired = Atomic<Bool>(false)

  /// Whether the deadline came before the operation returned.
  var expired: Bool { rangExpired.load(ordering: .acquiring) }

  func ring(_ expired: Bool) {
    rangExpired.store(expired, ordering: .releasing)
    keeper.endAndRevoke()  // Wakes the waiting task.
  }

  /// Returns once the alarm has rung.
  func wait() async {
    await withCheckedContinuation { keeper.keep(Sleeper(continuation: $0)) }
  }
}
