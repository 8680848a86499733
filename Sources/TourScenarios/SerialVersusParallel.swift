import AsyncCombinators

extension Tour {
  /// The same three 30 ms stages, chained with `+>` and then joined with `<>`.
  public static let serialVersusParallel = Scenario(
    title: "+> waits, <> overlaps",
    story: """
      Three stages that take 30 ms each. Chained with +>, each starts when the one before \
      it ends: about 90 ms in steps. Joined with <>, all start at once: about 30 ms.
      """
  ) {
    let a = FakeNetwork.stage("a", milliseconds: 30) { (x: Int) in x + 1 }
    let b = FakeNetwork.stage("b", milliseconds: 30) { (x: Int) in x * 10 }
    let c = FakeNetwork.stage("c", milliseconds: 30) { (x: Int) in x - 3 }
    return [
      await Traced.run("a +> b +> c", a +> b +> c, 1, expecting: [.steps(["a", "b", "c"])]),
      await Traced.run(
        "a <> b <> c", parallel(a, b, c), 1,
        expecting: [.overlap("a", "b"), .overlap("b", "c"), .overlap("a", "c")]),
    ]
  }
}
