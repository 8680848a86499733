#if AC_TSAN
  #if canImport(Darwin)
    import Darwin
  #elseif canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #endif

  /// The lock this module keeps its shared state under: the twin of `Locked` in
  /// `AsyncCombinators` (whose `Internal/Locked.swift` explains the `AC_TSAN` switch).
  ///
  /// `@unchecked Sendable`: `mutex` guards `value`, exactly as `Mutex` does.
  final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ value: consuming Value) {
      self.value = value
      pthread_mutex_init(mutex, nil)
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value)
    }
  }
#else
  import Synchronization

  /// The lock this module keeps its shared state under: `Mutex`, named as in
  /// `AsyncCombinators` so that `-DAC_TSAN` can swap in a pthread mutex for ThreadSanitizer.
  typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
