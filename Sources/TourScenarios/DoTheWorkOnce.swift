import AsyncCombinators
import Synchronization

/// A screen of rows that each ask for their user, and a backend with a batch endpoint.
enum UserScreen {
  static let rows = 200
  static let users = 40
  static let maxBatchSize = 20

  /// What the backend was asked: one entry per batch call, with its ids.
  final class Calls: Sendable {
    private let batches = Mutex<[[Int]]>([])

    func record(_ ids: [Int]) { batches.withLock { $0.append(ids) } }
    var all: [[Int]] { batches.withLock { $0 } }
  }

  /// The batch endpoint: one 30 ms call for many ids, each call drawn on `timeline` under the
  /// range of ids it asked for.
  static func usersByIDs(_ calls: Calls, _ timeline: Timeline) -> AsyncFunc<[Int], [String]> {
    AsyncFunc(name: "usersByIDs") { ids, token, complete in
      calls.record(ids)
      let name = "usersByIDs \(ids.first!)…\(ids.last!)"
      let call = FakeNetwork.stage(name, milliseconds: 30) { (ids: [Int]) in
        ids.map { "user\($0)" }
      }
      let inner = call.run(ids, observer: timeline, completion: complete)
      token.onCancel { inner.cancel() }
    }
  }
}

extension Tour {
  /// 200 rows asking for 40 users: `batched` collects the loads into batch calls, and
  /// `memoized` asks once per user.
  public static let doTheWorkOnce = Scenario(
    title: "do the work once",
    story: """
      A screen of 200 rows, each asking for its row's user: 40 distinct users. The batched \
      loader collects the loads made before its block runs on the network queue into batch \
      calls of at most 20 ids, and memoized(in:) lets the rows of one user share one load and \
      keeps the result. 200 loads become 2 batch calls, sent at once.
      """
  ) {
    let calls = UserScreen.Calls()
    let timeline = Timeline()
    let users = ResultCache<Int, String>(name: "users")
    let user = AsyncFunc<Int, String>.batched(
      UserScreen.usersByIDs(calls, timeline), maxBatchSize: UserScreen.maxBatchSize,
      on: FakeNetwork.queue
    ).memoized(in: users)
    let screen = user.concurrentMap()
    let rows = (0..<UserScreen.rows).map { $0 % UserScreen.users }
    let result = await withCheckedContinuation { continuation in
      // Started on the network queue, where the batch's block runs next: every row's load is
      // made before it.
      FakeNetwork.queue.async { screen.run(rows) { continuation.resume(returning: $0) } }
    }
    let printed: String
    switch result {
    case .success(let names): printed = "success(\(names.count) rows, first \(names[0]))"
    case .failure(let error): printed = "failure(\(error))"
    }
    let batches = calls.all
    let keys = batches.reduce(0) { $0 + $1.count }
    let summary = "\(rows.count) loads, \(keys) keys, \(batches.count) batch calls"
    return [
      Traced(
        label: "screen", structure: String(describing: screen), result: printed,
        timeline: timeline, log: [summary],
        expectations: [
          .logged(["200 loads, 40 keys, 2 batch calls"]),
          .overlap("usersByIDs 0…19", "usersByIDs 20…39"),
        ])
    ]
  }
}
