/*:
 # 1. A callback function, as a value

 Most asynchronous code you inherit looks like `fetchUserName` below: it takes an input and a
 completion handler, and calls the handler later, once, from another thread. Such a function
 is hard to pass around, and harder to combine with others.
 */
import AsyncCombinators
import Dispatch

func fetchUserName(_ id: Int, completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
  network.asyncAfter(deadline: .now() + .milliseconds(20)) { completion(.success("user\(id)")) }
}
/*:
 `AsyncFunc<Input, Output>` makes it a value. Its body receives the input and a `complete`
 callback, and must call `complete` exactly once with a `Result`. The `name:` is what
 descriptions, timelines and error reports call the function.
 */
let fetchUser = AsyncFunc<Int, String>(name: "fetchUser") { id, complete in
  fetchUserName(id, completion: complete)
}
/*:
 Creating it runs nothing: it is a description of work, like a function you have not called.
 Printing it shows its name.
 */
example("a value that describes work") {
  print(fetchUser)
  // prints fetchUser
}
/*:
 Run it with a callback, as the original API...
 */
example("run it with a callback") {
  await withCheckedContinuation { done in
    fetchUser.run(7) { result in
      print(result)
      done.resume()
    }
  }
  // prints success("user7")
}
/*:
 ...or `await` it: an `AsyncFunc` is callable.
 */
example("await it") {
  let name = try await fetchUser(7)
  print(name)
  // prints user7
}
/*:
 ## Lifts: functions of other shapes

 Static factories turn other shapes into an `AsyncFunc`, each labelled so a closure is never
 ambiguous: `.sync` for plain functions (a throw is the failure), `.async` for `async`
 functions, `.valueOrError` for Objective-C callbacks that pass `(value?, error?)`.
 */
let shout = AsyncFunc<String, String>.sync(name: "shout") { $0.uppercased() }
let greet = AsyncFunc<String, String>.async(name: "greet") { name in "Hello, \(name)!" }
let legacyCount = AsyncFunc<String, Int>.valueOrError(name: "count") { text, callback in
  network.async { callback(text.count, nil) }
}

example("lifted functions run like any other") {
  print(try await shout("quiet"), try await greet("Ada"), try await legacyCount("four"))
  // prints QUIET Hello, Ada! 4
}
/*:
 A function made without a `name:` is shown by where it was made, so you can still find it.
 */
example("an unnamed function shows where it was made") {
  print(AsyncFunc<Int, Int>.sync { $0 + 1 })
  // prints Contents.swift:71 (the file and line that made it)
}
/*:
 ## A preview

 Values compose. `<>` runs two functions at once on the same input and pairs their results;
 `+>` feeds one function's output to the next. The next two pages explain each; this is all
 it takes to write a three-stage pipeline with one parallel step.
 */
example("three stages, two of them at once") {
  let avatar = delayed("avatar") { (id: Int) in "avatar\(id).png" }
  let profile = delayed("profile") { (id: Int) in "user\(id)" }
  let render = AsyncFunc<(String, String), String>.sync(name: "render") { image, name in
    "\(name) with \(image)"
  }
  let page = avatar <> profile +> render
  print(page)
  print(try await page(7))
  // prints (avatar <> profile) +> render
  // prints user7 with avatar7.png
}
//: [Next: serial composition](@next)
