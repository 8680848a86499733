import AsyncCombinatorsKernel
import Dispatch

extension AsyncFunc where Input: Hashable {
  /// Collects the runs made while a batch is open into one call of `load`: DataLoader.
  ///
  /// Each run loads one key. The first run opens a batch and sends a block to `queue`; the
  /// batch closes when that block runs, or when it holds `maxBatchSize` keys and a run asks
  /// for another key (that run opens the next batch). Until then a full batch still takes
  /// runs of the keys it holds. A closed batch calls `load` once with its keys, in the order
  /// they were first asked for, each key once however many runs asked for it; every run gets
  /// the output at its key's position. `load` must return exactly one output per key, in
  /// order: any other count fails every run of the batch with ``ContractViolation`` naming
  /// `load`, and a failure of `load` fails them all.
  ///
  /// A run cancelled before its batch is sent leaves it (its key too, if no other run asked
  /// for it); when every run of a sent batch has been cancelled, the `load` run is cancelled.
  /// Create the batched function once and reuse it: each call of `batched` makes a new,
  /// independent loader. Add ``memoized(in:)`` for DataLoader's cache.
  ///
  /// ```swift
  /// let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { ids in
  ///   print("load", ids)
  ///   return ids.map { "user\($0)" }
  /// }
  /// let tick = DispatchQueue(label: "tick")
  /// let user = AsyncFunc<Int, String>.batched(usersByIDs, maxBatchSize: 100, on: tick)
  /// print(user)
  /// tick.sync {
  ///   // The batch's block on `tick` runs after this one: all three loads join the batch.
  ///   for id in [1, 2, 1] { user.run(id) { print(id, $0) } }
  /// }
  /// // prints batched(usersByIDs, maxBatchSize: 100)
  /// // prints load [1, 2]
  /// // prints 1 success("user1")
  /// // prints 2 success("user2")
  /// // prints 1 success("user1")
  /// ```
  ///
  /// - Precondition: `maxBatchSize` is at least 1; otherwise the program stops with a message
  ///   naming the caller's line.
  /// - Parameters:
  ///   - load: Loads a batch of keys, one output per key, in order.
  ///   - maxBatchSize: The most keys in one call of `load`; at least 1.
  ///   - queue: Where the block that closes a batch runs: the runs made before it join.
  ///   - file: The caller's file, named in a count mismatch and when `maxBatchSize` is out of
  ///     range.
  ///   - line: The caller's line, named likewise.
  /// - Returns: A function that loads one key.
  /// - Complexity: O(1) amortized per run, plus one cancellation registration per batch on
  ///   each token its runs wait on (the loads of one fold share one), and O(*k*) per batch of
  ///   *k* keys.
  public static func batched(
    _ load: AsyncFunc<[Input], [Output]>, maxBatchSize: Int = .max,
    on queue: DispatchQueue = .global(), file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc {
    Batcher(load, maxBatchSize: maxBatchSize, closing: .queue, queue: queue, file: file, line: line)
    {
      .success($0)
    }.function
  }

  /// Collects the runs made while a batch is open into one call of `load`, which gives each
  /// key its own outcome: the other `batched`, for a backend that fails keys one by one.
  ///
  /// ```swift
  /// let usersByIDs = AsyncFunc<[Int], [Result<String, any Error>]>.sync(name: "usersByIDs") {
  ///   $0.map { $0 > 0 ? .success("user\($0)") : .failure(CancellationError()) }
  /// }
  /// let user = AsyncFunc<Int, String>.batched(usersByIDs)
  /// print(user)
  /// print(try await user(1))
  /// // prints batched(usersByIDs)
  /// // prints user1
  /// ```
  ///
  /// - Precondition: `maxBatchSize` is at least 1; otherwise the program stops with a message
  ///   naming the caller's line.
  /// - Parameters:
  ///   - load: Loads a batch of keys, one outcome per key, in order.
  ///   - maxBatchSize: The most keys in one call of `load`; at least 1.
  ///   - queue: Where the block that closes a batch runs: the runs made before it join.
  ///   - file: The caller's file, named in a count mismatch and when `maxBatchSize` is out of
  ///     range.
  ///   - line: The caller's line, named likewise.
  /// - Returns: A function that loads one key.
  /// - Complexity: As the other form.
  public static func batched(
    _ load: AsyncFunc<[Input], [Result<Output, any Error>]>, maxBatchSize: Int = .max,
    on queue: DispatchQueue = .global(), file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc {
    Batcher(load, maxBatchSize: maxBatchSize, closing: .queue, queue: queue, file: file, line: line)
    {
      $0
    }.function
  }

  /// Collects the runs made within `window` of a batch's first run into one call of `load`:
  /// `batched` for callers that `await`, which do not all arrive in one turn of a queue.
  ///
  /// A batch opens at its first run and closes `window` later on `clock`, when it is sent on
  /// `queue`, or as soon as it holds `maxBatchSize` keys, when it is sent at once (the next
  /// key opens the next batch, with its own window). Until its window ends, a full batch still
  /// takes runs of its keys: while its call is out they wait for it, and once it has delivered
  /// they get its outputs at once. So the runs made within one window of *d* distinct keys
  /// make ⌈*d* / `maxBatchSize`⌉ calls, in whatever order they come. Keys, outputs,
  /// duplicates, a count mismatch, a failure of `load` and cancellation are as in the other
  /// `batched`; a batch whose `load` failed, or whose runs have all been cancelled, takes no
  /// more runs, and one cancelled before it was sent takes its timer back and makes no call.
  ///
  /// Choose this form when the loads come from tasks (`async let`, a task group, separate
  /// `await`s); the other form closes a batch at its block on `queue`, which adds no wait but
  /// only collects the runs made before that block runs.
  ///
  /// ```swift
  /// let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { ids in
  ///   print("load", ids.count, "keys")
  ///   return ids.map { "user\($0)" }
  /// }
  /// let user = AsyncFunc<Int, String>.batched(
  ///   usersByIDs, maxBatchSize: 50, window: .milliseconds(100))
  /// print(user)
  /// async let ada = user(1)
  /// async let grace = user(2)
  /// print(try await [ada, grace])
  /// // prints batched(usersByIDs, maxBatchSize: 50, window: 0.1 seconds)
  /// // prints load 2 keys
  /// // prints ["user1", "user2"]
  /// ```
  ///
  /// - Parameters:
  ///   - load: Loads a batch of keys, one output per key, in order.
  ///   - maxBatchSize: The most keys in one call of `load`; at least 1.
  ///   - window: How long a batch stays open after its first run; not negative.
  ///   - clock: The clock the window is measured on; `ContinuousClock()` unless given.
  ///   - queue: Where a batch that is not full is sent once its window has closed.
  ///   - file: The caller's file, named in a count mismatch and when `maxBatchSize` or
  ///     `window` is out of range.
  ///   - line: The caller's line, named likewise.
  /// - Returns: A function that loads one key.
  /// - Complexity: As the other form, plus one timer per batch; a full batch keeps its
  ///   outputs until its window ends.
  public static func batched<C: Clock>(
    _ load: AsyncFunc<[Input], [Output]>, maxBatchSize: Int = .max, window: Duration,
    clock: C = ContinuousClock(), on queue: DispatchQueue = .global(),
    file: StaticString = #fileID, line: UInt = #line
  ) -> AsyncFunc where C.Duration == Duration {
    require(
      window >= .zero, "batched(window: \(window)): the window must not be negative", file: file,
      line: line)
    return Batcher(
      load, maxBatchSize: maxBatchSize, closing: .window(window, TimerClock(clock)), queue: queue,
      file: file, line: line
    ) { .success($0) }.function
  }
}

/// When a loader's batches close.
private enum Closing: Sendable {
  /// At the block each batch sends to the loader's queue when it opens.
  case queue
  /// This long after each batch opens, on the clock.
  case window(Duration, TimerClock)
}

/// The batches of one loader that runs may join.
private struct OpenBatches<Key: Hashable & Sendable, Value: Sendable> {
  /// The batch a new key joins.
  var current: Batch<Key, Value>?
  /// With a window: the keys of full batches, sent already, whose window has not ended, each
  /// to its batch, which still serves runs of it.
  var held: [Key: Batch<Key, Value>] = [:]

  /// `batch`'s window is over: runs of its keys go to a new batch.
  mutating func release(_ batch: Batch<Key, Value>) {
    batch.endWindow()
    for key in batch.sent where held[key] === batch { held[key] = nil }
  }
}

/// One `batched` loader: the batches open now, and how to send one.
///
/// Every batch's state is behind `open`'s lock.
private final class Batcher<Key: Hashable & Sendable, Value: Sendable, Element: Sendable>:
  Sendable
{
  typealias Completion = @Sendable (Result<Value, any Error>) -> Void

  let load: AsyncFunc<[Key], [Element]>
  let outcome: @Sendable (Element) -> Result<Value, any Error>
  let maxBatchSize: Int
  let closing: Closing
  let queue: DispatchQueue
  /// Names `load` in a count mismatch.
  let loader: (name: String, fileID: String, line: Int)
  let call: String
  let open = Locked(OpenBatches<Key, Value>())

  init(
    _ load: AsyncFunc<[Key], [Element]>, maxBatchSize: Int, closing: Closing,
    queue: DispatchQueue, file: StaticString, line: UInt,
    outcome: @escaping @Sendable (Element) -> Result<Value, any Error>
  ) {
    require(
      maxBatchSize >= 1, "batched(maxBatchSize: \(maxBatchSize)): it must be at least 1",
      file: file, line: line)
    self.load = load
    self.outcome = outcome
    self.maxBatchSize = maxBatchSize
    self.closing = closing
    self.queue = queue
    loader = ("\(load)", "\(file)", Int(line))
    var arguments = "\(load)"
    if maxBatchSize != .max { arguments += ", maxBatchSize: \(maxBatchSize)" }
    if case .window(let window, _) = closing { arguments += ", window: \(window)" }
    call = "batched(\(arguments))"
  }

  /// A stage of its own, built as every library stage is. Its run counts as one body in
  /// flight until its key's outcome comes; the batch's `load` runs on the batch's own token,
  /// counted by no caller's limit, since it serves them all.
  var function: AsyncFunc<Key, Value> {
    let label = Label(name: call, fileID: loader.fileID, line: loader.line)
    return AsyncFunc(
      program: .make(.stage(label), label: label) { key, token, completion in
        self.run(unbox(key), token: token, complete: completion.typed())
      })
  }

  private var windowed: Bool {
    if case .window = closing { true } else { false }
  }

  /// Where a run went.
  private enum Joined {
    /// Into `batch`; `watches` when it is the batch's first run on its token, `opened` when
    /// it opened the batch, and `full` a batch to send now.
    case batch(
      Batch<Key, Value>, watches: Bool, opened: Bool, full: (batch: Batch<Key, Value>, keys: [Key])?
    )
    /// Its key's outcome, delivered already within the window.
    case served(Result<Value, any Error>)
  }

  private func run(_ key: Key, token: CancellationToken, complete: @escaping Completion) {
    let joined = windowed ? joinWindowed(key, token, complete) : join(key, token, complete)
    switch joined {
    case .served(let result):
      complete(result)
    case .batch(let batch, let watches, let opened, let full):
      if opened { arm(batch) }
      if watches { watch(token, batch) }
      if let full { send(full.batch, full.keys) }
    }
  }

  private func join(_ key: Key, _ token: CancellationToken, _ complete: @escaping Completion)
    -> Joined
  {
    open.withLock { open in
      // A full batch still takes the keys it holds; a new key closes it and opens the next.
      var full: (batch: Batch<Key, Value>, keys: [Key])?
      if let current = open.current, !current.hasRoom(for: key, atMost: maxBatchSize) {
        full = (current, current.close())
        open.current = nil
      }
      let opened = open.current == nil
      let batch = open.current ?? Batch()
      open.current = batch
      return .batch(
        batch, watches: batch.add(key, complete, waitingOn: token), opened: opened, full: full)
    }
  }

  /// With a window: a batch is sent once it holds `maxBatchSize` keys, and until its window
  /// ends runs of its keys still join it, or get the outcome it delivered.
  private func joinWindowed(
    _ key: Key, _ token: CancellationToken, _ complete: @escaping Completion
  ) -> Joined {
    open.withLock { open in
      if let holding = open.held[key] {
        if let served = holding.served(key) { return .served(served) }
        return .batch(
          holding, watches: holding.add(key, complete, waitingOn: token), opened: false,
          full: nil)
      }
      let opened = open.current == nil
      let batch = open.current ?? Batch()
      open.current = batch
      let watches = batch.add(key, complete, waitingOn: token)
      guard batch.liveKeys >= maxBatchSize else {
        return .batch(batch, watches: watches, opened: opened, full: nil)
      }
      let keys = batch.close()
      open.current = nil
      for key in keys { open.held[key] = batch }
      return .batch(batch, watches: watches, opened: opened, full: (batch, keys))
    }
  }

  /// Arranges for a batch that has just opened to close.
  private func arm(_ batch: Batch<Key, Value>) {
    switch closing {
    case .queue:
      queue.async {
        let keys = self.open.withLock { open -> [Key]? in
          guard open.current === batch else { return nil }  // Closed full already.
          open.current = nil
          return batch.close()
        }
        if let keys { self.send(batch, keys) }
      }
    case .window(let window, let timers):
      // Scheduled outside the lock: a clock whose time has passed the deadline fires at once.
      let timer = timers.deadline(after: window).schedule { self.endWindow(of: batch) }
      keepOrRevoke(timer) { timer in open.withLock { _ in batch.keep(timer) } }
    }
  }

  /// The window of `batch` has ended: a batch not sent yet closes and is sent on the queue; a
  /// full one, sent already, takes no more runs.
  private func endWindow(of batch: Batch<Key, Value>) {
    let keys = open.withLock { open -> [Key]? in
      guard batch.isWindowOpen else { return nil }  // Every run left, or its load failed.
      guard open.current === batch else {
        open.release(batch)
        return nil
      }
      open.current = nil
      batch.endWindow()
      return batch.close()
    }
    if let keys { queue.async { self.send(batch, keys) } }
  }

  /// Registers the one handler on `token` that takes every run of `batch` waiting on it out.
  private func watch(_ token: CancellationToken, _ batch: Batch<Key, Value>) {
    // Registered outside the lock: a token cancelled already runs the handler at once.
    let registration = token.onCancel { self.leave(batch, token) }
    keepOrRevoke(registration) { registration in
      open.withLock { _ in batch.keep(registration, for: token) }
    }
  }

  private func send(_ batch: Batch<Key, Value>, _ keys: [Key]) {
    guard !keys.isEmpty else { return }  // Every run left before it was sent.
    load.run(keys, token: batch.token) { result in self.deliver(batch, keys.count, result) }
  }

  /// `token` was cancelled: its runs leave the batch, each with `CancellationError`.
  private func leave(_ batch: Batch<Key, Value>, _ token: CancellationToken) {
    let windowed = windowed
    let (left, cancel, timer) = open.withLock {
      open -> ([Batch<Key, Value>.Waiter], Bool, ScheduledTimer?) in
      let (left, cancel) = batch.remove(waitingOn: token)
      guard windowed, batch.isWindowOpen else { return (left, cancel, nil) }
      if cancel {
        // Its load is cancelled: no later run may join it.
        open.release(batch)
        return (left, cancel, batch.timer)
      }
      // A batch not sent yet that every run has left ends now, and takes its timer back.
      guard !batch.isClosed, batch.liveKeys == 0 else { return (left, cancel, nil) }
      if open.current === batch { open.current = nil }
      batch.endWindow()
      _ = batch.close()
      return (left, cancel, batch.timer)
    }
    timer?.cancel()
    for waiter in left { waiter.complete(.failure(CancellationError())) }
    if cancel { batch.token.cancel() }
  }

  private func deliver(
    _ batch: Batch<Key, Value>, _ count: Int, _ result: Result<[Element], any Error>
  ) {
    let outcomes = result.flatMap { elements -> Result<[Element], any Error> in
      guard elements.count == count else {
        return .failure(
          ContractViolation(
            kind: .resultCountMismatch(keys: count, results: elements.count),
            name: loader.name, fileID: loader.fileID, line: loader.line))
      }
      return .success(elements)
    }
    // Within its window, a full batch serves later runs of its keys their outcomes; a batch
    // that failed as a whole serves nothing, so they make a new call.
    let served = windowed ? try? outcomes.get().map(outcome) : nil
    let (waiters, positions, registrations, timer) = open.withLock {
      open -> ([Batch<Key, Value>.Waiter], [Int], [CancellationToken.Registration], ScheduledTimer?)
      in
      var timer: ScheduledTimer?
      if windowed, batch.isWindowOpen {
        if let served {
          batch.serve(served)
        } else {
          open.release(batch)
          timer = batch.timer
        }
      }
      let (waiters, positions, registrations) = batch.deliver()
      return (waiters, positions, registrations, timer)
    }
    timer?.cancel()
    for registration in registrations { registration.remove() }
    for waiter in waiters {
      if let served {
        waiter.complete(served[positions[waiter.slot]])
        continue
      }
      switch outcomes {
      case .success(let elements): waiter.complete(outcome(elements[positions[waiter.slot]]))
      case .failure(let error): waiter.complete(.failure(error))
      }
    }
  }
}

/// The keys and runs of one batch.
///
/// `@unchecked Sendable`: every `var` is read and written only under its loader's lock.
private final class Batch<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
  /// A run waiting for its key: its completion, and the token it waits on.
  struct Waiter: Sendable {
    let slot: Int
    let complete: @Sendable (Result<Value, any Error>) -> Void
    let token: ObjectIdentifier
  }

  /// The one cancellation handler of the runs waiting on one token: inside a fold every load waits
  /// on the fold's token, which every element shares
  /// (Performance.md, "What the code's shape buys, and the check that holds it"). It holds the
  /// token, so no other token can take its identity while it lives.
  struct Watch {
    let token: CancellationToken
    /// Once registered; `nil` while the run that made the watch registers it.
    var registration: CancellationToken.Registration?
  }

  let token = CancellationToken()
  /// The keys in the order first asked for; `nil` where every run of a key left.
  private var keys: [Key?] = []
  private var slots: [Key: Int] = [:]
  private var runsPerSlot: [Int] = []
  private(set) var liveKeys = 0
  /// In arrival order.
  private var waiters: [Waiter] = []
  /// By the identity of the token their runs wait on.
  private var watches: [ObjectIdentifier: Watch] = [:]
  /// Closed: no key joins or leaves it any more.
  private var closed = false
  /// With a window: the timer that ends it, once armed.
  private(set) var timer: ScheduledTimer?
  /// With a window: until it ends, runs of its keys may join.
  private(set) var isWindowOpen = true
  /// The keys sent, in order, once closed.
  private(set) var sent: [Key] = []
  /// With a window, once delivered: each sent key's outcome, served to runs that come later
  /// within the window.
  private var outcomes: [Result<Value, any Error>]?
  private var delivered = false
  /// Each slot's position among the keys sent.
  private var positions: [Int] = []

  var isClosed: Bool { closed }

  /// Keeps the timer that ends the window; `false` if it has ended meanwhile.
  func keep(_ timer: ScheduledTimer) -> Bool {
    guard isWindowOpen else { return false }
    self.timer = timer
    return true
  }

  func endWindow() {
    isWindowOpen = false
    outcomes = nil
  }

  /// Keeps the delivered outcomes of the sent keys, for runs that come later in the window.
  func serve(_ outcomes: [Result<Value, any Error>]) { self.outcomes = outcomes }

  /// The outcome delivered for `key`, if the batch has been delivered and serves it.
  func served(_ key: Key) -> Result<Value, any Error>? {
    guard let outcomes, let slot = slots[key] else { return nil }
    return outcomes[positions[slot]]
  }

  /// Whether a run of `key` may join: the batch holds the key, or fewer than `most` keys.
  func hasRoom(for key: Key, atMost most: Int) -> Bool {
    slots[key] != nil || liveKeys < most
  }

  /// Adds a run of `key`; returns whether it is the first run of the batch waiting on
  /// `token`, whose handler it is then to register.
  func add(
    _ key: Key, _ complete: @escaping @Sendable (Result<Value, any Error>) -> Void,
    waitingOn token: CancellationToken
  ) -> Bool {
    let slot: Int
    if let existing = slots[key] {
      slot = existing
    } else {
      slot = keys.count
      keys.append(key)
      runsPerSlot.append(0)
      slots[key] = slot
      liveKeys += 1
    }
    runsPerSlot[slot] += 1
    let id = ObjectIdentifier(token)
    waiters.append(Waiter(slot: slot, complete: complete, token: id))
    guard watches[id] == nil else { return false }
    watches[id] = Watch(token: token)
    return true
  }

  /// Closes the batch; returns the keys to send, in order.
  func close() -> [Key] {
    closed = true
    var sent: [Key] = []
    sent.reserveCapacity(liveKeys)
    positions = keys.map { key in
      guard let key else { return -1 }
      sent.append(key)
      return sent.count - 1
    }
    self.sent = sent
    return sent
  }

  /// Keeps the handler of the runs waiting on `token`; `false` if they have all left, or
  /// been delivered, meanwhile.
  func keep(_ registration: CancellationToken.Registration, for token: CancellationToken) -> Bool {
    let id = ObjectIdentifier(token)
    guard watches[id] != nil else { return false }
    watches[id]!.registration = registration
    return true
  }

  /// Takes out the runs waiting on a cancelled `token`; returns them, and whether the batch's
  /// call is now to be cancelled (the batch was sent and no run is left). Keys no run asks for
  /// any more leave a batch not yet sent.
  func remove(waitingOn token: CancellationToken) -> ([Waiter], Bool) {
    let id = ObjectIdentifier(token)
    guard watches.removeValue(forKey: id) != nil else { return ([], false) }
    var left: [Waiter] = []
    waiters.removeAll { waiter in
      guard waiter.token == id else { return false }
      left.append(waiter)
      return true
    }
    guard !closed else { return (left, waiters.isEmpty && !delivered) }
    for waiter in left {
      runsPerSlot[waiter.slot] -= 1
      if runsPerSlot[waiter.slot] == 0, let key = keys[waiter.slot] {
        keys[waiter.slot] = nil
        slots[key] = nil
        liveKeys -= 1
      }
    }
    return (left, false)
  }

  /// Every run still waiting, the slots' positions, and the handlers to take back, taken for
  /// delivery.
  func deliver() -> ([Waiter], [Int], [CancellationToken.Registration]) {
    delivered = true
    defer {
      waiters = []
      watches = [:]
    }
    return (waiters, positions, watches.values.compactMap(\.registration))
  }
}
