#if AC_TSAN
  #if canImport(Darwin)
    import Darwin
  #elseif canImport(Glibc)
    import Glibc
  #elseif canImport(Musl)
    import Musl
  #endif

  /// The lock every piece of shared state in the package (the library, its testing module and
  /// the tests) is kept under.
  ///
  /// Normally it *is* `Mutex` from `Synchronization`. On Linux that `Mutex` waits with
  /// priority-inheriting futexes, where the kernel hands ownership over and no user-space
  /// acquire happens, so ThreadSanitizer sees no happens-before and reports races that
  /// cannot occur. `.ci/run` therefore builds the sanitized tests with `-DAC_TSAN`, which
  /// swaps in this `pthread_mutex_t` twin that ThreadSanitizer understands; what it checks
  /// is how the library uses its locks, which is the same with either.
  ///
  /// `@unchecked Sendable`: `mutex` guards `value`, exactly as `Mutex` does.
  package final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    package init(_ value: consuming Value) {
      self.value = value
      pthread_mutex_init(mutex, nil)
    }

    deinit {
      pthread_mutex_destroy(mutex)
      mutex.deallocate()
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
      pthread_mutex_lock(mutex)
      defer { pthread_mutex_unlock(mutex) }
      return try body(&value)
    }
  }
#else
  import Synchronization

  /// The lock every piece of shared state in the package (the library, its testing module and
  /// the tests) is kept under: `Mutex` from `Synchronization`. See the `AC_TSAN` branch of this
  /// file for why it has a name of its own.
  package typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
