/// A closure in a struct, to pass through generic code (a lock's `withLock`, a queue's
/// element, an array) as it is.
///
/// A function value that becomes a generic value is converted to the most general calling
/// convention, through a thunk made for it. A struct keeps its layout wherever it goes, so the
/// closure inside it is never converted.
struct Action: Sendable {
  let run: @Sendable () -> Void

  init(_ run: @escaping @Sendable () -> Void) { self.run = run }

  func callAsFunction() { run() }
}
