import Synchronization

/// Something that can be asked to stop: a run, a network request, a timer.
///
/// ``CancellationToken`` conforms, and so can any request handle a legacy API returns;
/// ``AsyncFunc/cancellable(name:fileID:line:_:)`` forwards a run's cancellation to it.
public protocol Cancellable: Sendable {
  /// Asks the work to stop. Calling it more than once has no further effect.
  func cancel()
}

/// The cancellation state of one run, shared by every stage of that run.
///
/// ``AsyncFunc/run(_:completion:)`` returns a token; cancelling it completes the run with
/// `CancellationError` at once, stops stages that have not started yet, and fires the
/// handlers that running stages registered with ``onCancel(_:)``.
///
/// ```swift
/// let token = CancellationToken()
/// token.onCancel { print("stopped") }
/// token.cancel()
/// token.cancel()
/// // prints stopped   (once)
/// ```
public final class CancellationToken: Cancellable {
  /// Handlers waiting for cancellation, keyed by registration number.
  private struct State {
    var handlers: [(id: Int, handler: @Sendable () -> Void)] = []
    var nextID = 0
    /// Once set, every handler has been taken to run and new ones run at once.
    var isCancelled = false
  }

  /// Read on every stage start, so it is an atomic rather than a trip through the lock.
  private let flag = Atomic<Bool>(false)
  private let state = Locked(State())
  /// Carried to child tokens so that tracing follows a run into parallel branches.
  let observer: (any RunObserver)?

  /// Creates a token that is not cancelled.
  public convenience init() {
    self.init(observer: nil)
  }

  init(observer: (any RunObserver)?) {
    self.observer = observer
  }

  /// Whether ``cancel()`` has been called.
  public var isCancelled: Bool { flag.load(ordering: .acquiring) }

  /// Cancels the run: the handlers registered so far run once, on the calling thread.
  ///
  /// - Complexity: O(*h*) for *h* registered handlers.
  public func cancel() {
    let handlers = state.withLock { state -> [(id: Int, handler: @Sendable () -> Void)] in
      guard !state.isCancelled else { return [] }
      state.isCancelled = true
      flag.store(true, ordering: .releasing)
      defer { state.handlers = [] }
      return state.handlers
    }
    for entry in handlers { entry.handler() }
  }

  /// Registers work to do when the token is cancelled; runs it at once if it already is.
  ///
  /// Remove the registration when the work it guards has finished, so a long run does not
  /// collect handlers of stages that are long done.
  ///
  /// ```swift
  /// let token = CancellationToken()
  /// token.cancel()
  /// token.onCancel { print("already cancelled") }
  /// // prints already cancelled   (at once)
  /// ```
  ///
  /// - Parameter handler: Runs at most once, on the thread that cancels.
  /// - Returns: A registration whose ``Registration/remove()`` unregisters the handler.
  @discardableResult
  public func onCancel(_ handler: @escaping @Sendable () -> Void) -> Registration {
    let id = state.withLock { state -> Int? in
      guard !state.isCancelled else { return nil }
      defer { state.nextID += 1 }
      state.handlers.append((state.nextID, handler))
      return state.nextID
    }
    guard let id else {
      handler()
      return Registration(token: nil, id: 0)
    }
    return Registration(token: self, id: id)
  }

  /// A handler's place on a token, to take it off when it is no longer needed.
  public struct Registration: Sendable {
    fileprivate let token: CancellationToken?
    fileprivate let id: Int

    /// Unregisters the handler if it has not run yet. Idempotent.
    public func remove() {
      token?.removeHandler(id)
    }
  }

  private func removeHandler(_ id: Int) {
    // Take the closure out under the lock, release it outside: releasing may run deinits.
    let removed = state.withLock { state -> (@Sendable () -> Void)? in
      guard let index = state.handlers.lastIndex(where: { $0.id == id }) else { return nil }
      return state.handlers.remove(at: index).handler
    }
    _ = removed
  }

  /// A token that is cancelled with this one, and can also be cancelled on its own.
  ///
  /// - Returns: The child, and the registration that links it. Remove the link once the
  ///   child's work is done: it holds the child strongly (a weak reference would slow every
  ///   retain of the token).
  func makeChild() -> (child: CancellationToken, link: Registration) {
    let child = CancellationToken(observer: observer)
    let link = onCancel { child.cancel() }
    return (child, link)
  }
}

extension CancellationToken: CustomStringConvertible {
  /// `CancellationToken(cancelled)` or `CancellationToken(active)`.
  public var description: String {
    isCancelled ? "CancellationToken(cancelled)" : "CancellationToken(active)"
  }
}
