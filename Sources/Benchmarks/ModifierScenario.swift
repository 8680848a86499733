import AsyncCombinators
import Dispatch
import Foundation
import Synchronization

/// What each modifier costs inside a fold, and whether that cost grows with the fold's width.
///
/// `f` completes on a global queue, as real work does. Every modifier is measured as
/// `f.<modifier>.concurrentMap()` against the plain `f.concurrentMap()` in the same run; the
/// scale rows quadruple the width twice over and report the per-element figure at each width,
/// so a cost that grows with the number of siblings shows as a growth ratio (the last width's
/// figure against the first's). The overhead column is each row's paired ratio (see
/// ``Timings/ratio(_:to:)``) to the plain fold at `overheadWidth`, the width the issue's bars
/// are stated at; a width not among `widths` is added to them.
///
/// Every round runs every row at every width, in a shuffled order, and the growth is paired
/// too: the median over the rounds of each round's last-width figure against its own
/// first-width figure. Measured one width after another, a slow spell of the machine that
/// fell on one width's batch moved every row's growth together, the plain fold's as much as
/// any, by more than any bar allows (Performance.md, "Method").
///
/// `rows`, when given, keeps those rows alone, as `BENCHMARK_MODIFIERS` does.
func runModifierScenario(
  widths: [Int] = [10_000, 40_000, 160_000], overheadWidth: Int = 100_000, repetitions: Int = 7,
  rows: [String]? = nil
) {
  let f = AsyncFunc<Int, Int>(name: "f") { x, complete in
    DispatchQueue.global().async { complete(.success(x &+ 1)) }
  }
  let allModifiers: [(String, AsyncFunc<[Int], [Int]>)] = [
    ("none", f.concurrentMap()),
    ("on(queue)", f.on(DispatchQueue.global()).concurrentMap()),
    ("recover", f.recover { _ in 0 }.concurrentMap()),
    ("finally", f.finally(.sync { _ in }).concurrentMap()),
    ("retry(2)", f.retry(2).concurrentMap()),
    ("retry(2) jittered", f.retry(2, jitter: .full).concurrentMap()),
    // A breaker that stays closed: every element is admitted and counted.
    ("guarded closed", f.guarded(by: CircuitBreaker()).concurrentMap()),
    // The primary answers within microseconds: the hedge's timer is armed and taken back.
    ("hedged primary wins", f.hedged(after: .seconds(30)).concurrentMap()),
    ("timeout(30 s)", f.timeout(.seconds(30)).concurrentMap()),
    ("limit(8)", f.limit(8).concurrentMap()),
    // Unwrapped after the fold, once for all: a `map` inside each element would measure a
    // nested run of two stages per element, not `settled`.
    ("settled", f.settled().concurrentMap().map { try $0.map { try $0.get() } }),
    ("race([f])", AsyncFunc.race([f]).concurrentMap()),
    // A `latest()` run supersedes the one before it, so its elements go one at a time.
    ("latest, limit 1", f.latest().concurrentMap(limit: 1)),
    ("none, limit 1", f.concurrentMap(limit: 1)),
    // Eight at a time, each element's result comes within microseconds of its start: what a
    // timeout costs when its timer is rarely needed, as in most real folds.
    // (No comma in these names: `BENCHMARK_MODIFIERS` is split at commas.)
    ("timeout limit 8", f.timeout(.seconds(30)).concurrentMap(limit: 8)),
    ("none limit 8", f.concurrentMap(limit: 8)),
  ]

  // `BENCHMARK_MODIFIERS="none,timeout(30 s)"` keeps those rows alone: a row's cost can depend
  // on the rows around it, through Dispatch's threads and the allocator's bins.
  let only = ProcessInfo.processInfo.environment["BENCHMARK_MODIFIERS"]
  let kept = rows ?? only?.split(separator: ",").map(String.init)
  let modifiers = kept.map { names in allModifiers.filter { names.contains($0.0) } } ?? allModifiers
  print("\nModifiers inside concurrentMap, f completing on a global queue (ns/element)")
  let widths = Set(widths + [overheadWidth]).sorted()
  let inputs = widths.map { Array(0..<$0) }
  // Contender `w * modifiers.count + m` is modifier `m` at width `widths[w]`.
  let timings = measure(
    repetitions: repetitions,
    widths.indices.flatMap { w in
      modifiers.map { _, fold in { blockOn(fold, inputs[w], expectedCount: widths[w]) } }
    })
  func contender(_ modifier: Int, atWidth w: Int) -> Int { w * modifiers.count + modifier }
  let overheadIndex = widths.firstIndex(of: overheadWidth)!
  let perElement = modifiers.indices.map { m in
    widths.indices.map { w in timings.median(contender(m, atWidth: w), per: widths[w]) }
  }
  let header = widths.map { "n=\($0)".padding(toLength: 11, withPad: " ", startingAt: 0) }
  print(
    "modifier".padding(toLength: 18, withPad: " ", startingAt: 0) + header.joined()
      + "growth   vs plain at n=\(overheadWidth)")
  for (index, (name, _)) in modifiers.enumerated() {
    let figures = perElement[index].map {
      format($0).padding(toLength: 11, withPad: " ", startingAt: 0)
    }
    // Per element: the times' ratio scaled by the widths'.
    let growth =
      timings.ratio(contender(index, atWidth: widths.count - 1), to: contender(index, atWidth: 0))
      * Double(widths.first!) / Double(widths.last!)
    recordForBars("growth \(name)", growth)
    // A row run with a limit is against the plain fold with the same limit.
    let plainName =
      name.hasSuffix("limit 1")
      ? "none, limit 1" : name.hasSuffix("limit 8") ? "none limit 8" : "none"
    // Against the plain fold of the same rounds; "-" when that row was left out.
    let overhead = modifiers.firstIndex { $0.0 == plainName }.map {
      let ratio = timings.ratio(
        contender(index, atWidth: overheadIndex), to: contender($0, atWidth: overheadIndex))
      recordForBars("overhead \(name)", ratio)
      return "x" + String(format: "%.2f", ratio)
    }
    print(
      name.padding(toLength: 18, withPad: " ", startingAt: 0) + figures.joined()
        + "x\(String(format: "%.2f", growth))    \(overhead ?? "-")")
  }
}

/// Chains of `k` stages, each `.on(queue)`, against the same hops written by hand.
func runHopScenario(runs: Int = 10_000) {
  let queue = DispatchQueue(label: "bench.hops")
  for k in [1, 3] {
    let stage = AsyncFunc<Int, Int>.sync { $0 &+ 1 }.on(queue)
    let chain = AsyncFunc.serial(Array(repeating: stage, count: k))
    let timings = measure([
      {
        for x in 0..<runs {
          waitFor { done in chain.run(x) { _ in done() } }
        }
      },
      {
        for x in 0..<runs {
          waitFor { done in handHops(x, k, on: queue) { _ in done() } }
        }
      },
    ])
    report(
      "\(k) × .on(queue) stage, \(runs) runs", unit: "ns/run", timings, ours: 0, per: runs,
      baselines: [("DispatchQueue.async", 1)])
  }
}

private func handHops(
  _ x: Int, _ remaining: Int, on queue: DispatchQueue,
  _ done: @escaping @Sendable (Int) -> Void
) {
  guard remaining > 0 else { return done(x) }
  queue.async { handHops(x &+ 1, remaining - 1, on: queue, done) }
}

/// A `Promise` chain of `then`s (each a hop to a global queue) against the same hops by hand.
///
/// Each timed sample runs `chains` chains one after another: one chain of a thousand links
/// takes under a millisecond, short enough for one wakeup of a descheduled thread to double it.
func runPromiseScenario(links: Int = 1_000, chains: Int = 20) {
  let timings = measure([
    {
      for _ in 0..<chains {
        waitFor { done in
          var promise = Promise(AsyncFunc<Void, Int>.sync { 0 })
          for _ in 0..<links { promise = promise.then { $0 &+ 1 } }
          promise.always { done() }.error { _ in }
        }
      }
    },
    {
      for _ in 0..<chains {
        waitFor { done in handHops(0, links, on: DispatchQueue.global()) { _ in done() } }
      }
    },
  ])
  report(
    "Promise, \(links) × then", unit: "ns/link", timings, ours: 0, per: links * chains,
    baselines: [("DispatchQueue.global().async", 1)])
}

/// Where a promise link's time goes: building the chain, running it, letting it go, each
/// timed alone (medians of 31), with the hand-written hops for scale.
func runPromiseSplit(links: Int = 1_000) {
  var build: [UInt64] = []
  var run: [UInt64] = []
  var drop: [UInt64] = []
  var hand: [UInt64] = []
  for _ in 0..<31 {
    var t = DispatchTime.now().uptimeNanoseconds
    var promise: Promise<Int>? = Promise(AsyncFunc<Void, Int>.sync { 0 })
    for _ in 0..<links { promise = promise!.then { $0 &+ 1 } }
    build.append(DispatchTime.now().uptimeNanoseconds - t)
    t = DispatchTime.now().uptimeNanoseconds
    let chain = promise!
    waitFor { done in chain.always { done() }.error { _ in } }
    run.append(DispatchTime.now().uptimeNanoseconds - t)
    t = DispatchTime.now().uptimeNanoseconds
    promise = nil
    _ = consume chain
    drop.append(DispatchTime.now().uptimeNanoseconds - t)
    t = DispatchTime.now().uptimeNanoseconds
    waitFor { done in handHops(0, links, on: DispatchQueue.global()) { _ in done() } }
    hand.append(DispatchTime.now().uptimeNanoseconds - t)
  }
  func median(_ xs: [UInt64]) -> Double { Double(xs.sorted()[xs.count / 2]) / Double(links) }
  let parts = [("build", build), ("run", run), ("release", drop), ("hand-written hops", hand)]
  print(
    "Promise, \(links) × then, per link: "
      + parts.map { "\($0.0) \(format(median($0.1))) ns" }.joined(separator: " | "))
}

/// One Promise contender alone, 100 chains of 1,000 links, for `perf stat` and callgrind.
func runPromiseProfile(handWritten: Bool, links: Int = 1_000) {
  for _ in 0..<100 {
    if handWritten {
      waitFor { done in handHops(0, links, on: DispatchQueue.global()) { _ in done() } }
    } else {
      waitFor { done in
        var promise = Promise(AsyncFunc<Void, Int>.sync { 0 })
        for _ in 0..<links { promise = promise.then { $0 &+ 1 } }
        promise.always { done() }.error { _ in }
      }
    }
  }
}

/// `concurrentMap()` over 100,000 elements completing on a global queue, against
/// `DispatchGroup` and a locked array doing the same hops, plain and keeping the callback
/// contract by hand.
func runUnlimitedMapScenario(count: Int = 100_000) {
  let f = AsyncFunc<Int, Int> { x, complete in
    DispatchQueue.global().async { complete(.success(x &* 2)) }
  }
  let fold = f.concurrentMap()
  let input = Array(0..<count)
  let timings = measure([
    { blockOn(fold, input, expectedCount: count) },
    {
      let group = DispatchGroup()
      let results = Mutex([Int](repeating: 0, count: count))
      for x in input {
        group.enter()
        DispatchQueue.global().async {
          results.withLock { $0[x] = x &* 2 }
          group.leave()
        }
      }
      group.wait()
    },
    { _ = contractKeepingFanOut(count, on: DispatchQueue.global()) },
  ])
  report(
    "concurrentMap(), \(count) elements", unit: "ns/element", timings, ours: 0, per: count,
    baselines: [("DispatchGroup + locked array", 1), (contractKeepingLabel, 2)])
  reportContractFloor("concurrentMap()", timings, floor: 2, plain: 1)
}

/// Runs `fold` on `input` and waits for it on the calling (main) thread.
private func blockOn(_ fold: AsyncFunc<[Int], [Int]>, _ input: [Int], expectedCount: Int) {
  let count = Box()
  waitFor { done in
    fold.run(input) { result in
      count.value.store((try? result.get().count) ?? -1, ordering: .relaxed)
      done()
    }
  }
  precondition(count.value.load(ordering: .relaxed) == expectedCount, "a fold failed")
}
