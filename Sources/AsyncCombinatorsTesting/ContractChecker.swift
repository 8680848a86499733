import AsyncCombinators
import Dispatch
import Synchronization

/// One way a function broke the callback contract, as the ``ContractChecker`` saw it.
public struct ContractBreach: Sendable, Hashable, CustomStringConvertible {
  /// Which rule was broken.
  public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A completion was called a second time (the library dropped the extra call).
    case completionCalledTwice
    /// A completion was never called: released uncalled, or still held when the check ended.
    case completionNeverCalled
    /// A stage completed, with a failure, long after its run was cancelled.
    case completionCalledAfterCancellation
    /// A stage delivered a value long after its run was cancelled: it ignored the cancellation.
    case valueDeliveredAfterCancellation
    /// A stage started long after its run was cancelled.
    case stageStartedAfterCancellation
    /// Something of the run (its completion, its token, its input) was still alive after it.
    case objectsAliveAfterRun

    /// The case's name, such as `completionCalledTwice`.
    public var description: String { rawValue }
  }

  /// Which rule was broken.
  public let kind: Kind
  /// The function that broke it: a stage's `name:` (or `File.swift:line`), or the checked
  /// function's name for breaches of the whole run.
  public let function: String
  /// Which run of the check saw it, from 0.
  public let run: Int
  /// What was seen, in words.
  public let detail: String

  /// `callsTwice: completionCalledTwice in run 3 (...)`.
  public var description: String { "\(function): \(kind) in run \(run) (\(detail))" }
}

/// What a ``ContractChecker`` found: every breach it saw, by kind and function.
public struct ContractReport: Sendable, CustomStringConvertible {
  /// The name of the function checked.
  public let function: String
  /// How many runs were made.
  public let runs: Int
  /// How many of them were cancelled.
  public let cancelledRuns: Int
  /// The seed the random moments were drawn from (replay with `AC_SEED`).
  public let seed: UInt64
  /// Every breach seen, in the order the runs were made.
  public let breaches: [ContractBreach]

  /// Whether no breach was seen.
  public var isClean: Bool { breaches.isEmpty }

  /// The kinds of breach seen.
  public var kinds: Set<ContractBreach.Kind> { Set(breaches.map(\.kind)) }

  /// The breaches of one kind.
  public func breaches(of kind: ContractBreach.Kind) -> [ContractBreach] {
    breaches.filter { $0.kind == kind }
  }

  /// One line per kind and function, with a count, or that the contract held.
  public var description: String {
    guard !breaches.isEmpty else {
      return "\(function): contract held in \(runs) runs (\(cancelledRuns) cancelled, seed \(seed))"
    }
    var counts: [String: Int] = [:]
    for breach in breaches { counts["\(breach.function): \(breach.kind)", default: 0] += 1 }
    let lines = counts.keys.sorted().map { "  \($0), \(counts[$0]!) times in \(runs) runs" }
    return "\(function): \(breaches.count) breaches (seed \(seed))\n"
      + lines.joined(separator: "\n")
  }
}

/// Runs a function many times, on many threads, cancelling at random moments, and reports
/// every breach of the callback contract it sees.
///
/// The library already enforces exactly-once for each stage; the checker looks further, for
/// what a test of your own callback wrappers wants to know: a completion called twice or
/// never; a stage that goes on and completes, or delivers a value, long after its run was
/// cancelled (it ignored the cancellation); a stage started long after cancellation; and
/// the run's completion, token or input (when it is an object) kept alive after the run.
/// Each breach names the function that broke the rule.
///
/// ```swift
/// let queue = DispatchQueue(label: "legacy", attributes: .concurrent)
/// let wrapper = AsyncFunc<Int, String>(name: "fetchUser") { id, token, complete in
///   let claimed = Atomic(false)  // the first of cancellation and answer completes
///   let registration = token.onCancel {
///     if !claimed.exchange(true, ordering: .relaxed) { complete(.failure(CancellationError())) }
///   }
///   queue.async {
///     registration.remove()  // else the token keeps the completion alive
///     if !claimed.exchange(true, ordering: .relaxed) { complete(.success("user\(id)")) }
///   }
/// }
/// let report = await ContractChecker().check(wrapper) { run in run }
/// print(report.isClean)
/// // prints true
/// ```
///
/// "Long after" is ``lateness``: a completion racing a cancellation is normal, one that comes
/// a quarter of a second later is not. The checker reads the library's contract reports
/// through ``FaultRecorder/shared``, which it installs as the process's fault response.
///
/// - Complexity: Each run is one run of the function plus one observer event per stage; the
///   check then waits until every stage has ended, up to ``settleTimeout``.
public struct ContractChecker: Sendable {
  /// How many runs to make.
  public var runs: Int
  /// How many threads start them.
  public var threads: Int
  /// How long after a cancellation a stage may still complete or start without it counting
  /// as a breach.
  public var lateness: Duration
  /// How long to wait, after the last run started, for every stage to end and every object
  /// of the runs to be released.
  public var settleTimeout: Duration
  /// The seed of the random moments; `nil` takes the seed every property of the process
  /// shares (``propertySeedVariable``, printed once per process).
  public var seed: UInt64?

  /// A checker with these settings.
  ///
  /// - Precondition: `runs` and `threads` are at least 1; otherwise the program stops with a
  ///   message naming the caller's line.
  public init(
    runs: Int = 200, threads: Int = 4, lateness: Duration = .milliseconds(250),
    settleTimeout: Duration = .seconds(5), seed: UInt64? = nil,
    file: StaticString = #fileID, line: UInt = #line
  ) {
    require(
      runs > 0 && threads > 0,
      "ContractChecker(runs: \(runs), threads: \(threads)): both must be at least 1",
      file: file, line: line)
    self.runs = runs
    self.threads = threads
    self.lateness = lateness
    self.settleTimeout = settleTimeout
    self.seed = seed
  }

  /// Checks `function`, made with `name:` `name` or described by its structure.
  ///
  /// - Parameters:
  ///   - function: What to check.
  ///   - name: What the report calls it; its description unless given.
  ///   - input: The input of run number `run` (from 0).
  /// - Returns: Every breach seen.
  public func check<Input: Sendable, Output: Sendable>(
    _ function: AsyncFunc<Input, Output>, named name: String? = nil,
    input: @escaping @Sendable (_ run: Int) -> Input
  ) async -> ContractReport {
    let name = name ?? function.description
    let seed = self.seed ?? propertySeed()
    var random = SplitMix64(seed: seed)
    let plans = (0..<runs).map { _ in CancellationPlan.random(using: &random) }
    let recorder = FaultRecorder.shared
    let mark = recorder.count
    let probes = (0..<runs).map { RunProbe(index: $0, lateness: lateness) }
    let tokens = Locked<[CancellationToken?]>(Array(repeating: nil, count: runs))
    let queue = testQueue("contract")
    let started = Countdown(runs)
    for thread in 0..<threads {
      BlockingLane(name: "contract.\(thread)").async {
        for index in stride(from: thread, to: plans.count, by: self.threads) {
          let token = probes[index].start(function, input(index))
          tokens.withLock { $0[index] = token }
          plans[index].cancel(token, probe: probes[index], on: queue)
          started.tick()
        }
      }
    }
    await started.wait()

    // Phase one: every run completed and every started stage ended.
    let clock = ContinuousClock()
    let deadline = clock.now + settleTimeout
    while clock.now < deadline && !probes.allSatisfy(\.hasSettled) {
      try? await Task.sleep(for: .milliseconds(2))
    }
    // Phase two: the checker lets go of the tokens; nothing of a run should stay alive.
    tokens.withLock { $0 = [] }
    while clock.now < deadline && !probes.allSatisfy(\.isReleased) {
      try? await Task.sleep(for: .milliseconds(2))
    }

    var breaches = probes.flatMap { $0.breaches(function: name) }
    let stageNames = probes.reduce(into: Set<String>()) { $0.formUnion($1.stageNames) }
    for violation in recorder.violations(since: mark)
    where violation.kind == .completionCalledTwice {
      let stage =
        violation.name ?? "\(violation.fileID.split(separator: "/").last ?? ""):\(violation.line)"
      guard stageNames.contains(stage) || stage == name else { continue }
      breaches.append(
        ContractBreach(
          kind: .completionCalledTwice, function: stage, run: -1, detail: "\(violation)"))
    }
    return ContractReport(
      function: name, runs: runs, cancelledRuns: plans.filter(\.cancels).count, seed: seed,
      breaches: breaches)
  }
}

/// When one run is cancelled.
private enum CancellationPlan: Sendable {
  case never
  /// On the starting thread, as soon as `run` returns.
  case atOnce
  /// From another thread, as soon as it gets to it.
  case fromAnotherThread
  /// After some hops through a queue: somewhere in the middle of the run.
  case afterHops(Int)
  /// After some real time.
  case afterMicroseconds(Int)

  static func random(using random: inout SplitMix64) -> CancellationPlan {
    switch Int.random(in: 0..<5, using: &random) {
    case 0: .never
    case 1: .atOnce
    case 2: .fromAnotherThread
    case 3: .afterHops(Int.random(in: 1...8, using: &random))
    default: .afterMicroseconds(Int.random(in: 0...2_000, using: &random))
    }
  }

  var cancels: Bool {
    if case .never = self { return false }
    return true
  }

  func cancel(_ token: CancellationToken, probe: RunProbe, on queue: DispatchQueue) {
    let cancel: @Sendable () -> Void = { probe.cancel(token) }
    switch self {
    case .never: break
    case .atOnce: cancel()
    case .fromAnotherThread: queue.async(execute: cancel)
    case .afterHops(let hops): bounce(hops, on: queue, then: cancel)
    case .afterMicroseconds(let micros):
      queue.asyncAfter(deadline: .now() + .microseconds(micros), execute: cancel)
    }
  }
}

/// Watches one run: its stages through the observer hook, its completion, its objects.
///
/// Internal rather than private so a test can feed it events no correct library produces
/// (a stage started after its run was cancelled).
final class RunProbe: RunObserver {
  /// Captured by the run's completion only: alive after the run means the completion is.
  private final class Sentinel: Sendable {}

  private struct Weak {
    weak var object: AnyObject?
  }

  private struct State {
    var cancelledAt: ContinuousClock.Instant?
    var completions = 0
    var result: Result<Void, any Error>?
    /// Stages started and not ended, by start id.
    var open: [UInt64: String] = [:]
    var names: Set<String> = []
    var breaches: [(ContractBreach.Kind, String, String)] = []
    var sentinel = Weak()
    var token = Weak()
    var input = Weak()
  }

  let index: Int
  private let lateness: Duration
  private let clock = ContinuousClock()
  private let state = Locked(State())

  init(index: Int, lateness: Duration) {
    self.index = index
    self.lateness = lateness
  }

  func start<Input: Sendable, Output: Sendable>(
    _ function: AsyncFunc<Input, Output>, _ input: Input
  ) -> CancellationToken {
    let sentinel = Sentinel()
    state.withLock { state in
      state.sentinel.object = sentinel
      if Input.self is AnyObject.Type { state.input.object = input as AnyObject }
    }
    let token = function.run(input, observer: self) { [sentinel] result in
      _ = sentinel
      self.completed(result.map { _ in () })
    }
    state.withLock { $0.token.object = token }
    return token
  }

  func cancel(_ token: CancellationToken) {
    // Noted before cancelling: the cancellation ends running stages' events at once, and
    // those ends must be told from the stages' own.
    let now = clock.now
    state.withLock { state in if state.cancelledAt == nil { state.cancelledAt = now } }
    token.cancel()
  }

  private func completed(_ result: Result<Void, any Error>) {
    state.withLock { state in
      state.completions += 1
      if state.result == nil { state.result = result }
    }
  }

  /// Whether `now` is long after the cancellation.
  private func isLate(_ state: State, _ now: ContinuousClock.Instant) -> Bool {
    guard let cancelledAt = state.cancelledAt else { return false }
    return now - cancelledAt > lateness
  }

  func observe(_ event: RunEvent) {
    guard let stage = event.stage else { return }
    switch event.kind {
    case .stageStarted: started(stage)
    // The body's own call, even when it completed with cancellation; or, late, the body's own
    // call, which the run ignored.
    case .stageEnded, .stageCalledBackAfterCancellation:
      if let outcome = event.outcome { bodyEnded(stage, outcome) }
    // The run cancelled a running stage: its body has not called back yet. It stays open
    // until it calls back late, or forever if it never does.
    default: break
    }
  }

  private func started(_ stage: StageRecord) {
    let now = clock.now
    state.withLock { state in
      state.open[stage.id] = stage.name
      state.names.insert(stage.name)
      if isLate(state, now) {
        state.breaches.append(
          (.stageStartedAfterCancellation, stage.name, "started \(now - state.cancelledAt!) after"))
      }
    }
  }

  /// The stage's body called back (or released its completion): judged against the time of
  /// the cancellation.
  private func bodyEnded(_ stage: StageRecord, _ outcome: StageOutcome) {
    let now = clock.now
    state.withLock { state in
      state.open[stage.id] = nil
      guard isLate(state, now) else { return }
      let after = "\(outcome) \(now - state.cancelledAt!) after the cancellation"
      state.breaches.append(
        outcome == .succeeded
          ? (.valueDeliveredAfterCancellation, stage.name, after)
          : (.completionCalledAfterCancellation, stage.name, after))
    }
  }

  var stageNames: Set<String> { state.withLock { $0.names } }

  var hasSettled: Bool { state.withLock { $0.completions > 0 && $0.open.isEmpty } }

  var isReleased: Bool {
    state.withLock { state in
      state.sentinel.object == nil && state.token.object == nil && state.input.object == nil
    }
  }

  func breaches(function: String) -> [ContractBreach] {
    state.withLock { state in
      var found = state.breaches.map {
        ContractBreach(kind: $0.0, function: $0.1, run: index, detail: $0.2)
      }
      func add(_ kind: ContractBreach.Kind, _ who: String, _ detail: String) {
        found.append(ContractBreach(kind: kind, function: who, run: index, detail: detail))
      }
      if state.completions == 0 {
        add(.completionNeverCalled, function, "the run's completion was never called")
      } else if state.completions > 1 {
        add(.completionCalledTwice, function, "the run completed \(state.completions) times")
      }
      if case .failure(let violation as ContractViolation)? = state.result,
        violation.kind == .completionNeverCalled
      {
        add(.completionNeverCalled, violation.name ?? violation.function, "\(violation)")
      }
      for name in Set(state.open.values).sorted() {
        add(.completionNeverCalled, name, "the stage started and never completed")
      }
      var alive: [String] = []
      if state.sentinel.object != nil { alive.append("its completion") }
      if state.token.object != nil { alive.append("its cancellation token") }
      if state.input.object != nil { alive.append("its input") }
      if !alive.isEmpty {
        add(.objectsAliveAfterRun, function, alive.joined(separator: ", ") + " still alive")
      }
      return found
    }
  }
}
