/// The Tour's scenarios, in the order `swift run Tour` plays them.
///
/// Each scenario lives in its own file in this target, as a `static let` on `Tour` that
/// returns a ``Scenario``. To add one, write that file and append the scenario here: the Tour
/// prints it, and `TourTests` checks every ``Expectation`` its runs declare.
public enum Tour {
  /// Every scenario, in playing order.
  public static let scenarios: [Scenario] = [
    serialVersusParallel,
    processImageData,
    firstFailureCancelsTheRest,
    promiseDemos,
    batchUpload,
    orderedSubmission,
    largeBatch,
    resilience,
    pollingAnExport,
    customersSharingAService,
    downloadManager,
    doTheWorkOnce,
    deadlines,
    adaptiveLimitFollowsCapacity,
  ]
}
