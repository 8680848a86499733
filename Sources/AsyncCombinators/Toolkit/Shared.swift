import Synchronization

extension AsyncFunc where Input: Hashable {
  /// Runs with the same input as a run in flight join it instead of calling this function
  /// again: Go's `singleflight`.
  ///
  /// Every run that starts while a call for its input is in flight gets that call's result,
  /// value or error. Cancelling one run ends that run alone, with `CancellationError`; the call
  /// itself is cancelled only when every run that joined it has been cancelled. A call that
  /// was cancelled but is still running is waited for, never overlapped: runs of its input that
  /// start meanwhile make one new call together once it has called back. Create the shared
  /// function once and reuse it; each call of `shared()` makes a new, independent table.
  ///
  /// ```swift
  /// let avatar = AsyncFunc<String, String>(name: "avatar") { user, complete in
  ///   print("fetching", user)
  ///   DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
  ///     complete(.success("\(user).png"))
  ///   }
  /// }
  /// let once = avatar.shared()
  /// print(once)
  /// print(try await once.concurrentMap()(["ada", "ada", "ada"]))
  /// // prints avatar.shared()
  /// // prints fetching ada
  /// // prints ["ada.png", "ada.png", "ada.png"]
  /// ```
  ///
  /// - Returns: A function with the same input and output whose runs share calls in flight.
  /// - Complexity: O(1) amortized per run, plus one cancellation registration on its token.
  public func shared() -> AsyncFunc {
    sharing(by: { $0 }, in: FlightTable(policy: nil), call: "shared()")
  }
}

extension AsyncFunc {
  /// Runs whose inputs have the same key as a run in flight join it instead of calling this
  /// function again: ``shared()`` for inputs that are not themselves the key.
  ///
  /// A joining run gets the result of the call made with the first input of its key.
  ///
  /// ```swift
  /// struct Request: Sendable { let user: String; let attempt: Int }
  /// let avatar = AsyncFunc<Request, String>.sync(name: "avatar") { "\($0.user).png" }
  /// let once = avatar.shared(by: \.user)
  /// print(once)
  /// print(try await once(Request(user: "ada", attempt: 1)))
  /// // prints avatar.shared(by: { … })
  /// // prints ada.png
  /// ```
  ///
  /// - Parameter key: The key of an input; runs of equal keys share a call.
  /// - Returns: A function with the same input and output whose runs share calls in flight.
  /// - Complexity: O(1) amortized per run, plus one cancellation registration on its token.
  public func shared<Key: Hashable & Sendable>(
    by key: @escaping @Sendable (Input) -> Key
  ) -> AsyncFunc {
    sharing(by: key, in: FlightTable(policy: nil), call: "shared(by: { … })")
  }

  /// This function with its runs sharing calls in flight, and results, through `table`.
  func sharing<Key: Hashable & Sendable>(
    by key: @escaping @Sendable (Input) -> Key, in table: FlightTable<Key, Output>, call: String
  ) -> AsyncFunc {
    let flightCall = table.flightCall(self)
    return AsyncFunc(wrapping: self, call: call) { input, token, complete in
      table.run(input, key: key(input), token: token, complete: complete, call: flightCall)
    }
  }
}

/// What the call of one flight is given: its input, and the flight it lands.
struct FlightInput<Input: Sendable, Key: Hashable & Sendable, Value: Sendable>: Sendable {
  let input: Input
  let flight: Flight<Key, Value>
}

/// The calls in flight, by key, and for a ``ResultCache`` the results kept: one lock for both,
/// so that a flight stores its result and leaves the table in one step, and no run between
/// the two finds neither and calls again.
///
/// Without a cache the keys are spread over several stripes, each with its own lock, so runs
/// of distinct keys seldom wait for each other's lock; a cache has one stripe, since its
/// recency order spans every key. A flight and its successors live in their key's stripe.
///
/// A key's entry is its *head* flight: flying (runs join it), cancelled but still running, or
/// delivered but not yet landed (runs wait for it in its `successor`, which it launches when
/// it lands). A flight *lands* when its call is over: its body has called back, or it never
/// started.
final class FlightTable<Key: Hashable & Sendable, Value: Sendable>: Sendable {
  typealias Completion = @Sendable (Result<Value, any Error>) -> Void
  typealias Joiner = Flight<Key, Value>.Joiner

  struct State {
    var flights: [Key: Flight<Key, Value>] = [:]
    /// The kept results, for a ``ResultCache``; `nil` for ``AsyncFunc/shared()``.
    var entries: CacheEntries<Key, Value>?
  }

  /// One lock's share of the keys.
  final class Stripe: Sendable {
    let state: Locked<State>
    init(_ state: State) { self.state = Locked(state) }
  }

  /// A power of two of them.
  let stripes: [Stripe]
  /// What a ``ResultCache`` keeps, and for how long; `nil` keeps nothing.
  let policy: CachePolicy?

  init(policy: CachePolicy?) {
    self.policy = policy
    stripes =
      policy == nil
      ? (0..<16).map { _ in Stripe(State()) } : [Stripe(State(entries: CacheEntries()))]
  }

  private func stripe(for key: Key) -> Stripe {
    stripes.count == 1 ? stripes[0] : stripes[key.hashValue & (stripes.count - 1)]
  }

  /// The call a flight makes: `function` on the flight's input, with the flight told when it
  /// started and when it landed.
  ///
  /// The marker stage is the first one inside the `tap`, so once it has run, the tap sees the
  /// call's end; a call cancelled before it reached the marker never started at all.
  func flightCall<Input: Sendable>(
    _ function: AsyncFunc<Input, Value>
  ) -> AsyncFunc<FlightInput<Input, Key, Value>, Value> {
    let marker = AsyncFunc<FlightInput<Input, Key, Value>, Input>.sync(name: "flight") {
      $0.flight.started.store(true, ordering: .releasing)
      return $0.input
    }
    return (marker +> function).tap { flightInput, result in
      self.landed(flightInput.flight, result)
    }
  }

  /// One run: a kept result, a flight to join, or a new flight.
  func run<Input: Sendable>(
    _ input: Input, key: Key, token: CancellationToken, complete: @escaping Completion,
    call: AsyncFunc<FlightInput<Input, Key, Value>, Value>
  ) {
    let now = policy?.now() ?? .zero
    let stripe = stripe(for: key)
    let step = stripe.state.withLock { state -> Step in
      if let kept = state.entries?.lookup(key, now: now, lifetime: policy?.lifetime) {
        return .kept(kept)
      }
      guard let head = state.flights[key] else {
        let flight = makeFlight(key, .flying, input, call, stripe)
        state.flights[key] = flight
        return .launch(flight, flight.add(complete))
      }
      if head.phase == .flying { return .joined(head, head.add(complete)) }
      // Cancelled or delivered, but not landed: wait for it, never overlap it.
      let next = head.successor ?? makeFlight(key, .waiting, input, call, stripe)
      head.successor = next
      return .joined(next, next.add(complete))
    }
    switch step {
    case .kept(let result):
      complete(result)
    case .joined(let flight, let id):
      watch(token, flight, id)
    case .launch(let flight, let id):
      let registration = token.onCancel { self.leave(flight, id) }
      launch(flight, keeping: (registration, id))
    }
  }

  /// A flight whose call, when launched, runs `call` with `input`.
  private func makeFlight<Input: Sendable>(
    _ key: Key, _ phase: Flight<Key, Value>.Phase, _ input: Input,
    _ call: AsyncFunc<FlightInput<Input, Key, Value>, Value>, _ stripe: Stripe
  ) -> Flight<Key, Value> {
    Flight(key: key, phase: phase, stripe: stripe) { flight in
      call.run(FlightInput(input: input, flight: flight), token: flight.token) { result in
        self.delivered(flight, result)
      }
    }
  }

  /// Listens for the cancellation of a joined run, until its flight delivers.
  private func watch(_ token: CancellationToken, _ flight: Flight<Key, Value>, _ id: Int) {
    // Registered outside the lock: a token cancelled already runs the handler at once.
    let registration = token.onCancel { self.leave(flight, id) }
    let kept = flight.stripe.state.withLock { _ in flight.keep(registration, for: id) }
    if !kept { registration.remove() }
  }

  /// Starts a flight's call, unless every run that joined it has left before it could start.
  ///
  /// - Parameter first: The registration of the run that made the flight, kept under the same
  ///   lock as the launch.
  private func launch(
    _ flight: Flight<Key, Value>,
    keeping first: (registration: CancellationToken.Registration, id: Int)? = nil
  ) {
    let (go, kept) = flight.stripe.state.withLock { _ in
      let kept = first.map { flight.keep($0.registration, for: $0.id) } ?? true
      guard !flight.joiners.isEmpty else { return (false, kept) }
      flight.launched = true
      return (true, kept)
    }
    if !kept { first?.registration.remove() }
    guard go else { return landed(flight, nil) }
    flight.start(flight)
    // The call starts on this thread; if it did not reach its marker, it was cancelled first
    // and is over, and its tap will never see it.
    if !flight.started.load(ordering: .acquiring) { landed(flight, nil) }
  }

  /// A joined run was cancelled: it leaves its flight, and the last to leave a launched flight
  /// cancels the call.
  private func leave(_ flight: Flight<Key, Value>, _ id: Int) {
    let (left, cancel) = flight.stripe.state.withLock { _ -> (Joiner?, Bool) in
      guard let joiner = flight.remove(id) else { return (nil, false) }
      guard flight.joiners.isEmpty, flight.phase == .flying, flight.launched else {
        return (joiner, false)
      }
      flight.phase = .cancelled
      return (joiner, true)
    }
    guard let left else { return }
    // The run has delivered its cancellation already; this settles its stage's completion.
    left.complete(.failure(CancellationError()))
    if cancel { flight.token.cancel() }
  }

  /// The call's run delivered: its result goes to every run that joined the flight.
  private func delivered(_ flight: Flight<Key, Value>, _ result: Result<Value, any Error>) {
    // Landed first, as a call that ends on its own does: its runs have their result.
    if flight.landed.load(ordering: .acquiring) { return }
    let joiners = flight.stripe.state.withLock { _ in flight.takeJoiners() }
    Self.deliver(result, to: joiners)
  }

  /// The call is over: the result is kept (if it may be), the flight leaves the table, and a
  /// successor that runs wait in takes its place. `result` is `nil` for a call never started.
  func landed(_ flight: Flight<Key, Value>, _ result: Result<Value, any Error>?) {
    let now = policy?.now() ?? .zero
    let (joiners, next) = flight.stripe.state.withLock {
      state -> ([Joiner], Flight<Key, Value>?) in
      guard !flight.landed.load(ordering: .relaxed) else { return ([], nil) }
      flight.landed.store(true, ordering: .releasing)
      if let result, let policy, flight.keepsResult, flight.phase != .cancelled,
        policy.keeps(result)
      {
        state.entries?.store(result, for: flight.key, now: now, capacity: policy.capacity)
      }
      let joiners = flight.takeJoiners()
      guard state.flights[flight.key] === flight else { return (joiners, nil) }
      return (joiners, Self.promote(flight.successor, at: flight.key, in: &state))
    }
    // Runs are left only in a call that delivered nothing, which was cancelled.
    Self.deliver(result ?? .failure(CancellationError()), to: joiners)
    if let next { launch(next) }
  }

  /// Makes `successor` the head of `key` if any run waits in it, else empties the entry.
  private static func promote(
    _ successor: Flight<Key, Value>?, at key: Key, in state: inout State
  ) -> Flight<Key, Value>? {
    guard let successor, !successor.joiners.isEmpty else {
      state.flights[key] = nil
      return nil
    }
    successor.phase = .flying
    state.flights[key] = successor
    return successor
  }

  private static func deliver(_ result: Result<Value, any Error>, to joiners: [Joiner]) {
    for joiner in joiners {
      joiner.registration?.remove()
      joiner.complete(result)
    }
  }

  /// Drops `key`'s kept result, and detaches its flight: that flight's result is not kept, and
  /// the next run of the key makes a new call. Runs waiting for a cancelled flight start theirs.
  func forget(_ key: Key) {
    let next = stripe(for: key).state.withLock { state -> Flight<Key, Value>? in
      state.entries?.remove(key)
      return Self.detach(key, in: &state)
    }
    if let next { launch(next) }
  }

  /// ``forget(_:)`` for every key.
  func forgetAll() {
    let launches = stripes.flatMap { stripe in
      stripe.state.withLock { state -> [Flight<Key, Value>] in
        state.entries?.removeAll()
        return Array(state.flights.keys).compactMap { Self.detach($0, in: &state) }
      }
    }
    for flight in launches { launch(flight) }
  }

  private static func detach(_ key: Key, in state: inout State) -> Flight<Key, Value>? {
    guard let head = state.flights[key] else { return nil }
    head.keepsResult = false
    let successor = head.successor
    head.successor = nil
    return promote(successor, at: key, in: &state)
  }

  /// What a run found in the table.
  private enum Step {
    case kept(Result<Value, any Error>)
    case joined(Flight<Key, Value>, Int)
    case launch(Flight<Key, Value>, Int)
  }

  /// How many flights are in the table: for tests.
  var flightCount: Int { stripes.reduce(0) { $0 + $1.state.withLock { $0.flights.count } } }
}

/// One call in the air for one key, and the runs that joined it.
///
/// `@unchecked Sendable`: every `var` is read and written only under `stripe`'s lock;
/// `started` and `landed` are atomic (`landed` is written under the lock too), and the rest
/// are `let`s.
final class Flight<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
  enum Phase {
    /// A successor: runs wait in it for the cancelled or delivered flight before it to land.
    case waiting
    /// Runs join it; its call has started or is about to.
    case flying
    /// Every run that joined left, and its call was cancelled; it may still be running.
    case cancelled
    /// Its result has gone to the runs that joined it; its call may not have landed yet.
    case delivered
  }

  /// A run that joined: its completion, and its cancellation registration once made.
  struct Joiner: Sendable {
    let id: Int
    let complete: @Sendable (Result<Value, any Error>) -> Void
    var registration: CancellationToken.Registration?
  }

  let key: Key
  let stripe: FlightTable<Key, Value>.Stripe
  let token = CancellationToken()
  /// Starts the call, with the input of the run that made the flight.
  let start: @Sendable (Flight) -> Void
  /// Set by the call's marker stage, once the call has started.
  let started = Atomic<Bool>(false)
  var phase: Phase
  var joiners: [Joiner] = []
  private var nextID = 0
  /// Whether `launch` started (or is starting) the call.
  var launched = false
  /// Set once, when its call is over.
  let landed = Atomic<Bool>(false)
  /// `false` once forgotten: its result is not kept.
  var keepsResult = true
  var successor: Flight?

  init(
    key: Key, phase: Phase, stripe: FlightTable<Key, Value>.Stripe,
    start: @escaping @Sendable (Flight) -> Void
  ) {
    self.key = key
    self.phase = phase
    self.stripe = stripe
    self.start = start
  }

  /// Adds a run; returns its id.
  func add(_ complete: @escaping @Sendable (Result<Value, any Error>) -> Void) -> Int {
    defer { nextID += 1 }
    joiners.append(Joiner(id: nextID, complete: complete, registration: nil))
    return nextID
  }

  /// Joiners are in id order: a binary search finds one.
  private func index(of id: Int) -> Int? {
    var (low, high) = (0, joiners.count)
    while low < high {
      let middle = (low + high) / 2
      if joiners[middle].id < id { low = middle + 1 } else { high = middle }
    }
    return low < joiners.count && joiners[low].id == id ? low : nil
  }

  /// Keeps a run's registration; `false` if the run is gone already.
  func keep(_ registration: CancellationToken.Registration, for id: Int) -> Bool {
    guard let index = index(of: id) else { return false }
    joiners[index].registration = registration
    return true
  }

  func remove(_ id: Int) -> Joiner? {
    guard let index = index(of: id) else { return nil }
    return joiners.remove(at: index)
  }

  /// Every run that joined, taken for delivery; the flight is delivered from then on.
  func takeJoiners() -> [Joiner] {
    if phase == .flying { phase = .delivered }
    defer { joiners = [] }
    return joiners
  }
}
