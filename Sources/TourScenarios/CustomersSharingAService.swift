import AsyncCombinators

/// A search service on the fake network: each request takes 20 ms. Its stage is named after
/// the customer, so the timeline shows each customer's requests on a row of their own.
private func search(for customer: String) -> AsyncFunc<String, String> {
  FakeNetwork.stage(customer, milliseconds: 20) { (query: String) in "\(customer): \(query)" }
}

extension Tour {
  /// Two customers sharing one service under a limit per customer and a limit for all.
  public static let customersSharingAService = Scenario(
    title: "two customers sharing a service",
    story: """
      Each customer may have one request in flight, and the service takes two at most. A \
      KeyedLimiter makes each customer's limiter when their first request comes: \
      Limiter(all: [Limiter(concurrency: 1), everyone]) chains it with one shared limiter of \
      two. Ann and Bob each send three requests, all at once: each customer's requests run one \
      at a time, Ann's beside Bob's, and neither waits for the other. The keyed limiter keeps each \
      customer's limiter until it has been idle for a minute.
      """
  ) {
    let everyone = Limiter(concurrency: 2)
    let perCustomer = KeyedLimiter<String> { _ in
      Limiter(all: [Limiter(concurrency: 1), everyone])
    }
    func requests(of customer: String) -> AsyncFunc<[String], [String]> {
      search(for: customer).limited(by: perCustomer, key: { _ in customer }).concurrentMap()
    }
    let both = requests(of: "ann") <> requests(of: "bob")
    let log = Log()
    var traced = await Traced.run(
      "per customer and in all", both, ["shoes", "hats", "socks"], log: log,
      expecting: [.oneAtATime("ann"), .oneAtATime("bob"), .overlap("ann", "bob")])
    log("customers with a limiter: \(perCustomer.count)")
    traced.log = log.lines
    traced.expectations.append(.logged(["customers with a limiter: 2"]))
    return [traced]
  }
}
