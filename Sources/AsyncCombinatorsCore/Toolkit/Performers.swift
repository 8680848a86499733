import AsyncCombinatorsKernel
import Dispatch

extension AsyncFunc {
  /// Starts this function on `performer`: its body runs in the performer's context.
  ///
  /// HoneyBee's `setBlockPerformer`, for one function. What runs after it runs where its
  /// completion is called; put the next function `on` a performer too when it cares. On a
  /// `.sync` function this is a hop, the stage `sync(on:name:fileID:line:_:)` builds: what
  /// follows runs on the performer too.
  /// A run cancelled before the performer gets to it never starts.
  ///
  /// ```swift
  /// let show = AsyncFunc<String, Void>.sync(name: "show") { label.text = $0 }
  /// let onMain = show.on(DispatchQueue.main)
  /// print(onMain)
  /// // prints show.on(com.apple.main-thread)
  /// ```
  ///
  /// - Parameter performer: Where to start the body, such as a `DispatchQueue`.
  /// - Returns: A function with the same input and output that starts on `performer`.
  public func on(_ performer: some BlockPerformer) -> AsyncFunc {
    let inner = program
    let name = (performer as? DispatchQueue)?.label ?? "\(type(of: performer))"
    let call = "on(\(name))"
    // A synchronous function becomes a hop: one block, no stage around it.
    if let hop = inner.hopping(to: performer, shape: .modified(inner, call)) {
      return AsyncFunc(program: hop)
    }
    return AsyncFunc(modifying: inner, call: call) { input, token, report in
      // A hop: the block starts the inner function, which reports for this stage.
      performer.perform { inner.continueStage(input, token: token, report: report) }
    }
  }
}
