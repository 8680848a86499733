import AsyncCombinators
import AsyncCombinatorsTesting
import Testing

@testable import AsyncCombinatorsCore
@testable import AsyncCombinatorsKernel

/// The queue behind the shared timers and `TestClock`, against a sorted array as its model.
@Suite struct DeadlineQueueTests {
  @Test func takes_items_earliest_first_ties_in_scheduling_order_and_never_a_cancelled_one()
    async throws
  {
    try await forAll("DeadlineQueue matches a sorted array", count: 200) { random, _ in
      var queue = DeadlineQueue<Int, Int>()
      // The model: every pending item, in the order it must come out (items are scheduled in
      // increasing order, so ties sort by item).
      var model: [(deadline: Int, id: UInt64, item: Int)] = []
      // Ids of items taken or cancelled: their slots get reused, and the ids must miss.
      var spent: [UInt64] = []
      for step in 0..<Int.random(in: 1...300, using: &random) {
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<5:
          // Few distinct deadlines, so that ties are common.
          let deadline = Int.random(in: 0..<8, using: &random)
          let id = queue.schedule(step, at: deadline)
          model.append((deadline, id, step))
          model.sort { ($0.deadline, $0.item) < ($1.deadline, $1.item) }
        case 5..<7:
          guard let victim = model.indices.randomElement(using: &random) else { continue }
          guard queue.cancel(model[victim].id) != nil else { return false }
          // Cancelling twice finds nothing.
          let id = model.remove(at: victim).id
          guard queue.cancel(id) == nil else { return false }
          spent.append(id)
        case 7:
          // A spent id cancels nothing, though its slot may hold another item now.
          guard let id = spent.randomElement(using: &random) else { continue }
          guard queue.cancel(id) == nil else { return false }
        default:
          let limit = Int.random(in: 0..<8, using: &random)
          while let (deadline, item) = queue.takeFirst(dueBy: limit) {
            guard let expected = model.first, expected.deadline == deadline, expected.item == item
            else { return false }
            spent.append(model.removeFirst().id)
          }
          if let next = model.first, next.deadline <= limit { return false }
        }
        guard queue.count == model.count, queue.nextDeadline() == model.first?.deadline else {
          print("after step \(step): \(queue.count) pending, model \(model)")
          return false
        }
      }
      return true
    }
  }

  @Test func an_id_it_never_made_cancels_nothing() {
    var queue = DeadlineQueue<Int, Int>()
    let id = queue.schedule(1, at: 5)
    // Whatever the bits: a slot past the end, a negative slot, a generation never issued.
    for stranger in [UInt64.max, UInt64(UInt32.max), id + 1, id | (UInt64(7) << 32)] {
      #expect(queue.cancel(stranger) == nil)
    }
    #expect(queue.count == 1)
    #expect(queue.cancel(id) == 1)
  }

  @Test func cancelled_keys_never_outnumber_the_pending_items_for_long() {
    var queue = DeadlineQueue<Int, Int>()
    var ids: [UInt64] = []
    for index in 0..<10_000 { ids.append(queue.schedule(index, at: 1_000_000 - index)) }
    // Cancelled from the middle out, in an order that leaves their keys deep in the heap.
    for id in ids[2_500..<10_000] { _ = queue.cancel(id) }
    #expect(queue.count == 2_500)
    #expect(queue.keysHeld <= 2 * queue.count + 1)
    #expect(queue.nextDeadline() == 1_000_000 - 2_499)
  }
}
