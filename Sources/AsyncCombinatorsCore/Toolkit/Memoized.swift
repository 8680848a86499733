import AsyncCombinatorsKernel

extension AsyncFunc where Input: Hashable {
  /// Runs get the result kept in `cache` for their input, and a run of an input not kept
  /// calls this function once for every run that asks meanwhile: caolan/async's `memoize`
  /// with Go's `singleflight`.
  ///
  /// A run whose input is kept completes at once, on the calling thread, without calling the
  /// function. Runs of an input not kept share one call in flight exactly as ``shared()``
  /// describes, including cancellation: one run's cancellation ends that run alone, and the
  /// call is cancelled when every run that joined it is. The call's success is kept (its
  /// failure only with `cachingFailures`; a cancelled call never). An expired entry is
  /// refreshed by one call, however many runs ask for it at once. ``ResultCache/forget(_:)``
  /// during a call means its result is not kept, and the next run calls again.
  ///
  /// ```swift
  /// let users = ResultCache<Int, String>(name: "users")
  /// let user = AsyncFunc<Int, String>.sync(name: "user") { id in
  ///   print("calling user", id)
  ///   return "user\(id)"
  /// }.memoized(in: users)
  /// print(user)
  /// print(try await user(1), try await user(1))
  /// // prints user.memoized(in: users)
  /// // prints calling user 1
  /// // prints user1 user1
  /// ```
  ///
  /// - Parameter cache: Where results are kept, and calls in flight shared.
  /// - Returns: A function with the same input and output.
  /// - Complexity: O(1) on average per run; a run that calls, or joins a call, also makes one
  ///   cancellation registration on its token.
  public func memoized(in cache: ResultCache<Input, Output>) -> AsyncFunc {
    sharing(by: { $0 }, in: cache.table, call: "memoized(in: \(cache.callName))")
  }
}

extension AsyncFunc {
  /// Runs get the result kept in `cache` for their input's key: ``memoized(in:)`` for inputs
  /// that are not themselves the key.
  ///
  /// A run that calls passes its own input; the result is kept under its key.
  ///
  /// ```swift
  /// struct Request: Sendable { let user: Int; let verbose: Bool }
  /// let users = ResultCache<Int, String>(name: "users")
  /// let user = AsyncFunc<Request, String>.sync(name: "user") { "user\($0.user)" }
  ///   .memoized(in: users, by: \.user)
  /// print(user)
  /// print(try await user(Request(user: 3, verbose: true)), users.value(for: 3) ?? "none")
  /// // prints user.memoized(in: users, by: { … })
  /// // prints user3 user3
  /// ```
  ///
  /// - Parameters:
  ///   - cache: Where results are kept, and calls in flight shared.
  ///   - key: The key of an input.
  /// - Returns: A function with the same input and output.
  /// - Complexity: O(1) on average per run, as ``memoized(in:)``.
  public func memoized<Key: Hashable & Sendable>(
    in cache: ResultCache<Key, Output>, by key: @escaping @Sendable (Input) -> Key
  ) -> AsyncFunc {
    sharing(by: key, in: cache.table, call: "memoized(in: \(cache.callName), by: { … })")
  }
}
