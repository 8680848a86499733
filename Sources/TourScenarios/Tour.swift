/// The Tour's scenarios, in the order `swift run Tour` plays them.
///
/// Each scenario lives in its own file in this target. To add one, write a
/// `static let` on `Tour` that returns a ``Scenario`` and append it here: the Tour prints it
/// and `TourTests` checks every ``Expectation`` its runs declare.
public enum Tour {
  /// Every scenario, in playing order.
  public static let scenarios: [Scenario] = [
    serialVersusParallel,
    processImageData,
    firstFailureCancelsTheRest,
  ]
}
