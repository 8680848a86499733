/// The controller of a gate whose queue limit is ``QueueLimit/codel(target:interval:file:line:)``:
/// one state per priority, kept under the gate's lock.
///
/// Per priority, time is cut in windows of `interval`. A window's shortest wait decides
/// whether the next window is overloaded; while it is, a waiter older than ``sloughAfter`` is
/// turned away. One state per priority, because the runs of a high priority are admitted
/// first: their short waits would keep a shared state clear while the low ones queue for ever.
struct CoDel {
  /// The state of one priority.
  private struct Lane {
    let priority: Int
    /// When the current window ends, on the gate's clock.
    var windowEnd: Duration
    /// The shortest wait seen in the current window, if any.
    var shortest: Duration?
    /// Whether the window before the current one saw no wait at or under the target.
    var isOverloaded = false
  }

  let target: Duration
  let interval: Duration
  /// The states of the priorities seen so far, highest first; few, so searched in order.
  private var lanes: [Lane] = []

  init(target: Duration, interval: Duration) {
    self.target = target
    self.interval = interval
  }

  /// How long a waiter of an overloaded priority may wait: twice the target, as folly's
  /// `Codel` sloughs. The admitted then wait between the target and this, which keeps their
  /// priority overloaded while the overload lasts; cutting at the target itself would clear
  /// the state every other window and let the queue grow back in between.
  var sloughAfter: Duration { target * 2 }

  /// Whether a waiter of `priority` that has waited `wait` is turned away at `now`; `oldest`
  /// is the wait so far of its priority's oldest waiter, `nil` if none waits.
  mutating func sheds(priority: Int, wait: Duration, oldest: Duration?, at now: Duration) -> Bool {
    guard wait > sloughAfter else { return false }
    let index = roll(priority, oldest: oldest, at: now)
    return lanes[index].isOverloaded
  }

  /// A run of `priority` left the queue after `wait` (zero if admitted at once) at `now`.
  mutating func observe(_ wait: Duration, priority: Int, oldest: Duration?, at now: Duration) {
    let index = roll(priority, oldest: oldest, at: now)
    lanes[index].shortest = min(lanes[index].shortest ?? wait, wait)
  }

  /// The index of `priority`'s state, its window ended and the next one begun if due.
  private mutating func roll(_ priority: Int, oldest: Duration?, at now: Duration) -> Int {
    var index = 0
    while index < lanes.count && lanes[index].priority > priority { index += 1 }
    guard index < lanes.count, lanes[index].priority == priority else {
      lanes.insert(Lane(priority: priority, windowEnd: now + interval), at: index)
      return index
    }
    guard now >= lanes[index].windowEnd else { return index }
    // A window that ended more than an interval ago tells nothing of the last one.
    var shortest = now < lanes[index].windowEnd + interval ? lanes[index].shortest : nil
    if let oldest { shortest = min(shortest ?? oldest, oldest) }
    lanes[index].isOverloaded = (shortest ?? .zero) > target
    lanes[index].shortest = nil
    lanes[index].windowEnd = now + interval
    return index
  }
}
