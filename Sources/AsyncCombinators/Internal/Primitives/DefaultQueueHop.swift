import Dispatch

#if canImport(CDispatch)
  internal import CDispatch
#endif

/// Resumes a run on the default-QoS global queue, where a promise's blocks run when no queue
/// is given.
///
/// Where the platform's C interface to Dispatch is visible (Linux), the hop goes through
/// `dispatch_async_f`, whose work is a function and a context: the run itself is the context,
/// retained for the trip. `DispatchQueue.async` takes a block instead, which it copies to the
/// heap on the hopping thread and frees on the one that ran it, and a chain of such hops
/// measured 420 to 625 ns a hop against 145 to 180 ns for the same chain through
/// `dispatch_async_f` (200,000 hops in a row, five rounds each). Elsewhere the hop is a
/// block.
enum DefaultQueueHop {
  static func resume(_ run: Run) {
    #if canImport(CDispatch)
      // Priority 0 is the default priority, which Dispatch maps to the default QoS's root
      // queue: the one `DispatchQueue.global()` wraps. Looking it up is an array read.
      dispatch_async_f(dispatch_get_global_queue(0, 0), Unmanaged.passRetained(run).toOpaque()) {
        context in
        Unmanaged<Run>.fromOpaque(context.unsafelyUnwrapped).takeRetainedValue().resumeAfterHop()
      }
    #else
      defaultBlockQueue.async { run.resumeAfterHop() }
    #endif
  }
}
