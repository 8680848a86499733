import AsyncCombinators
import AsyncCombinatorsTesting
import Synchronization
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The array fold and the stream count a slot as `limit(_:)` does: held from an element's start
/// until its body calls back, though a timeout delivered the element's result long before.
@Suite struct FoldsCountRealWorkTests {
  /// Three inputs, then the end; `ended` opens when an iterator is asked past the last one.
  struct ThreeThenEnd: AsyncSequence, Sendable {
    let ended = Gate()

    func makeAsyncIterator() -> Iterator { Iterator(ended: ended) }

    struct Iterator: AsyncIteratorProtocol {
      let ended: Gate
      var next = 0

      mutating func next() async -> Int? {
        guard next < 3 else {
          ended.open()
          return nil
        }
        defer { next += 1 }
        return next
      }
    }
  }

  /// The two forms, each with `limit: 2` over the inputs 0, 1, 2 of a function whose bodies
  /// park and ignore cancellation, timed out after 50 ms on `clock`: each returns the task
  /// that runs it to its end, once everything it needs to start a third element is in place.
  enum Form: String, CaseIterable, CustomTestStringConvertible {
    case array, orderedStream, unorderedStream

    var testDescription: String { rawValue }

    func start(_ parking: Parking<Int, Int>, _ clock: TestClock) async -> Task<Int, any Error> {
      let element = parking.function.timeout(.milliseconds(50), clock: clock)
      switch self {
      case .array:
        let fold = element.concurrentMapResults(limit: 2)
        let run = Task { try await fold([0, 1, 2]).count }
        await parking.waitForStarts(2)
        return run
      case .orderedStream:
        let source = ThreeThenEnd()
        let stream = element.concurrentMap(
          over: source, limit: 2, acceptableFailure: .unlimited)
        let run = Task {
          var outputs = 0
          for try await _ in stream { outputs += 1 }
          return outputs
        }
        await parking.waitForStarts(2)
        // The third input was pulled into the window, to start when a slot frees, before the
        // source was asked for a fourth.
        await source.ended.wait()
        return run
      case .unorderedStream:
        // Nothing waits for a slot here: the consumer pulls the third input once one is free.
        let stream = element.concurrentMap(
          over: ThreeThenEnd(), limit: 2, ordered: false, acceptableFailure: .unlimited)
        let run = Task {
          var outputs = 0
          for try await _ in stream { outputs += 1 }
          return outputs
        }
        await parking.waitForStarts(2)
        return run
      }
    }
  }

  @Test(.timeLimit(.minutes(1)), arguments: Form.allCases)
  func a_timed_out_elements_slot_waits_for_its_body_to_call_back(form: Form) async throws {
    let parking = Parking<Int, Int>()
    let clock = TestClock()
    let run = await form.start(parking, clock)
    let zombies = parking.takeAll()
    clock.advance(by: .milliseconds(50))  // Both results are out: two TimeoutErrors...
    #expect(zombies.allSatisfy { $0.token.isCancelled })
    #expect(parking.started == 2)  // ...but their bodies, ignoring cancellation, keep the slots.
    zombies[0].complete(.success(0))  // Ignored: the element has its result. Its slot is free.
    await parking.waitForStarts(3)  // At once for the array and the window; after a pull else.
    #expect(parking.started == 3)
    let third = parking.takeAll()
    zombies[1].complete(.success(1))
    third[0].complete(.success(20))
    #expect(try await run.value == (form == .array ? 3 : 1))
  }
}
