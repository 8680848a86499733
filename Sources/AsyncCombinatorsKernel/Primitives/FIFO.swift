/// A first-in first-out buffer with amortized O(1) `append` and `popFirst`.
///
/// `Array.removeFirst()` moves every remaining element; here a head index walks forward and
/// the consumed prefix is dropped only once it is at least half the storage.
package struct FIFO<Element> {
  private var storage: [Element?] = []
  private var head = 0

  package init() {}

  package var isEmpty: Bool { head == storage.count }

  package mutating func append(_ element: Element) {
    storage.append(element)
  }

  package mutating func popFirst() -> Element? {
    guard head < storage.count else { return nil }
    defer {
      head += 1
      if head == storage.count {
        storage.removeAll(keepingCapacity: true)
        head = 0
      } else if head >= 32 && head * 2 >= storage.count {
        storage.removeFirst(head)
        head = 0
      }
    }
    return storage[head].take()
  }
}

extension FIFO: Sendable where Element: Sendable {}
