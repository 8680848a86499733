/*:
 # Promise on the public API

 `Sources/AsyncCombinatorsPromise/Promise.swift` rebuilds the article's PromiseKit-style interface —
 `firstly`, `then`, `when`, `always`, `error` — in about 110 lines of code, using nothing but
 the library's public API: `AsyncFunc`, `+>` and `<>`. CI builds the facade as a module of its
 own to prove it. No locks, no busy-waits: each method is one of the operators applied to the
 right stage.
 */
import AsyncCombinators
import Foundation

/*:
 ## The article's program

 The two `when` jobs start together; the chain goes on when the slower one finishes (0.5 s,
 not 0.6), then runs the `then` blocks in order, then `always`.
 */
example("when, then, then, always") {
  await withCheckedContinuation { finished in
    firstly { () in
      when(
        { () in
          print("begin fst job")
          usleep(100_000)
          print("fst job in when finished")
        },
        { () in
          print("begin snd job")
          usleep(500_000)
          print("snd job in when finished")
        })
    }.then { (info) in
      print("second job")
    }.then { (info) in
      print("third job")
    }.always { () in
      print("always block")
      finished.resume()
    }.error { (error) in
      print("error occurred")
    }
  }
}

/*:
 ## A promise is a function

 `Promise<Value>` holds one `AsyncFunc<Void, Value>` named `chain`. It is a value: each
 method returns a new promise, and building one runs nothing. `then` is `chain +> block`,
 where `block` is a hop, `.sync(on: queue, body)`: one block on the queue runs your closure
 and the chain goes on there. `firstly` is such a stage with nothing before it. Nothing has printed yet below: the chain starts at `value` (or `error`), and runs
 again at each start.
 */
example("cold: nothing runs until you ask") {
  let answer = firstly { () -> Int in
    print("computing")
    return 6 * 7
  }
  print("built")
  print(try await answer.value)
  print(try await answer.value)
}

/*:
 ## A throw skips the rest

 `+>` stops at the first failure, so the later `then` never runs. `always` runs first, then
 `error`.
 */
struct Overheated: Error {}

example("a throw reaches error") {
  await withCheckedContinuation { finished in
    firstly { 1 }.then { (info) in
      print("second job")
      throw Overheated()
    }.then { (info) in
      print("third job")
    }.always {
      print("always block")
    }.error { (error) in
      print("error occurred:", error)
      finished.resume()
    }
  }
}

/*:
 ## `when` is `<>`, and `flatMap` runs the promise a block returns

 `when(a, b)` is `Promise(a.chain <> b.chain)`; more promises use the variadic `parallel`
 fold, an array uses `AsyncFunc.parallel`. `firstly { when(a, b) }` runs the `when` and goes
 on with its value. A block that returns a promise goes to `flatMap`, which runs it as part
 of the same run: the next block sees its value. (`then` is for blocks that return a value;
 given a promise block, the compiler says "renamed to 'flatMap(on:_:)'".)
 */
example("when and flattening") {
  let profile = firstly { "Ada" }
  let avatar = firstly { "ada.png" }
  let card = firstly { when(profile, avatar) }.then { name, image in "\(name) [\(image)]" }
  print(try await card.value)
  let badge = card.flatMap { text in when(firstly { text }, firstly { text.count }) }
    .then { text, length in "\(text) (\(length))" }
  print(try await badge.value)
  print(try await when([firstly { 1 }, firstly { 2 }, firstly { 3 }]).value)
}

/*:
 ## `recover`, and wrapping a callback

 `recover` turns a failure into a value (a cancellation is never recovered).
 `Promise { complete in … }` wraps a callback API directly, like `AsyncFunc { _, complete in … }`.
 */
example("recover and Promise { complete in }") {
  let legacy = Promise<Int> { complete in
    DispatchQueue.global().async { complete(.failure(Overheated())) }
  }
  print(try await legacy.recover { _ in 0 }.then { $0 + 1 }.value)
}

/*:
 ## Everyday verbs

 `timeout`, `retry`, `delay`, `race` and `tap` are `AsyncFunc`'s operators applied to the
 chain so far, with the same parameters. `Promise(value:)` and `Promise(error:)` complete at
 once, and `flatMapError` recovers with a promise, as `flatMap` goes on with one.
 */
example("timeout, retry, delay, race, tap, flatMapError") {
  let flaky = Promise<Int>(error: Overheated()).retry(2, delay: .milliseconds(10))
  let backup = Promise(value: 7).delay(.milliseconds(50))
  let fastest = race([flaky, backup]).timeout(.seconds(1)).tap { print("race:", $0) }
  print(try await fastest.value)
  print(try await flaky.flatMapError { _ in Promise(value: 0) }.value)
}

/*:
 ## `error` ends the chain and returns a token

 `always` wraps the chain so far and runs its block whatever the outcome — even after a
 cancellation. `error` does not run on cancellation: cancelling is not failing.
 */
example("cancellation runs always, not error") {
  await withCheckedContinuation { finished in
    let token = firstly { usleep(200_000) }
      .then { _ in print("never printed") }
      .always {
        print("always block")
        finished.resume()
      }
      .error { _ in print("never printed either") }
    token.cancel()
  }
}
