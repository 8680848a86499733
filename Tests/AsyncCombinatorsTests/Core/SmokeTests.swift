import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

@Test func serial_feeds_output_forward() async throws {
  let add = AsyncFunc<Int, Int>.sync { $0 + 1 }
  let double = AsyncFunc<Int, Int> { x, complete in complete(.success(x * 2)) }
  #expect(try await (add +> double)(3) == 8)
  #expect(try await runToCompletion(add +> double, 1).get() == 4)
}
