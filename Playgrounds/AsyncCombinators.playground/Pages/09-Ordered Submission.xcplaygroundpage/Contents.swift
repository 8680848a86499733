/*:
 # Ordered submission, latest wins, and cancellation

 Three problems of apps that moved to Swift Concurrency, each one line here:

 - work that must *finish* in the order it was submitted, even when it suspends;
 - a search box where only the newest query may reach the screen;
 - a side effect that must not happen once the user has moved on.
 */
import AsyncCombinators
import Dispatch

/*:
 ## `OrderedQueue`: submission order is execution order

 `submit` is synchronous and returns the job's `Task` at once. Each job starts only after
 the previous one has completed — with a value, an error or cancellation.
 */
example("OrderedQueue keeps submission order across suspensions") {
  let queue = OrderedQueue()
  let a = queue.submit {
    print("start A")
    try await Task.sleep(for: .milliseconds(20))  // A is slower, yet B waits for it
    print("finish A")
    return 9
  }
  let b = queue.submit {
    print("start B")
    print("finish B")
    return 16
  }
  print(try await a.value, try await b.value)
  // prints start A, finish A, start B, finish B, then 9 16
}

/*:
 A failure stays on its own handle, and a job cancelled before it starts never runs; the
 queue goes on either way.
 */
example("Failures and cancellations don't stop the queue") {
  struct OutOfRange: Error {}
  let queue = OrderedQueue()
  let a = queue.submit { 3 * 3 }
  let b = queue.submit { () throws -> Int in throw OutOfRange() }
  let c = queue.submit { 4 * 4 }
  let d = queue.submit { 5 * 5 }
  c.cancel()
  for job in [a, b, c, d] { print(await job.result) }
  // prints success(9), failure(OutOfRange()), then for c either
  // failure(CancellationError()) or success(16) (if it had already run), then success(25)
}

/*:
 ## `serialized()`: one run at a time, for callback-style functions
 */
example("serialized() runs one at a time, in call order") {
  let disk = DispatchQueue(label: "disk")
  let append = AsyncFunc<String, String>(name: "append") { line, complete in
    print("start \(line)")
    disk.asyncAfter(deadline: .now() + .milliseconds(10)) {
      print("end \(line)")
      complete(.success(line))
    }
  }.serialized()
  async let one = append("one")
  async let two = append("two")
  print(try await [one, two])
  // prints start, end of one run, then start, end of the other
}

/*:
 ## `latest()`: only the newest search reaches the screen

 Each new run cancels the one in flight. A superseded run completes with
 `CancellationError` — even if its body ignores cancellation and answers late.
 */
example("latest() delivers only the last of three quick searches") {
  let backend = DispatchQueue(label: "backend")
  let search = AsyncFunc<String, String>(name: "search") { query, complete in
    // A legacy backend that ignores cancellation and answers after 10 ms.
    backend.asyncAfter(deadline: .now() + .milliseconds(10)) {
      complete(.success("results for \(query)"))
    }
  }.latest()
  for query in ["s", "sw", "swift"] {
    search.run(query) { result in
      switch result {
      case .success(let items): print("show", items)
      case .failure(let error) where error is CancellationError: print("superseded", query)
      case .failure(let error): print("error", error)
      }
    }
  }
  // prints superseded s, superseded sw, show results for swift
  try await Task.sleep(for: .milliseconds(50))  // only to keep the page alive for the answer
}

/*:
 ## `commit`: cancellation stops the writing, not only the waiting

 The side effect runs only if the run is still live, and `cancel()` waits for one that
 is under way: after `cancel()` returns, no late write can land.
 */
example("commit never writes after cancellation") {
  let server = DispatchQueue(label: "server")
  let fetchProfile = AsyncFunc<Int, String>.cancellable(name: "fetchProfile") { id, complete in
    let work = DispatchWorkItem { complete(.success("profile \(id)")) }
    server.asyncAfter(deadline: .now() + .milliseconds(10), execute: work)
    return WorkItemRequest(work)
  }
  let refresh = fetchProfile.commit(name: "saveProfile") { profile in
    print("saved", profile)
  }
  let task = Task { try await refresh(1) }
  task.cancel()  // the user switched accounts
  print(await task.result)
  // prints failure(Swift.CancellationError()), and never "saved"
}

/// A `DispatchWorkItem` as a request handle that `.cancellable` can cancel.
struct WorkItemRequest: Cancellable, @unchecked Sendable {
  // `DispatchWorkItem` is thread-safe (its own lock guards `cancel()`), though not annotated.
  let item: DispatchWorkItem
  init(_ item: DispatchWorkItem) { self.item = item }
  func cancel() { item.cancel() }
}
//: [Previous](@previous) | [Next](@next)
