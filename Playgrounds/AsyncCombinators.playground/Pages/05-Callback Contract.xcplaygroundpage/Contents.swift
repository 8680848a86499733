/*:
 # 5. The callback contract

 A callback function must call its completion exactly once. Functions written by others do
 not always keep that promise: an early `return` that forgets to call back, a retry path that
 calls back twice, an Objective-C callback with neither a value nor an error. Hand-written
 chains then hang, or run their continuation twice. `AsyncFunc` checks every completion.

 ## Never called: the run fails instead of hanging
 */
import AsyncCombinators

example("a completion that is never called") {
  let forgetful = AsyncFunc<Int, Int>(name: "forgetful") { x, complete in
    guard x > 0 else { return }  // Oops: no call back on this path.
    complete(.success(x))
  }
  do {
    _ = try await forgetful(-1)
  } catch let violation as ContractViolation {
    print(violation)
  }
  // prints forgetful (Contents.swift:14) released its completion without calling it
}
/*:
 As soon as the last reference to the completion is gone without a call, the run fails with a
 `ContractViolation` that names the function and where it was made. The chain goes on to its
 error handling; nothing hangs.

 ## Called twice: the extra call is dropped and reported

 The second call never reaches the next stage. It is reported through
 `ContractViolation.faultResponse`: one line on standard error by default, or your own
 handler. `.crash` stops the process, as HoneyBee does by default.
 */
example("a completion called twice") {
  let previous = ContractViolation.faultResponse
  ContractViolation.faultResponse = .custom { violation in print("reported: \(violation)") }
  defer { ContractViolation.faultResponse = previous }

  let eager = AsyncFunc<Int, Int>(name: "eager") { x, complete in
    complete(.success(x))
    complete(.success(x + 1))  // Dropped.
  }
  let next = AsyncFunc<Int, String>.sync(name: "next") { "next got \($0)" }
  print(try await (eager +> next)(1))
  // prints reported: eager (Contents.swift:41) called its completion more than once
  // prints next got 1
}
/*:
 ## Neither a value nor an error

 `.valueOrError` lifts the Objective-C `(value?, error?)` style. An error wins over a value,
 and a call with neither is a `ContractViolation` rather than a crash on a force unwrap.
 */
example("an Objective-C callback with two nils") {
  let confused = AsyncFunc<String, Int>.valueOrError(name: "confused") { _, callback in
    callback(nil, nil)
  }
  do {
    _ = try await confused("?")
  } catch {
    print(error)
  }
  // prints confused (Contents.swift:57) called back with neither a value nor an error
}
/*:
 ## A throw is a failure

 A `.sync` body that throws fails its stage with that error, exactly as a `complete` with
 `.failure` would.

 ## Let the compiler check your own callbacks

 When you write a callback function by hand, a `defer` that calls the completion with a
 result you assign on every path makes the compiler prove there is exactly one call: a path
 that forgets to assign `result` does not compile (`constant 'result' used before being
 initialized`), and a path that assigns it twice does not either.
 */
example("the defer trick") {
  func parse(_ text: String, completion: @Sendable (Result<Int, any Error>) -> Void) {
    let result: Result<Int, any Error>
    defer { completion(result) }
    guard let number = Int(text) else {
      result = .failure(PlaygroundError("not a number: \(text)"))
      return
    }
    result = .success(number)
  }
  parse("42") { print($0) }
  parse("forty-two") { print($0) }
  // prints success(42)
  // prints failure(not a number: forty-two)
}
//: [Next: cancellation](@next)
