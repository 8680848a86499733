// The Promise and Schedule chains that .ci/typecheck-budget type-checks against the built
// module: each expression must type-check in under 500 ms (they take well under 100 ms). Not
// compiled into any target; nothing here runs.
import AsyncCombinators

func twelveIncrements() -> CancellationToken {
  firstly { 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .then { $0 + 1 }
    .always {}
    .error { _ in }
}

func twelveAffineSteps() -> Promise<Int> {
  firstly { 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
    .then { x in x * 2 + 1 }
}

func twelveAlternatingLinks() -> CancellationToken {
  firstly { 7 }
    .then { x in "\(x)" }
    .then { s in s.count }
    .then { x in "\(x)" }
    .then { s in s.count }
    .then { x in "\(x)" }
    .then { s in s.count }
    .then { x in "\(x)" }
    .then { s in s.count }
    .then { x in "\(x)" }
    .then { s in s.count }
    .then { x in "\(x)" }
    .then { s in s.count }
    .always {}
    .error { _ in }
}

func twelveTwoStatementBlocks() -> CancellationToken {
  firstly { 1 }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .then { x in
      print("step", x)
      return x + 1
    }
    .error { _ in }
}

func joinedThenEightThensAndAFlatMap(
  _ a: Promise<Int>, _ b: Promise<String>, _ c: Promise<Double>
) -> Promise<Int> {
  firstly { when(a, b, c) }
    .then { n, s, d in "\(s): \(Double(n) * d)" }
    .then { $0.count }
    .then { $0 * 2 }
    .then { x in x + 1 }
    .then { "\($0)" }
    .then { s in s.count }
    .then { $0 - 1 }
    .then { n in [n, n + 1] }
    .flatMap { pair in when(firstly { pair[0] }, firstly { pair[1] }) }
    .then { x, y in x + y }
}

func mixedThenFlatMapRecoverAlways(_ names: [String]) -> CancellationToken {
  firstly { names.count }
    .then { count in count * 10 }
    .flatMap { n in when(firstly { n }, firstly { "avatar\(n).png" }) }
    .then { n, image in "\(image) #\(n)" }
    .recover { _ in "placeholder.png" }
    .then { $0.uppercased() }
    .always {}
    .flatMap { name in firstly { name.count } }
    .recover { _ in 0 }
    .always {}
    .error { _ in }
}

func theArticlesProgram() -> CancellationToken {
  firstly {
    when(
      {
        print("begin fst job")
        print("fst job in when finished")
      },
      {
        print("begin snd job")
        print("snd job in when finished")
      })
  }.then { (info) in
    print("second job")
  }.then { (info) in
    print("third job")
  }.always {
    print("always block")
  }.error { (error) in
    print("error occurred")
  }
}

func aValueHeadWithStatements() -> Promise<String> {
  firstly { () -> Int in
    print("computing")
    return 6 * 7
  }
  .then { x in "\(x)" }
  .then { s in s.count }
  .then { x in "\(x)" }
  .then { s in s.count }
  .then { x in "\(x)" }
}

func aCallbackHeadAndWhenOfFour() -> Promise<Int> {
  Promise<Int> { complete in complete(.success(1)) }
    .flatMap { n in when(firstly { n }, firstly { "two" }, firstly { 3.0 }, firstly { [4] }) }
    .then { a, b, c, d in "\(a) \(b) \(c) \(d)" }
    .then { $0.count }
    .then { $0 * 2 }
    .then { x in "\(x)" }
    .then { s in s.count }
}

// A head of closures with literals, then links that convert (`Int(c)`): in one expression the
// solver tries every literal type of the head with every conversion of the links, and gives
// up ("unable to type-check this expression in reasonable time"). Troubleshooting shows the
// spellings below; each must stay under budget.

func aConvertingChainWithItsHeadBound() -> CancellationToken {
  let head = when(firstly { 1 }, firstly { "two" }, firstly { 3.0 })
  return
    head
    .then { a, b, c in a + b.count + Int(c) }
    .then { $0 * 2 }
    .then { x in x + 1 }
    .then { "\($0)" }
    .then { s in s.count }
    .then { $0 - 1 }
    .then { x in x * 3 }
    .then { $0 + 2 }
    .then { $0 + 1 }
    .error { _ in }
}

func aConvertingChainWithItsFirstLinkAnnotated() -> CancellationToken {
  when(firstly { 1 }, firstly { "two" }, firstly { 3.0 })
    .then { (a: Int, b: String, c: Double) in a + b.count + Int(c) }
    .then { $0 * 2 }
    .then { x in x + 1 }
    .error { _ in }
}

func aBoundHeadThenConversionsWithAnnotatedParameters() -> Promise<Int> {
  let head = when(firstly { 1 }, firstly { "two" }, firstly { 3.0 })
  return
    head
    .then { a, b, c in a + b.count + Int(c) }
    .then { $0 * 2 }
    .then { x in x + 1 }
    .then { (x: Int) in Double(x) }
    .then { (d: Double) in Int(d * 2) }
    .then { $0 + 1 }
}

func aScheduleChainInRetryAndRepeatingOperands() -> AsyncFunc<Int, String> {
  let fetch = AsyncFunc<Int, String>.async(name: "fetch") { "user\($0)" }
  let status = AsyncFunc<String, Int>.async(name: "status") { $0.count }
  let label = AsyncFunc<Int, String>.sync(name: "label") { "n\($0)" }
  return fetch.retry(
    .exponential(.milliseconds(100)).capped(at: .seconds(2)).jittered(.full)
      .union(.spaced(.milliseconds(250))).intersection(.recurs(5)).upTo(.seconds(30))
      .andThen(.spaced(.seconds(5)).intersection(.recurs(3))),
    if: { !($0 is CancellationError) })
    +> status.repeating(.spaced(.seconds(1)).upTo(.seconds(60)), until: { $0 > 3 })
    +> label.retry(.fibonacci(.milliseconds(10)).intersection(.recurs(4))).timeout(.seconds(9))
    +> status.retry(2, delay: .milliseconds(10)) +> label
}
