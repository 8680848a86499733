import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {}

@Suite struct AsyncFuncTests {
  @Test func two_argument_init_completes_with_the_body_result() async throws {
    let double = AsyncFunc<Int, Int> { x, complete in complete(.success(x * 2)) }
    #expect(try await runToCompletion(double, 21).get() == 42)
  }

  @Test func two_argument_init_delivers_a_failure() async {
    let fail = AsyncFunc<Int, Int> { _, complete in complete(.failure(Boom())) }
    await #expect(throws: Boom()) { try await runToCompletion(fail, 1).get() }
  }

  @Test func token_init_completes_with_the_body_result_from_another_thread() async throws {
    let queue = testQueue()
    let double = AsyncFunc<Int, Int> { x, token, complete in
      queue.async { complete(token.isCancelled ? .failure(Boom()) : .success(x * 2)) }
    }
    #expect(try await runToCompletion(double, 21).get() == 42)
  }

  @Test func token_init_token_fires_when_the_run_is_cancelled() async {
    let fired = Gate()
    let parked = AsyncFunc<Int, Int> { _, token, _ in token.onCancel { fired.open() } }
    let token = parked.run(1) { _ in }
    #expect(!fired.isOpen)
    token.cancel()
    #expect(fired.isOpen)
  }

  @Test func description_shows_structure_from_names() {
    let load = AsyncFunc<Int, Int>(name: "load") { x, complete in complete(.success(x)) }
    let other = AsyncFunc<Int, Int>.sync(name: "other") { $0 }
    let decode = AsyncFunc<(Int, Int), Int>.sync(name: "decode") { $0 + $1 }
    let dewarp = AsyncFunc<Int, String>.async(name: "dewarp") { String($0) }
    let pipeline = (load <> other) +> decode +> dewarp
    #expect(String(describing: pipeline) == "(load <> other) +> decode +> dewarp")
    #expect(String(describing: load <> (other <> load)) == "load <> (other <> load)")
    #expect(String(describing: load <> other <> load) == "load <> other <> load")
    #expect(String(describing: decode +> dewarp) == "decode +> dewarp")
  }

  @Test func description_of_an_unnamed_function_shows_file_and_line() {
    let line = #line + 1
    let unnamed = AsyncFunc<Int, Int> { x, complete in complete(.success(x)) }
    let syncLine = #line + 1
    let unnamedSync = AsyncFunc<Int, Int>.sync { $0 }
    #expect(String(describing: unnamed) == "AsyncFuncTests.swift:\(line)")
    #expect(
      String(describing: unnamed +> unnamedSync)
        == "AsyncFuncTests.swift:\(line) +> AsyncFuncTests.swift:\(syncLine)")
  }

  @Test func token_init_records_name_and_location() {
    let line = #line + 1
    let named = AsyncFunc<Int, Int>(name: "withToken") { x, _, complete in
      complete(.success(x))
    }
    let unnamed = AsyncFunc<Int, Int> { x, _, complete in complete(.success(x)) }
    #expect(String(describing: named) == "withToken")
    #expect(String(describing: unnamed) == "AsyncFuncTests.swift:\(line + 3)")
  }

  @Test func run_with_void_input_needs_no_argument() async throws {
    let answer = AsyncFunc<Void, Int> { _, complete in complete(.success(42)) }
    let result = await withCheckedContinuation { continuation in
      answer.run { continuation.resume(returning: $0) }
    }
    #expect(try result.get() == 42)
  }

  @Test func call_as_function_returns_the_value() async throws {
    let queue = testQueue()
    let double = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x * 2)) } }
    #expect(try await double(21) == 42)
  }

  @Test func call_as_function_throws_the_failure() async {
    let fail = AsyncFunc<Int, Int> { _, complete in complete(.failure(Boom())) }
    await #expect(throws: Boom()) { try await fail(1) }
  }

  @Test func call_as_function_with_void_input_needs_no_argument() async throws {
    let answer = AsyncFunc<Void, Int>.sync { 42 }
    #expect(try await answer() == 42)
  }

  @Test func bind_fixes_the_input() async throws {
    let seen = Recorder<Int>()
    let double = AsyncFunc<Int, Int>(name: "double") { x, complete in
      seen.record(x)
      complete(.success(x * 2))
    }
    let bound: AsyncFunc<Void, Int> = double.bind(21)
    #expect(try await bound() == 42)
    #expect(try await bound() == 42)
    #expect(seen.all == [21, 21])
    #expect(String(describing: bound) == "double")
  }

  @Test func map_transforms_the_output() async throws {
    let length = AsyncFunc<String, String>.sync(name: "echo") { $0 }.map { $0.count }
    #expect(try await length("four") == 4)
    #expect(String(describing: length) == "echo +> map")
  }

  @Test func map_throw_is_the_failure() async {
    let failing = AsyncFunc<Int, Int>.sync { $0 }.map { (_: Int) -> Int in throw Boom() }
    await #expect(throws: Boom()) { try await failing(1) }
  }

  @Test func map_does_not_run_after_a_failure() async {
    let ran = Recorder<Int>()
    let failing = AsyncFunc<Int, Int> { _, complete in complete(.failure(Boom())) }
      .map { x in
        ran.record(x)
        return x
      }
    await #expect(throws: Boom()) { try await failing(1) }
    #expect(ran.count == 0)
  }

  @Test func then_is_serial_composition() async throws {
    let add = AsyncFunc<Int, Int>.sync(name: "add") { $0 + 1 }
    let show = AsyncFunc<Int, String>(name: "show") { x, complete in
      complete(.success("<\(x)>"))
    }
    let pipeline = add.then(show)
    #expect(try await pipeline(1) == "<2>")
    #expect(String(describing: pipeline) == "add +> show")
  }
}
