#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Runs work that would otherwise nest, one call inside the next, one after another on the
/// same thread instead: what keeps deeply nested `<>` stack-safe when it starts, joins and is
/// released.
///
/// The first ``run(_:)`` on a thread runs its work, then everything queued meanwhile, in
/// order; a ``run(_:)`` made from inside that work only queues. So a fork-join nested a
/// hundred thousand deep starts, completes and frees its levels in a loop of one frame.
enum Trampoline {
  /// Runs `work` now if no trampoline is running on this thread, else after the work that is.
  static func run(_ work: @escaping () -> Void) {
    enqueue(.work(work))
  }

  /// Releases `value` after the work running on this thread, if any, rather than inside it:
  /// for a `deinit` whose fields would otherwise free a nested copy of itself recursively.
  /// The caller must hand over its last reference (`consume`), or nothing is deferred.
  static func release(_ value: consuming Any) {
    enqueue(.value(value))
  }

  private enum Item {
    case work(() -> Void)
    case value(Any)
    case done
  }

  private static func enqueue(_ item: consuming Item) {
    if let pending = current {
      pending.queue.append(item)
      return
    }
    let pending = Pending()
    pending.queue.append(item)
    current = pending
    var next = 0
    while next < pending.queue.count {
      // Taken out of the queue, so that it is released here, while the trampoline runs:
      // whatever its release frees queues behind it rather than recursing.
      var item = Item.done
      swap(&item, &pending.queue[next])
      next += 1
      if case .work(let work) = item { work() }
    }
    current = nil
  }

  /// The queue of one thread's running trampoline.
  private final class Pending {
    var queue: [Item] = []
  }
  private static let key: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
  }()

  private static var current: Pending? {
    get {
      pthread_getspecific(key).map { Unmanaged<Pending>.fromOpaque($0).takeUnretainedValue() }
    }
    set {
      if let old = pthread_getspecific(key) { Unmanaged<Pending>.fromOpaque(old).release() }
      pthread_setspecific(key, newValue.map { Unmanaged.passRetained($0).toOpaque() })
    }
  }
}
