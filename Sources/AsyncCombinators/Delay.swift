extension AsyncFunc where Input == Output {
  /// Passes its input through after `duration`: a pause in a pipeline.
  ///
  /// The wait holds no thread; cancelling the run during it ends the run at once.
  ///
  /// ```swift
  /// let politely = fetch +> .delay(.milliseconds(200)) +> fetchNext
  /// print(politely)
  /// // prints fetch +> delay(0.2 seconds) +> fetchNext
  /// ```
  ///
  /// - Parameter duration: How long to wait; not negative.
  /// - Returns: A function that outputs its input, later.
  public static func delay(_ duration: Duration) -> AsyncFunc {
    precondition(duration >= .zero, "delay(\(duration)): the duration must not be negative")
    return AsyncFunc(label: Label(name: "delay(\(duration))", fileID: #fileID, line: #line)) {
      input, token, complete in
      OneShotTimer.after(duration, token: token) { complete(.success(input)) }
    }
  }
}
