import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

private struct Boom: Error, Equatable {}

@Suite struct SerialTests {
  @Test func output_of_the_left_is_the_input_of_the_right() async throws {
    let seen = Recorder<Int>()
    let queue = testQueue()
    let add = AsyncFunc<Int, Int> { x, complete in queue.async { complete(.success(x + 1)) } }
    let show = AsyncFunc<Int, String> { x, complete in
      seen.record(x)
      complete(.success("<\(x)>"))
    }
    #expect(try await runToCompletion(add +> show, 1).get() == "<2>")
    #expect(seen.all == [2])
  }

  @Test func left_failure_short_circuits_so_right_never_starts() async {
    let started = Recorder<Int>()
    let right = AsyncFunc<Int, Int> { x, complete in
      started.record(x)
      complete(.success(x))
    }
    let queue = testQueue()
    let failsLater = AsyncFunc<Int, Int> { _, complete in
      queue.async { complete(.failure(Boom())) }
    }
    let throwsNow = AsyncFunc<Int, Int>.sync { _ in throw Boom() }
    await #expect(throws: Boom()) { try await runToCompletion(failsLater +> right, 1).get() }
    await #expect(throws: Boom()) { try await runToCompletion(throwsNow +> right, 1).get() }
    await #expect(throws: Boom()) {
      try await runToCompletion(throwsNow +> right +> right, 1).get()
    }
    #expect(started.count == 0)
  }

  @Test func failure_in_the_middle_skips_the_rest() async {
    let started = Recorder<String>()
    func stage(_ name: String, fails: Bool = false) -> AsyncFunc<Int, Int> {
      AsyncFunc(name: name) { x, complete in
        started.record(name)
        complete(fails ? .failure(Boom()) : .success(x))
      }
    }
    let pipeline = stage("a") +> stage("b", fails: true) +> stage("c") +> stage("d")
    await #expect(throws: Boom()) { try await runToCompletion(pipeline, 1).get() }
    #expect(started.all == ["a", "b"])
  }

  @Test func named_twins_compose_like_the_operator() async throws {
    let add = AsyncFunc<Int, Int>.sync(name: "add") { $0 + 1 }
    let double = AsyncFunc<Int, Int>.sync(name: "double") { $0 * 2 }
    #expect(try await serial(add, double)(3) == 8)
    #expect(try await add.then(double)(3) == 8)
    #expect(String(describing: serial(add, double)) == String(describing: add +> double))
  }

  @Test func serial_fold_runs_in_array_order() async throws {
    let steps = (1...5).map { n in AsyncFunc<Int, Int>.sync { $0 * 10 + n } }
    #expect(try await AsyncFunc.serial(steps)(0) == 12345)
  }

  @Test func serial_fold_mixes_stage_kinds_in_order() async throws {
    let queue = testQueue()
    let steps: [AsyncFunc<Int, Int>] = [
      .sync { $0 * 10 + 1 },
      AsyncFunc { x, complete in queue.async { complete(.success(x * 10 + 2)) } },
      .async { $0 * 10 + 3 },
      AsyncFunc { x, complete in complete(.success(x * 10 + 4)) },
    ]
    #expect(try await AsyncFunc.serial(steps)(0) == 1234)
  }

  @Test func serial_fold_of_nothing_is_identity() async throws {
    #expect(try await AsyncFunc<Int, Int>.serial([])(7) == 7)
    #expect(String(describing: AsyncFunc<Int, Int>.serial([])) == "identity")
  }

  @Test func serial_fold_short_circuits() async {
    let started = Recorder<Int>()
    let steps = (0..<4).map { n in
      AsyncFunc<Int, Int>.sync { x in
        started.record(n)
        if n == 1 { throw Boom() }
        return x
      }
    }
    await #expect(throws: Boom()) { try await AsyncFunc.serial(steps)(0) }
    #expect(started.all == [0, 1])
  }

  @Test func identity_completes_with_its_input() async throws {
    #expect(try await AsyncFunc<String, String>.identity("same") == "same")
    #expect(String(describing: AsyncFunc<Int, Int>.identity) == "identity")
  }

  @Test func identity_is_the_unit_of_serial() async throws {
    let queue = testQueue()
    let f = AsyncFunc<Int, Int>(name: "f") { x, complete in
      queue.async { complete(.success(x * 3)) }
    }
    #expect(try await (AsyncFunc.identity +> f)(5) == 15)
    #expect(try await (f +> AsyncFunc.identity)(5) == 15)
    #expect(String(describing: AsyncFunc.identity +> f +> AsyncFunc.identity) == "f")
  }

  @Test func parallel_binds_tighter_than_serial() async throws {
    let a = AsyncFunc<Int, Int>.sync(name: "a") { $0 + 1 }
    let b = AsyncFunc<Int, Int>.sync(name: "b") { $0 * 10 }
    let c = AsyncFunc<(Int, Int), String>.sync(name: "c") { "\($0),\($1)" }
    // Type-level: if `+>` bound tighter, `b +> c` would come first and this would not compile.
    let pipeline: AsyncFunc<Int, String> = a <> b +> c
    #expect(try await pipeline(2) == "3,20")
    #expect(String(describing: pipeline) == "(a <> b) +> c")
  }

  @Test func both_operators_are_left_associative() async throws {
    let a = AsyncFunc<Int, Int>.sync(name: "a") { $0 + 1 }
    let b = AsyncFunc<Int, Int>.sync(name: "b") { $0 * 10 }
    let c = AsyncFunc<Int, Int>.sync(name: "c") { $0 - 1 }
    // Type-level: right association would pair as (Int, (Int, Int)).
    let nested: AsyncFunc<Int, ((Int, Int), Int)> = a <> b <> c
    let ((x, y), z) = try await nested(2)
    #expect([x, y, z] == [3, 20, 1])
    #expect(try await (a +> b +> c)(2) == 29)
  }
}
