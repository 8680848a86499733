import Testing
import TourScenarios

@Suite struct DoTheWorkOnceTests {
  @Test func two_hundred_rows_of_forty_users_make_two_batch_calls() async {
    let runs = await Tour.doTheWorkOnce.play()
    #expect(
      runs[0].structure
        == "batched(usersByIDs, maxBatchSize: 20).memoized(in: users).concurrentMap()")
    #expect(runs[0].result == "success(200 rows, first user0)")
    #expect(runs[0].log == ["200 loads, 40 keys, 2 batch calls"])
    #expect(runs[0].timeline.spans.map(\.name) == ["usersByIDs 0…19", "usersByIDs 20…39"])
  }
}
