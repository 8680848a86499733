// The two sides of a +> do not fit: the message names both types.
import AsyncCombinators

func fetchThenDouble() -> AsyncFunc<Int, Int> {
  let fetch = AsyncFunc<Int, String>.sync(name: "fetch") { "user\($0)" }
  let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
  // expected-error: cannot convert value of type 'AsyncFunc<Int, Int>' to expected argument type 'AsyncFunc<String, Int>'
  return fetch +> double
}
