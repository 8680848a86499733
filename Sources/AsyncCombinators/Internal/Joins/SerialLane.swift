import Synchronization

/// The line of runs that a `serialized()` function lets through one at a time.
///
/// A run enters with a start closure and leaves by calling `finish()` exactly once. Starting
/// the next run from inside `finish()` would nest one stack frame per run when runs complete
/// synchronously, so whoever is already inside `launch` keeps the turn and loops instead (a
/// trampoline): `finish()` called during a start only leaves a note.
final class SerialLane: Sendable {
  /// An ``Action``, so that queueing it wraps it in no thunk.
  typealias Start = Action

  private struct State {
    var waiting = FIFO<Start>()
    /// A run holds the turn: started and not yet finished.
    var isBusy = false
    /// `launch` is inside a start closure.
    var isStarting = false
    /// The run being started finished before its start closure returned.
    var finishedWhileStarting = false

    /// Hands the turn to the next waiting run, or frees the lane.
    mutating func takeNext() -> Start? {
      let next = waiting.popFirst()
      isBusy = next != nil
      return next
    }
  }

  private let state = Locked(State())

  /// Starts the run at once if the lane is free; otherwise it waits for every run before it.
  func enqueue(_ start: @escaping @Sendable () -> Void) {
    let start = Action(start)
    let startNow = state.withLock { state in
      if state.isBusy {
        state.waiting.append(start)
        return false
      }
      state.isBusy = true
      return true
    }
    if startNow { launch(start) }
  }

  /// The current run is done: the next one may start.
  func finish() {
    let next = state.withLock { state -> Start? in
      if state.isStarting {
        state.finishedWhileStarting = true
        return nil
      }
      return state.takeNext()
    }
    if let next { launch(next) }
  }

  /// Starts runs for as long as each one finishes before its start closure returns.
  private func launch(_ first: Start) {
    var start = first
    while true {
      state.withLock { state in
        state.isStarting = true
        state.finishedWhileStarting = false
      }
      start()
      let next = state.withLock { state -> Start? in
        state.isStarting = false
        return state.finishedWhileStarting ? state.takeNext() : nil
      }
      guard let next else { return }
      start = next
    }
  }
}
