/*:
 # 2. Serial composition: `+>`

 `f +> g` runs `f`, then runs `g` on `f`'s output. If `f` fails, `g` never starts and the
 failure is the result. That is the whole operator, and it removes the pyramid of doom.

 ## The pyramid

 Here are the four callback APIs of `processImageData`, from the HoneyBee article: two
 downloads, a decoder and a cleanup step, in the Objective-C `(value?, error?)` style.
 */
import AsyncCombinators
import Dispatch

typealias Callback<Value> = @Sendable (Value?, (any Error)?) -> Void

func loadWebResource(_ path: String, completion: @escaping Callback<String>) {
  network.asyncAfter(deadline: .now() + .milliseconds(20)) { completion("<\(path)>", nil) }
}

func decodeImage(_ profile: String, _ data: String, completion: @escaping Callback<String>) {
  network.async { completion("image(\(profile), \(data))", nil) }
}

func dewarpAndCleanupImage(_ image: String, completion: @escaping Callback<String>) {
  network.async { completion("clean \(image)", nil) }
}
/*:
 Written by hand, every step nests inside the one before, and every level repeats the same
 error forwarding. The two downloads do not depend on each other, yet they run one after the
 other, because nesting is the only thing this style can say.
 */
func processImageData(completion: @escaping Callback<String>) {
  loadWebResource("dataprofile.txt") { profile, error in
    guard let profile else { return completion(nil, error) }
    loadWebResource("imagedata.dat") { data, error in
      guard let data else { return completion(nil, error) }
      decodeImage(profile, data) { image, error in
        guard let image else { return completion(nil, error) }
        dewarpAndCleanupImage(image) { result, error in
          guard let result else { return completion(nil, error) }
          completion(result, nil)
        }
      }
    }
  }
}

example("the pyramid") {
  await withCheckedContinuation { done in
    processImageData { image, error in
      print(image ?? "nil", error.map { "\($0)" } ?? "no error")
      done.resume()
    }
  }
  // prints clean image(<dataprofile.txt>, <imagedata.dat>) no error
}
/*:
 ## The chain

 Lift each API once with `.valueOrError` (which also turns a callback with neither value nor
 error into a `ContractViolation`, instead of a silent hang). Then say the algorithm:
 */
let load = AsyncFunc<String, String>.valueOrError(name: "load") { path, callback in
  loadWebResource(path, completion: callback)
}
let decode = AsyncFunc<(String, String), String>.valueOrError(name: "decode") { pair, callback in
  decodeImage(pair.0, pair.1, completion: callback)
}
let dewarp = AsyncFunc<String, String>.valueOrError(name: "dewarp") { image, callback in
  dewarpAndCleanupImage(image, completion: callback)
}

example("the same steps, chained") {
  let processImageData =
    load.bind("dataprofile.txt") <> load.bind("imagedata.dat") +> decode +> dewarp
  print(processImageData)
  print(try await processImageData())
  // prints (load <> load) +> decode +> dewarp
  // prints clean image(<dataprofile.txt>, <imagedata.dat>)
}
/*:
 One line, read left to right: load both files, then decode, then dewarp. `bind` fixes an
 input (partial application); `<>`, the subject of the next page, runs the two loads at once,
 which is what the algorithm wanted all along. The types check the plumbing: the pair of
 loads must be what `decode` takes, and `decode`'s output what `dewarp` takes, or the line
 does not compile. Any error, from any stage, ends the chain and is the result.

 ## Failure short-circuits

 When a stage fails, the stages after it never start.
 */
example("a failure stops the chain") {
  let started = Counter()
  let fail = AsyncFunc<Int, Int>.sync(name: "fail") { _ in throw PlaygroundError("no") }
  let count = AsyncFunc<Int, Int>.sync(name: "count") { x in
    started.increment()
    return x
  }
  do {
    _ = try await (fail +> count)(1)
  } catch {
    print("failed with \(error); count started \(started.value) times")
  }
  // prints failed with no; count started 0 times
}
/*:
 ## Laws

 `+>` is associative, so a chain needs no parentheses: `(f +> g) +> h` and `f +> (g +> h)`
 behave the same. `AsyncFunc.identity` is its unit. And because of that,
 `AsyncFunc.serial(steps)` folds an array of same-typed steps into one.
 */
example("serial of an array") {
  let steps = (1...3).map { n in AsyncFunc<Int, Int>.sync(name: "step\(n)") { $0 * 10 + n } }
  let all = AsyncFunc.serial(steps)
  print(all, try await all(0))
  // prints step1 +> step2 +> step3 123
}
//: [Next: parallel composition](@next)
