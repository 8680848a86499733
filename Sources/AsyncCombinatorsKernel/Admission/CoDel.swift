/// The rule of a gate whose queue limit is ``QueueLimit/codel(target:interval:file:line:)``.
///
/// Each priority's lane remembers when it last saw a short wait: when it was made (its
/// priority's queue was empty just before), or when a waiter left it admitted after at most
/// `target`. Once that is `interval` ago or more, the priority is overloaded: a standing queue,
/// not a burst. The state is per lane because the runs of a high priority are admitted first:
/// their short waits would keep a shared state clear while the low ones queue for ever.
struct CoDel {
  let target: Duration
  let interval: Duration

  /// How long a waiter of an overloaded priority may wait: twice the target, as folly's
  /// `Codel` sloughs. The admitted then wait between the target and this, which keeps their
  /// priority overloaded while the overload lasts; cutting at the target itself would let an
  /// admitted run's short wait clear the state and the queue grow back for an interval.
  var sloughAfter: Duration { target * 2 }

  /// Whether a waiter that has waited `wait` is turned away at `now`, in a lane that last saw
  /// a short wait at `lastShort`.
  func sheds(wait: Duration, lastShort: Duration, at now: Duration) -> Bool {
    wait > sloughAfter && now - lastShort >= interval
  }

  /// When the lane last saw a short wait, once a waiter that waited `wait` was admitted at
  /// `now`.
  func lastShort(_ lastShort: Duration, admittedAfter wait: Duration, at now: Duration)
    -> Duration
  {
    wait <= target ? now : lastShort
  }
}
