extension Optional {
  /// The wrapped value, or `error` thrown: for callback bodies that build a `Result`.
  func orThrow(_ error: some Error) throws -> Wrapped {
    guard let self else { throw error }
    return self
  }
}
