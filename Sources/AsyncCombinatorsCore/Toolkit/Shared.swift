import AsyncCombinatorsKernel

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

  /// This function with its runs sharing calls in flight, and results, through `table`: a
  /// modifier stage that finds its run's key in the table and either completes, joins a
  /// flight or starts one.
  func sharing<Key: Hashable & Sendable>(
    by key: @escaping @Sendable (Input) -> Key, in table: FlightTable, call: String
  ) -> AsyncFunc {
    let inner = program
    return AsyncFunc(modifying: inner, call: call) { input, token, report in
      let flightKey = FlightKey(key(unbox(input, as: Input.self)))
      table.run(input, key: flightKey, token: token, report: report, inner: inner)
    }
  }
}

/// A key of a ``FlightTable``, its type erased, so that the table and its flights are not generic
/// (Performance.md, "What the code's shape buys, and the check that holds it"). `hash` is the key's
/// own `hashValue`, computed once.
struct FlightKey: Hashable, Sendable {
  let value: any Hashable & Sendable
  let hash: Int

  init(_ value: some Hashable & Sendable) {
    self.value = value
    hash = value.hashValue
  }

  static func == (lhs: FlightKey, rhs: FlightKey) -> Bool {
    lhs.hash == rhs.hash && lhs.value.isEqual(to: rhs.value)
  }

  func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

extension Hashable {
  /// Whether `other` equals this value, as the table's key type compares them.
  ///
  /// Keys of one table share a static type, so they differ in their dynamic types only as
  /// subclasses of a class key: `AnyHashable` compares those as that class does.
  fileprivate func isEqual(to other: any Hashable) -> Bool {
    func open<Other: Hashable>(_ other: Other) -> Bool {
      guard Other.self == Self.self else { return AnyHashable(self) == AnyHashable(other) }
      return castExactly(other, to: Self.self) == self
    }
    return open(other)
  }
}

/// The calls in flight, by key, and for a ``ResultCache`` the results kept: one lock for both,
/// so that a flight stores its result and leaves the table in one step, and no run between
/// the two finds neither and calls again.
///
/// Without a cache the keys are spread over several stripes, each with its own lock, so runs
/// of distinct keys seldom wait for each other's lock; a cache has one stripe, since its
/// recency order spans every key. A flight and its successors live in their key's stripe.
///
/// A key's entry is its *head* flight: flying (runs join it), or cancelled but still running
/// (runs wait for it in its `successor`, which it launches when it lands). A flight *lands*
/// when its call is over: the function it runs has reported to it, or it never started.
final class FlightTable: Sendable {
  struct State {
    var flights = Flights()
    /// The kept results, for a ``ResultCache``; `nil` for ``AsyncFunc/shared()``.
    var entries: CacheEntries?
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
      ? (0..<64).map { _ in Stripe(State()) } : [Stripe(State(entries: CacheEntries()))]
  }

  func stripe(for key: FlightKey) -> Stripe {
    stripes.count == 1 ? stripes[0] : stripes[key.hash & (stripes.count - 1)]
  }

  /// One run: a kept result, a flight to join, or a new flight, which runs `inner` with
  /// `input`.
  func run(
    _ input: AnyValue, key: FlightKey, token: CancellationToken, report: ModifierReport,
    inner: Program
  ) {
    let now = policy?.now() ?? .zero
    let stripe = stripe(for: key)
    let step = stripe.state.withLock { state -> Step in
      if let kept = state.entries?.lookup(key, now: now, lifetime: policy?.lifetime) {
        return .kept(kept)
      }
      let (head, made) = state.flights.head(of: key) {
        Flight(key, .flying, input, inner, self, stripe)
      }
      if made {
        _ = head.seats.add(report)
        return .launch(head)
      }
      if head.phase == .flying { return .joined(head, head.seats.add(report)) }
      // Cancelled, but not landed: wait for it, never overlap it.
      let next = head.successor ?? Flight(key, .waiting, input, inner, self, stripe)
      head.successor = next
      return .joined(next, next.seats.add(report))
    }
    switch consume step {
    case .kept(let result):
      report.complete(result)
    case .joined(let flight, let seat):
      // Registered outside the lock: a token cancelled already runs the handler at once.
      let registration = token.onCancel { flight.leave(seat) }
      keepOrRevoke(registration) { registration in
        stripe.state.withLock { _ in flight.seats.keep(registration, for: seat) }
      }
    case .launch(let flight):
      // The founder's seat is the first: the handler then holds the flight alone. A token
      // cancelled already runs it at once, and the call then starts cancelled: it never runs.
      flight.founderRegistration = token.onCancel { flight.leave(Seats.first) }
      flight.start()
    }
  }

  /// The flight's call is over: the result is kept (if it may be), the flight leaves the
  /// table, and the runs that joined it get the result. A successor that runs wait in takes
  /// its place and launches. `result` is `nil` for a call never started.
  func landed(_ flight: Flight, _ result: AnyResult?) {
    let now = policy?.now() ?? .zero
    let (seats, next) = flight.stripe.state.withLock { state -> (Seats, Flight?) in
      if let result, let policy, flight.keepsResult, flight.phase != .cancelled,
        policy.keeps(result)
      {
        state.entries?.store(result, for: flight.key, now: now, capacity: policy.capacity)
      }
      let seats = flight.seats.takeAll()
      return (seats, Self.promote(flight.successor, replacing: flight, in: &state))
    }
    flight.founderRegistration?.remove()
    // Runs are left only in a call that reported nothing, which was cancelled.
    seats.deliver(result ?? .failure(CancellationError()))
    next?.launch()
  }

  /// Makes `successor` the head of its key in place of `flight` if any run waits in it, else
  /// empties the key; returns the new head. Nothing changes when `flight` is not its key's
  /// head any more (it was forgotten).
  private static func promote(
    _ successor: Flight?, replacing flight: Flight, in state: inout State
  ) -> Flight? {
    let next = successor.flatMap { $0.seats.isEmpty ? nil : $0 }
    guard state.flights.replace(flight, with: next) else { return nil }
    next?.phase = .flying
    return next
  }

  /// Drops `key`'s kept result, and detaches its flight: that flight's result is not kept, and
  /// the next run of the key makes a new call. Runs waiting for a cancelled flight start theirs.
  func forget(_ key: FlightKey) {
    let next = stripe(for: key).state.withLock { state -> Flight? in
      state.entries?.remove(key)
      return Self.detach(key, in: &state)
    }
    next?.launch()
  }

  /// ``forget(_:)`` for every key.
  func forgetAll() {
    let launches = stripes.flatMap { stripe in
      stripe.state.withLock { state -> [Flight] in
        state.entries?.removeAll()
        return state.flights.heads.compactMap { Self.detach($0.key, in: &state) }
      }
    }
    for flight in launches { flight.launch() }
  }

  private static func detach(_ key: FlightKey, in state: inout State) -> Flight? {
    guard let head = state.flights.head(of: key) else { return nil }
    head.keepsResult = false
    let successor = head.successor
    head.successor = nil
    return promote(successor, replacing: head, in: &state)
  }

  /// What a run found in the table.
  private enum Step {
    case kept(AnyResult)
    /// Its flight and its seat in it.
    case joined(Flight, Int)
    /// A flight it made, with its seat the first.
    case launch(Flight)
  }

  /// How many flights are in the table: for tests.
  var flightCount: Int { stripes.reduce(0) { $0 + $1.state.withLock { $0.flights.count } } }
}

/// A stripe's flights, by key: each key's head flight.
///
/// The dictionary is keyed by the key's hash alone, so an entry is two words rather than a
/// whole erased key; the flight holds its key, which a lookup compares. Flights of distinct
/// keys with one hash, which are rare, share an entry.
struct Flights {
  private enum Entry {
    case one(Flight)
    /// The heads of distinct keys with one hash.
    case several([Flight])

    var flights: [Flight] {
      switch self {
      case .one(let flight): [flight]
      case .several(let flights): flights
      }
    }

    func head(of key: FlightKey) -> Flight? {
      switch self {
      case .one(let flight): flight.key == key ? flight : nil
      case .several(let flights): flights.first { $0.key == key }
      }
    }
  }

  private var byHash: [Int: Entry] = [:]
  private(set) var count = 0

  /// Every head flight.
  var heads: [Flight] { byHash.values.flatMap(\.flights) }

  /// The head flight of `key`, if any.
  func head(of key: FlightKey) -> Flight? {
    byHash[key.hash]?.head(of: key)
  }

  /// The head flight of `key`, made by `make` and added if there is none, and whether it was
  /// made: one lookup of the dictionary.
  mutating func head(
    of key: FlightKey, orAdding make: () -> Flight
  ) -> (flight: Flight, made: Bool) {
    let found = Self.head(of: key, in: &byHash[key.hash], orAdding: make)
    if found.made { count += 1 }
    return found
  }

  private static func head(
    of key: FlightKey, in entry: inout Entry?, orAdding make: () -> Flight
  ) -> (flight: Flight, made: Bool) {
    if let head = entry?.head(of: key) { return (head, false) }
    let made = make()
    switch entry {
    case nil: entry = .one(made)
    case .one(let other): entry = .several([other, made])
    case .several(let flights): entry = .several(flights + [made])
    }
    return (made, true)
  }

  /// Puts `successor` in place of `flight` as its key's head, or removes the key when it is
  /// `nil`; `false`, changing nothing, when `flight` is not its key's head.
  mutating func replace(_ flight: Flight, with successor: Flight?) -> Bool {
    guard Self.replace(flight, with: successor, in: &byHash[flight.key.hash]) else {
      return false
    }
    if successor == nil { count -= 1 }
    return true
  }

  private static func replace(
    _ flight: Flight, with successor: Flight?, in entry: inout Entry?
  ) -> Bool {
    switch entry {
    case nil:
      return false
    case .one(let head):
      guard head === flight else { return false }
      entry = successor.map(Entry.one)
    case .several(var flights):
      guard let index = flights.firstIndex(where: { $0 === flight }) else { return false }
      if let successor { flights[index] = successor } else { flights.remove(at: index) }
      entry = flights.count == 1 ? .one(flights[0]) : .several(flights)
    }
    return true
  }
}

/// One call in the air for one key, and the runs that joined it; it is where the call
/// reports.
///
/// `@unchecked Sendable`: every `var` but `founderRegistration` is read and written only under
/// `stripe`'s lock, and the rest are `let`s.
final class Flight: StageParent, @unchecked Sendable {
  enum Phase {
    /// A successor: runs wait in it for the cancelled flight before it to land.
    case waiting
    /// Runs join it; its call has started or is about to.
    case flying
    /// Every run that joined left, and its call was cancelled; it may still be running.
    case cancelled
  }

  let key: FlightKey
  let table: FlightTable
  let stripe: FlightTable.Stripe
  /// The call: `inner` on the input of the run that made the flight, on a token of its own,
  /// cancelled when every run has left.
  let input: AnyValue
  let inner: Program
  let token = CancellationToken()
  var phase: Phase
  var seats = Seats()
  /// The cancellation registration of the run that made the flight, written by that run's
  /// thread before the call starts and read once the call has reported: the call's own
  /// hand-off of its outcome orders the two, so it needs no lock.
  var founderRegistration: CancellationToken.Registration?
  /// `false` once forgotten: its result is not kept.
  var keepsResult = true
  var successor: Flight?

  init(
    _ key: FlightKey, _ phase: Phase, _ input: AnyValue, _ inner: Program,
    _ table: FlightTable, _ stripe: FlightTable.Stripe
  ) {
    self.key = key
    self.phase = phase
    self.input = input
    self.inner = inner
    self.table = table
    self.stripe = stripe
  }

  /// Starts the call on the flight's token: it reports here exactly once, even when the token
  /// was cancelled before it began.
  func start() { inner.start(input, token: token, parent: self) }

  /// Starts a successor's call, unless every run that waited in it has left.
  func launch() {
    let go = stripe.state.withLock { _ in !seats.isEmpty }
    guard go else { return table.landed(self, nil) }
    start()
  }

  /// A joined run was cancelled: it leaves, and the last to leave a flying flight cancels
  /// the call (which, not started yet, never runs).
  func leave(_ seat: Int) {
    let (left, cancel) = stripe.state.withLock { _ -> (Seats.Seat?, Bool) in
      guard let left = seats.remove(seat) else { return (nil, false) }
      guard seats.isEmpty, phase == .flying else { return (left, false) }
      phase = .cancelled
      return (left, true)
    }
    guard let left else { return }
    // The run has delivered its cancellation already; this settles its stage.
    left.report.fail(CancellationError())
    if cancel { token.cancel() }
  }

  func childSucceeded(_ value: consuming AnyValue, tag _: Int) {
    table.landed(self, .success(value))
  }

  func childFailed(_ error: any Error, tag _: Int) { table.landed(self, .failure(error)) }
}

/// The runs that joined a flight, by seat number in joining order. The first is kept apart from the
/// rest, so that a flight of one run makes no array
/// (Performance.md, "What the code's shape buys, and the check that holds it").
///
/// Invariant: `head`, when present, has a lower number than every seat in `rest`, which is
/// sorted.
struct Seats {
  /// A run that joined: how its stage reports, and its cancellation registration once made.
  struct Seat {
    let number: Int
    let report: ModifierReport
    var registration: CancellationToken.Registration?
  }

  /// The number of the seat of the run that made the flight.
  static let first = 0

  private var head: Seat?
  private var rest: [Seat] = []
  private var next = first

  var isEmpty: Bool { head == nil && rest.isEmpty }

  /// Seats a run; returns its number.
  mutating func add(_ report: ModifierReport) -> Int {
    defer { next += 1 }
    let seat = Seat(number: next, report: report, registration: nil)
    if isEmpty { head = seat } else { rest.append(seat) }
    return next
  }

  /// Keeps a run's registration; `false` if the run has left already.
  mutating func keep(_ registration: CancellationToken.Registration, for number: Int) -> Bool {
    if head?.number == number {
      head!.registration = registration
      return true
    }
    guard let index = index(of: number) else { return false }
    rest[index].registration = registration
    return true
  }

  mutating func remove(_ number: Int) -> Seat? {
    if head?.number == number { return head.take() }
    guard let index = index(of: number) else { return nil }
    return rest.remove(at: index)
  }

  /// Every seat, taken for delivery; the numbers go on from where they were.
  mutating func takeAll() -> Seats {
    var taken = Seats()
    taken.next = next
    swap(&self, &taken)
    return taken
  }

  /// Gives `result` to every seat in joining order, taking back its registration first.
  func deliver(_ result: AnyResult) {
    if let head { Self.deliver(result, to: head) }
    for seat in rest { Self.deliver(result, to: seat) }
  }

  private static func deliver(_ result: AnyResult, to seat: Seat) {
    seat.registration?.remove()
    seat.report.complete(result)
  }

  /// `rest` is in number order: a binary search finds a seat.
  private func index(of number: Int) -> Int? {
    var (low, high) = (0, rest.count)
    while low < high {
      let middle = (low + high) / 2
      if rest[middle].number < number { low = middle + 1 } else { high = middle }
    }
    return low < rest.count && rest[low].number == number ? low : nil
  }
}
