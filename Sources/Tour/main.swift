import AsyncCombinators
import Dispatch

let fetch = AsyncFunc<Int, String>(name: "fetch") { id, complete in
  DispatchQueue.global().async { complete(.success("user\(id)")) }
}
let avatar = AsyncFunc<Int, String>.async(name: "avatar") { "avatar\($0).png" }
let greet = AsyncFunc<(String, String), String>.sync(name: "greet") { "\($0.0) / \($0.1)" }
let pipeline = fetch <> avatar +> greet
print(pipeline)
print(try await pipeline(7))
let p3 = parallel(fetch, avatar, fetch.map { $0.count })
print(p3, try await p3(3))
print(try await AsyncFunc.parallel([fetch, fetch]).map(name: "join") { $0.joined() }(1))
let slow = AsyncFunc<Int, Int>(name: "slow") { x, token, c in
  token.onCancel { print("slow saw cancel") }
}
let t = (slow +> .sync { $0 + 1 }).run(1) { print("done", $0) }
t.cancel()
let never = AsyncFunc<Int, Int>(name: "never") { _, _ in }
print(await Result { try await never(1) })
let twice = AsyncFunc<Int, Int>(name: "twice") { x, c in
  c(.success(x))
  c(.success(x))
}
print(try await twice(5))
print(AsyncFunc<Int, Int>.identity, fetch.bind(3), (fetch +> .sync { $0 }) <> avatar)
extension Result where Failure == any Error {
  init(catching body: () async throws -> Success) async {
    do { self = .success(try await body()) } catch { self = .failure(error) }
  }
}
