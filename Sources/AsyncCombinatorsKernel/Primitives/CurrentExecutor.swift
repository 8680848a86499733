// Where the calling code runs, for timelines: the current dispatch queue's label when there
// is one, else the thread.

#if canImport(Darwin)
  import Darwin
  import Dispatch
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

package enum CurrentExecutor {
  /// The label of the dispatch queue running the caller, or `thread 0x…` when the caller is
  /// not on a labelled queue.
  package static var name: String {
    if let label = queueLabel, !label.isEmpty { return label }
    return "thread 0x" + String(threadID, radix: 16)
  }

  private static var queueLabel: String? {
    #if canImport(Darwin)
      // Dispatch's Swift overlay offers the current queue's label under this name alone.
      String(cString: __dispatch_queue_get_label(nil))
    #elseif canImport(Glibc) || canImport(Musl)
      dispatchQueueGetLabel.flatMap { $0(nil) }.map { String(cString: $0) }
    #else
      nil
    #endif
  }

  private static var threadID: UInt64 {
    #if canImport(Darwin)
      UInt64(pthread_mach_thread_np(pthread_self()))
    #elseif canImport(Glibc) || canImport(Musl)
      UInt64(pthread_self())
    #else
      0
    #endif
  }
}
