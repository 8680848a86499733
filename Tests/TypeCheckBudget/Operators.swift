// The operator expressions that .ci/typecheck-budget type-checks against the built module:
// each must type-check in under 500 ms. Not compiled into any target; nothing here runs.
import AsyncCombinators

func fifteenNamedStages() -> AsyncFunc<String, String> {
  let parse = AsyncFunc<String, Int>.sync(name: "parse") { Int($0) ?? 0 }
  let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
  let square = AsyncFunc<Int, Int>.sync(name: "square") { $0 * $0 }
  let add = AsyncFunc<(Int, Int), Int>.sync(name: "add") { $0 + $1 }
  let label = AsyncFunc<Int, String>.sync(name: "label") { "n\($0)" }
  let count = AsyncFunc<String, Int>.sync(name: "count") { $0.count }
  let fetch = AsyncFunc<Int, String>.async(name: "fetch") { "user\($0)" }
  let avatar = AsyncFunc<Int, String>.async(name: "avatar") { "avatar\($0).png" }
  let render = AsyncFunc<(String, String), String>.sync(name: "render") { "\($0) \($1)" }
  let trim = AsyncFunc<String, String>.sync(name: "trim") { String($0.prefix(8)) }
  let upper = AsyncFunc<String, String>.sync(name: "upper") { $0.uppercased() }
  let lower = AsyncFunc<String, String>.sync(name: "lower") { $0.lowercased() }
  let join = AsyncFunc<(String, String), String>.sync(name: "join") { $0 + $1 }
  let length = AsyncFunc<String, Int>.sync(name: "length") { $0.count }
  let describe = AsyncFunc<Int, String>.sync(name: "describe") { "\($0)" }
  let pipeline =
    parse +> double <> square +> add.retry(2) +> label +> count
    +> fetch.timeout(.seconds(1)) <> avatar.retry(3, delay: .milliseconds(10)) +> render
    +> trim +> upper.timeout(.milliseconds(500)) <> lower +> join +> length +> describe
  return pipeline
}

func eightInlineLifts() -> AsyncFunc<Int, Int> {
  let p: AsyncFunc<Int, Int> =
    .sync { $0 + 1 } <> .sync { $0 * 2 } +> .sync { a, b in a + b } +> .sync { $0 - 1 }
    <> .sync { $0 + 3 } +> .sync { a, b in a * b } +> .sync { $0 / 2 } +> .sync { $0 + 7 }
  return p
}

func eightInlineLiftsAfterIdentity() -> AsyncFunc<Int, Int> {
  let p: AsyncFunc<Int, Int> =
    .identity +> .sync { $0 + 1 } <> .sync { $0 * 2 } +> .sync { a, b in a + b }
    +> .sync { $0 - 1 } <> .sync { $0 + 3 } +> .sync { a, b in a * b } +> .sync { $0 / 2 }
    +> .sync { $0 + 7 }
  return p
}

func eightInlineLiftsWithStatements() -> AsyncFunc<Int, Int> {
  let p: AsyncFunc<Int, Int> =
    .sync { x in
      guard x >= 0 else { throw CancellationError() }
      return x + 1
    } <> .sync { $0 * 2 } +> .sync { a, b in a + b } +> .sync { $0 - 1 }
    <> .sync { $0 + 3 } +> .sync { a, b in a * b } +> .sync { $0 / 2 }
    +> .sync { $0 + 7 }
  return p
}

struct Outage: Error {}

func flatMapMapErrorAndConstantsInAPipeline() -> AsyncFunc<String, String> {
  let parse = AsyncFunc<String, Int>.sync(name: "parse") { Int($0) ?? 0 }
  let small = AsyncFunc<Int, String>.sync(name: "small") { "small \($0)" }
  let large = AsyncFunc<Int, String>.sync(name: "large") { "large \($0)" }
  let pipeline =
    parse.flatMap { $0 < 10 ? small : large }.mapError { _ in Outage() }
    +> .sync { $0.uppercased() } <> .just("!") +> .sync { $0 + $1 }
    +> AsyncFunc<String, Int>.sync(name: "count") { $0.count }
    .flatMap { n in n > 3 ? .just("long") : .fail(Outage()) }.retry(2)
  return pipeline
}

func foldsWithProgressAsTheirLastArgument() -> AsyncFunc<[Int], Void> {
  let label = AsyncFunc<Int, String>.sync(name: "label") { "n\($0)" }
  let isShort = AsyncFunc<String, Bool>.sync(name: "isShort") { $0.count < 3 }
  let parse = AsyncFunc<String, Int?>.sync(name: "parse") { Int($0.dropFirst()) }
  let send = AsyncFunc<Int, Void>.sync(name: "send") { _ in }
  return label.timeout(.seconds(1)).retry(2).concurrentMap(limit: 4) { print($0.completed) }
    +> isShort.concurrentFilter(limit: 2, acceptableFailure: .count(1)) { print($0) }
    +> parse.concurrentCompactMap(limit: 2, acceptableFailure: .ratio(0.1))
    +> send.concurrentForEach(limit: 3, progress: { print($0.inFlight) })
}

func batchedLoadersByLeadingDotInAPipeline() -> AsyncFunc<Int, String> {
  let usersByIDs = AsyncFunc<[Int], [String]>.sync(name: "usersByIDs") { $0.map { "u\($0)" } }
  let outcomes = AsyncFunc<[Int], [Result<String, any Error>]>.sync(name: "outcomes") {
    $0.map { .success("o\($0)") }
  }
  return .batched(usersByIDs, maxBatchSize: 50, window: .milliseconds(5)).retry(2)
    +> .sync { $0.count } +> .batched(outcomes, maxBatchSize: 10) <> .batched(usersByIDs)
    +> .sync { $0 + $1 }
}
