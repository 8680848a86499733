/*:
 # 4. Folds: many functions, many inputs

 `+>` and `<>` combine two functions. Folds combine any number: an array of functions run in
 turn or at once, or one function run over an array of inputs.

 ## Many functions

 `AsyncFunc.serial` folds `+>` over an array of same-typed steps; `AsyncFunc.parallel` runs
 an array of functions at once and keeps their results in the array's order.
 */
import AsyncCombinators

example("serial and parallel folds") {
  let add = (1...3).map { n in delayed("add\(n)") { (x: Int) in x + n } }
  print(try await AsyncFunc.serial(add)(0))
  print(try await AsyncFunc.parallel(add)(10))
  // prints 6
  // prints [11, 12, 13]
}
/*:
 ## Many inputs

 `concurrentMap` runs one function over every element of an array, at most `limit` at a time,
 and keeps the input order. `acceptableFailure` says how many elements may fail before the
 whole does; the ones that failed within the tolerance are left out.
 */
let square = delayed("square") { (x: Int) -> Int in
  guard x != 4 else { throw PlaygroundError("4 is unlucky") }
  return x * x
}

example("concurrentMap, four at a time") {
  let squares = square.concurrentMap(limit: 4, acceptableFailure: .count(1))
  print(try await squares(Array(1...8)))
  // prints [1, 4, 9, 25, 36, 49, 64]
}

example("beyond the tolerance, the whole fails") {
  do {
    _ = try await square.concurrentMap(limit: 4)(Array(1...8))
  } catch {
    print(error)
  }
  // prints the failed index (3) and its error
}
/*:
 `concurrentFilter` keeps the elements for which an asynchronous predicate says `true`, in
 order.
 */
example("concurrentFilter") {
  let isAvailable = delayed("isAvailable") { (name: String) in name.count > 3 }
  print(try await isAvailable.concurrentFilter(limit: 2)(["ada", "grace", "alan", "bob"]))
  // prints ["grace", "alan"]
}
/*:
 `AsyncFunc.reduce` is the serial asynchronous fold: it combines the elements one at a time,
 in order, each combine step an `AsyncFunc` of the running total and the next element.
 */
example("reduce") {
  let addSlowly = delayed("add") { (pair: (Int, Int)) in pair.0 + pair.1 }
  let total = AsyncFunc<[Int], Int>.reduce(0, addSlowly)
  print(try await total([1, 2, 3, 4]))
  // prints 10
}
//: [Next: the callback contract](@next)
