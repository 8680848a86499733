import AsyncCombinators
import Dispatch
import Synchronization

/// `concurrentMap(limit: 8)` over 100,000 elements whose body hops to a concurrent queue,
/// against a hand-written DispatchGroup + semaphore version of the same work. Prints the
/// median of 5 runs of each, in ns per element, and their ratio.
func runConcurrentMapScenario() {
  let count = 100_000
  let limit = 8
  let queue = DispatchQueue(label: "bench.concurrentMap", attributes: .concurrent)
  let input = Array(0..<count)

  let hop = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x &* 2)) } }
  let mapped = hop.concurrentMap(limit: limit)
  func library() -> Int {
    let done = DispatchSemaphore(value: 0)
    let sum = Atomic(0)
    mapped.run(input) { result in
      sum.store(try! result.get().reduce(0, &+), ordering: .relaxed)
      done.signal()
    }
    done.wait()
    return sum.load(ordering: .relaxed)
  }

  func baseline() -> Int {
    let group = DispatchGroup()
    let slots = DispatchSemaphore(value: limit)
    let results = Mutex([Int](repeating: 0, count: count))
    for x in input {
      slots.wait()
      group.enter()
      queue.async {
        let y = x &* 2
        results.withLock { $0[x] = y }
        slots.signal()
        group.leave()
      }
    }
    group.wait()
    return results.withLock { $0.reduce(0, &+) }
  }

  func median(_ body: () -> Int) -> (nanosPerElement: Double, checksum: Int) {
    var times: [Double] = []
    var checksum = 0
    for _ in 0..<5 {
      let start = DispatchTime.now().uptimeNanoseconds
      checksum = body()
      times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count))
    }
    return (times.sorted()[2], checksum)
  }

  let ours = median(library)
  let theirs = median(baseline)
  precondition(ours.checksum == theirs.checksum, "concurrentMap scenario: results differ")
  let line =
    "concurrentMap(limit: 8) x 100,000 hops: \(format(ours.nanosPerElement)) ns/element; "
    + "DispatchGroup + semaphore: \(format(theirs.nanosPerElement)) ns/element; "
    + "ratio \(format(ours.nanosPerElement / theirs.nanosPerElement, digits: 2))x"
  print(line)
}

private func format(_ value: Double, digits: Int = 0) -> String {
  var scale = 1.0
  for _ in 0..<digits { scale *= 10 }
  let rounded = (value * scale).rounded() / scale
  return digits == 0 ? String(Int(rounded)) : String(rounded)
}
