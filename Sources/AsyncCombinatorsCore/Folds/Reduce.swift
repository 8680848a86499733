import AsyncCombinatorsKernel

extension AsyncFunc {
  /// A serial asynchronous fold: combines an initial value with each element of an array in
  /// turn, one combine at a time, in order.
  ///
  /// Each combine gets the accumulated value and the next element and starts when the one
  /// before it has completed; the first failure fails the whole and the rest never start.
  /// An empty array gives `initial`.
  ///
  /// ```swift
  /// let add = AsyncFunc<(Int, Int), Int>.async(name: "add") { $0 + $1 }
  /// let sum = AsyncFunc.reduce(0, add)
  /// print(sum)
  /// print(try await sum([1, 2, 3, 4]))
  /// // prints reduce(0, add)
  /// // prints 10
  /// ```
  ///
  /// - Parameters:
  ///   - initial: The value the fold starts from.
  ///   - combine: Combines the value so far with the next element.
  /// - Returns: A function from the array to the folded value.
  /// - Complexity: O(*n*) for *n* elements; combines that complete synchronously run in one
  ///   loop, not one stack frame each.
  public static func reduce<Element>(
    _ initial: Output, _ combine: AsyncFunc<(Output, Element), Output>
  ) -> AsyncFunc<[Element], Output> where Input == [Element] {
    let name = "reduce(\(initial), \(combine))"
    let label = Label(name: name, fileID: #fileID, line: #line)
    return AsyncFunc<[Element], Output>(
      program: .make(.stage(label), label: label) { elements, token, completion in
        // Each element becomes a stage `accumulated -> combine(accumulated, element)`; the
        // interpreter runs the chain with its trampoline, each stage counting itself.
        let steps = unbox(elements, as: [Element].self).map { element in
          (AsyncFunc<Output, (Output, Element)>.sync { ($0, element) } +> combine).program
        }
        Program.sequence(steps).start(initial, token: token, parent: completion)
      })
  }
}
