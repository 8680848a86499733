import AsyncCombinators
import Dispatch
import Synchronization

/// The integers `0..<count`, produced on demand: a source that costs next to nothing and holds
/// nothing, so that the stream's own cost and memory are what the figures show.
struct Counting: AsyncSequence, Sendable {
  let count: Int

  func makeAsyncIterator() -> Iterator { Iterator(count: count) }

  struct Iterator: AsyncIteratorProtocol {
    let count: Int
    var next = 0

    mutating func next() async -> Int? {
      guard next < count else { return nil }
      defer { next += 1 }
      return next
    }
  }
}

/// `concurrentMap(over:limit: 8)` over 100,000 elements against the array
/// `concurrentMap(limit: 8)` of the same elements and body: what streaming costs per element
/// over holding the whole batch. Twice: with a body that hops to a concurrent queue, where each
/// element the consumer pulls has to be handed to another thread; and with a synchronous body,
/// where everything runs on the consumer's thread and the figure is the stream's own cost.
func runConcurrentMapStreamScenario() {
  let queue = DispatchQueue(label: "bench.concurrentMapStream", attributes: .concurrent)
  let hop = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }
  compareStreamToArray(
    hop, body: "hop",
    floor: { count, limit in
      await handWrittenStream(count: count, limit: limit, queue: queue)
    })
  compareStreamToArray(.sync { $0 &* 2 }, body: "sync", floor: nil)
}

/// The least a pull-driven stream can do with the hopping body, written without the library:
/// the consumer's task pulls while fewer than `limit` are in flight, then suspends on a
/// continuation until an output is ready, in the order they finish. What it costs over the
/// array fold is the hand-off to the consumer's task that every such stream pays per element,
/// whoever writes it: the array fold starts the next element on the thread that finished one.
func handWrittenStream(count: Int, limit: Int, queue: DispatchQueue) async -> Int {
  let state = Mutex<(ready: [Int], waiter: UnsafeContinuation<Int, Never>?)>(([], nil))
  @Sendable func finished(_ output: Int) {
    let waiter = state.withLock { state -> UnsafeContinuation<Int, Never>? in
      if let waiter = state.waiter.take() { return waiter }
      state.ready.append(output)
      return nil
    }
    waiter?.resume(returning: output)
  }
  var source = Counting(count: count).makeAsyncIterator()
  var sourceEnded = false
  var inFlight = 0
  var total = 0
  while true {
    while inFlight < limit, !sourceEnded {
      guard let x = await source.next() else {
        sourceEnded = true
        break
      }
      inFlight += 1
      queue.async { finished(x &* 2) }
    }
    guard inFlight > 0 else { return total }
    total &+= await withUnsafeContinuation { continuation in
      let ready = state.withLock { state -> Int? in
        if !state.ready.isEmpty { return state.ready.removeFirst() }
        state.waiter = continuation
        return nil
      }
      if let ready { continuation.resume(returning: ready) }
    }
    inFlight -= 1
  }
}

private func compareStreamToArray(
  _ function: AsyncFunc<Int, Int>, body: String,
  floor: (@Sendable (_ count: Int, _ limit: Int) async -> Int)?
) {
  let count = 100_000
  let limit = 8
  let mapped = function.concurrentMap(limit: limit)
  let sums = Box()

  func stream(ordered: Bool) -> Int {
    let sum = Box()
    waitFor { done in
      Task {
        var total = 0
        for try await y in function.concurrentMap(
          over: Counting(count: count), limit: limit, ordered: ordered)
        {
          total &+= y
        }
        sum.value.store(total, ordering: .relaxed)
        done()
      }
    }
    return sum.value.load(ordering: .relaxed)
  }

  func array() -> Int {
    let sum = Box()
    waitFor { done in
      mapped.run(Array(0..<count)) { result in
        sum.value.store(succeeded(result).reduce(0, &+), ordering: .relaxed)
        done()
      }
    }
    return sum.value.load(ordering: .relaxed)
  }

  func handWritten(_ floor: @escaping @Sendable (Int, Int) async -> Int) -> Int {
    let sum = Box()
    waitFor { done in
      Task {
        sum.value.store(await floor(count, limit), ordering: .relaxed)
        done()
      }
    }
    return sum.value.load(ordering: .relaxed)
  }

  var contenders: [() -> Void] = [
    { sums.value.store(array(), ordering: .relaxed) },
    { precondition(stream(ordered: true) == sums.value.load(ordering: .relaxed), "differ") },
    { precondition(stream(ordered: false) == sums.value.load(ordering: .relaxed), "differ") },
  ]
  if let floor {
    contenders.append {
      precondition(handWritten(floor) == sums.value.load(ordering: .relaxed), "differ")
    }
  }
  let timings = measure(contenders)
  for (row, order) in [(1, "ordered"), (2, "unordered")] {
    var baselines = [("array concurrentMap(limit: 8)", 0)]
    if floor != nil { baselines.append(("hand-written stream", 3)) }
    report(
      "concurrentMap(over:), \(count), \(body), \(order)", unit: "ns/element", timings,
      ours: row, per: count, baselines: baselines)
  }
  if floor != nil {
    report(
      "hand-written stream, \(count), \(body)", unit: "ns/element", timings, ours: 3,
      per: count, baselines: [("array concurrentMap(limit: 8)", 0)])
  }
}

/// 1,000,000 elements through `concurrentMap(over:limit: 8)`, alone in a child process: the
/// process's whole peak, which the stream promises stays under 64 MB.
func runConcurrentMapStreamMemory(elements count: Int = 1_000_000) {
  let queue = DispatchQueue(label: "bench.concurrentMapStream.memory", attributes: .concurrent)
  let hop = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }
  let taken = Box()
  waitFor { done in
    Task {
      var outputs = 0
      for try await _ in hop.concurrentMap(over: Counting(count: count), limit: 8) {
        outputs += 1
      }
      taken.value.store(outputs, ordering: .relaxed)
      done()
    }
  }
  precondition(taken.value.load(ordering: .relaxed) == count, "outputs lost")
  print("memory stream \(format(peakResidentMegabytes()))")
}

/// One million elements through the stream (or, with `arrayInstead`, the array fold) and
/// nothing else, for `perf stat` and valgrind: context switches are where the two differ.
/// With `synchronous`, the body completes at once instead of hopping, so that everything runs
/// on the consumer's thread and the instructions counted are the stream's own.
func runConcurrentMapStreamProfile(
  arrayInstead: Bool, handWritten: Bool, synchronous: Bool, ordered: Bool
) {
  let queue = DispatchQueue(label: "bench.concurrentMapStream.profile", attributes: .concurrent)
  let hop =
    synchronous
    ? AsyncFunc<Int, Int>.sync { $0 &* 2 }
    : AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }
  let mapped = hop.concurrentMap(limit: 8)
  for _ in 0..<10 {
    if arrayInstead {
      waitFor { done in mapped.run(Array(0..<100_000)) { _ in done() } }
    } else if handWritten {
      waitFor { done in
        Task {
          _ = await handWrittenStream(count: 100_000, limit: 8, queue: queue)
          done()
        }
      }
    } else {
      waitFor { done in
        Task {
          for try await _ in hop.concurrentMap(
            over: Counting(count: 100_000), limit: 8, ordered: ordered)
          {}
          done()
        }
      }
    }
  }
}
