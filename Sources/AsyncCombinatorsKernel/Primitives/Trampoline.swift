/// Bounds how deep work that nests, one call inside the next, goes on one thread's stack: what
/// keeps deeply nested `<>` stack-safe when it starts, joins and is released, without changing
/// what a shallow nesting means.
///
/// ``run(_:)`` calls its work at once, nested in the caller, while fewer than ``nestingLimit``
/// calls of it are on this thread's stack. Only past that depth does it queue the work instead,
/// to run when the outermost call on the thread returns. So a function that completes
/// synchronously does so inside a join, a race or a timeout as it does on its own, and a body
/// that starts a join and waits for it finds it started; while a fork-join nested a hundred
/// thousand deep starts, completes and frees its levels at most ``nestingLimit`` calls deep.
enum Trampoline {
  /// How many calls of ``run(_:)`` and ``release(_:)`` nest on one thread before the next
  /// waits for the outermost to return: deep enough that no nesting a person writes by hand
  /// reaches it, shallow enough that a 512 KiB stack holds it with room to spare.
  static let nestingLimit = 64

  /// Runs `work` now, nested in the caller, unless ``nestingLimit`` calls are running on this
  /// thread already; then after the outermost of them returns.
  static func run(_ work: @escaping () -> Void) {
    enter(.work(work))
  }

  /// Releases `value` now, or, ``nestingLimit`` calls deep, after the outermost call on this
  /// thread returns: for a `deinit` whose fields would otherwise free a nested copy of itself
  /// recursively. The caller must hand over its last reference (`consume`), or nothing is
  /// deferred.
  static func release(_ value: consuming Any) {
    enter(.value(value))
  }

  private enum Item {
    case work(() -> Void)
    case value(Any)
    case done
  }

  private static func enter(_ item: consuming Item) {
    let nesting = current
    guard nesting.active else {
      // The outermost call on this thread: run the item, then whatever was queued meanwhile.
      nesting.active = true
      nesting.perform(item)
      var next = 0
      while next < nesting.queue.count {
        // Taken out of the queue, so that it is released here, while the nesting is active:
        // whatever its release frees queues behind it rather than recursing.
        var queued = Item.done
        swap(&queued, &nesting.queue[next])
        next += 1
        nesting.perform(queued)
      }
      if !nesting.queue.isEmpty { nesting.queue.removeAll() }
      nesting.active = false
      return
    }
    if nesting.depth < nestingLimit {
      nesting.perform(item)
    } else {
      nesting.queue.append(item)
    }
  }

  /// The calls running on one thread: how deep they nest, and what waits for the outermost.
  private final class Nesting {
    /// Whether a call of ``run(_:)`` or ``release(_:)`` is running on the thread.
    var active = false
    var depth = 0
    var queue: [Item] = []

    /// Runs or releases `item` one level deeper.
    func perform(_ item: consuming Item) {
      depth += 1
      switch consume item {
      case .work(let work): work()
      case .value, .done: break
      }
      depth -= 1
    }
  }

  /// Each thread's nesting, kept from its first call for the thread's life.
  private static let nestings = ThreadLocalReference<Nesting>()

  /// This thread's nesting: made once per thread, not once per outermost call.
  private static var current: Nesting {
    if let nesting = nestings.value { return nesting }
    let nesting = Nesting()
    nestings.value = nesting
    return nesting
  }
}
