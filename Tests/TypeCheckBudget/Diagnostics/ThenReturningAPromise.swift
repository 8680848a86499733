// A block that returns a promise passed to then, whose value the next block uses.
import AsyncCombinators

func doublesThroughAPromise() -> Promise<Int> {
  // expected-error: 'then(on:_:)' has been renamed to 'flatMap(on:_:)'
  firstly { 1 }.then { x in firstly { x * 2 } }.then { $0 + 1 }
}
