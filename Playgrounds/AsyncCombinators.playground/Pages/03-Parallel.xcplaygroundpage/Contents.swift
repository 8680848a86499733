/*:
 # 3. Parallel composition: `<>`

 `f <> g` starts `f` and `g` at the same time, on the same input, and completes with the pair
 of their results once both have finished. Use it for work that does not depend on each other:
 an avatar and a profile for the same user id, two downloads, two queries.
 */
import AsyncCombinators
import Dispatch
import Synchronization

let avatar = delayed("avatar", milliseconds: 30) { (id: Int) in "avatar\(id).png" }
let profile = delayed("profile", milliseconds: 30) { (id: Int) in "user\(id)" }

example("both at once") {
  let both = avatar <> profile
  print(both)
  print(try await both(7))
  // prints avatar <> profile
  // prints ("avatar7.png", "user7")
}
/*:
 ## Seeing it

 `traced(_:)` runs a function with a `Timeline` watching. Its Gantt chart shows `<>` as bars
 that overlap, and `+>` as steps. Run the page and compare: about 30 ms against 60.
 */
example("overlap against steps") {
  let (_, together) = await (avatar <> profile).traced(7)
  print(together.renderGantt(width: 30))
  let describe = AsyncFunc<String, Int>.sync(name: "length") { $0.count }
  let (_, inTurn) = await (avatar +> describe +> profile).traced(7)
  print(inTurn.renderGantt(width: 30))
  // prints two charts: avatar and profile side by side, then one after the other
}
/*:
 ## Precedence

 `<>` binds tighter than `+>`, so `a <> b +> c` means `(a <> b) +> c`: both, then `c` on the
 pair. For three or more branches, `parallel(a, b, c)` gives one flat tuple rather than nested
 pairs.
 */
example("three branches, one tuple") {
  let friends = delayed("friends") { (id: Int) in id * 3 }
  let card = AsyncFunc<(String, String, Int), String>.sync(name: "card") { image, name, count in
    "\(name) (\(image)), \(count) friends"
  }
  let page = parallel(avatar, profile, friends) +> card
  print(try await page(7))
  // prints user7 (avatar7.png), 21 friends
}
/*:
 ## The first failure wins

 When one branch fails, the whole fails at once with that error and the other branch is
 cancelled: nobody waits for a result that will be thrown away.
 */
example("a failing branch cancels its sibling") {
  let broken = delayed("broken", milliseconds: 5) { (_: Int) -> String in
    throw PlaygroundError("profile service down")
  }
  let (result, timeline) = await (avatar <> broken).traced(7)
  print(result)
  print(timeline.renderGantt(width: 30))
  // prints failure(profile service down)
  // prints both bars ending at 5 ms: ▓ marks the failed stage, ▒ the cancelled one
}
/*:
 ## Why the join needs one step to store and check

 The first `<>` one writes by hand keeps a flag and a result per side, and has each callback
 check whether both are in:

 ```swift
 left.run(input) { result in
   leftValue = try? result.get()
   if let l = leftValue, let r = rightValue { complete(.success((l, r))) }
 }
 right.run(input) { result in ... the same for rightValue ... }
 ```

 Swift 6 refuses it: `mutation of captured var 'leftValue' in concurrently-executing code`.
 The compiler is right. The two callbacks can run at the same time on a concurrent queue, and
 then this can happen. (Replayed here step by step on one thread, so the page itself has no
 data race.)
 */
example("the unguarded join completes twice") {
  final class UnguardedJoin {
    var left: String?
    var right: String?
    var completions = 0

    func checkBoth() {
      if left != nil, right != nil { completions += 1 }
    }
  }
  let join = UnguardedJoin()
  join.left = "avatar7.png"  // thread 1: the left callback stores its value
  join.right = "user7"  // thread 2: the right callback stores its value
  join.checkBoth()  // thread 1: both are in, so it completes
  join.checkBoth()  // thread 2: both are in, so it completes too
  print("completed \(join.completions) times")
  // prints completed 2 times
}
/*:
 The fix makes "store my value and see whether I am the last" one step. The plainest way is
 a lock, below: exactly one caller sees both values in, however the callbacks interleave.
 `<>` does the same without a lock: each side stores its value in its own slot, then counts
 down the sides still out with one atomic operation, and the side that reaches zero completes
 (it also cancels the other side on failure). Here is the locked join on a real concurrent
 queue, a thousand times:
 */
final class LockedJoin: Sendable {
  private struct State {
    var left: String?
    var right: String?
  }
  private let state = Mutex(State())
  private let complete: @Sendable (String, String) -> Void

  init(complete: @escaping @Sendable (String, String) -> Void) {
    self.complete = complete
  }

  func deliverLeft(_ value: String) {
    let both = state.withLock { state -> (String, String)? in
      state.left = value
      return state.right.map { (value, $0) }
    }
    if let both { complete(both.0, both.1) }
  }

  func deliverRight(_ value: String) {
    let both = state.withLock { state -> (String, String)? in
      state.right = value
      return state.left.map { ($0, value) }
    }
    if let both { complete(both.0, both.1) }
  }
}

example("the locked join completes once") {
  let completions = Counter()
  for _ in 1...1000 {
    let join = LockedJoin { _, _ in completions.increment() }
    DispatchQueue.concurrentPerform(iterations: 2) { side in
      if side == 0 { join.deliverLeft("avatar7.png") } else { join.deliverRight("user7") }
    }
  }
  print("1000 joins completed \(completions.value) times")
  // prints 1000 joins completed 1000 times
}
//: [Next: folds](@next)
