/// The Tour's scenarios, in the order `swift run Tour` plays them.
///
/// Each scenario lives in its own file in this target, as a `static let` on `Tour` that
/// returns a ``Scenario``. To add one, write that file and append the scenario here: the Tour
/// prints it, and `TourTests` checks every ``Expectation`` its runs declare. The seed
/// scenarios still to come belong here too, each in its own file: the Promise demos of
/// seed 003, the batch upload of seed 000, and the ordered queue of seed 001.
public enum Tour {
  /// Every scenario, in playing order.
  public static let scenarios: [Scenario] = [
    serialVersusParallel,
    processImageData,
    firstFailureCancelsTheRest,
  ]
}
