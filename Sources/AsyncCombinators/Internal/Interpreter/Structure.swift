/// `String(describing:)` of a function: its structure written with the operators that built it.
extension Program {
  var structure: String { describe(in: .top) }

  private enum Context {
    case top
    case serialElement
    case parallelElement
    case modifierBase
  }

  private func describe(in context: Context) -> String {
    let parts = serialParts().filter {
      if case .hidden = $0.shape { return false }
      return true
    }
    guard parts.count == 1 else {
      if parts.isEmpty { return "identity" }
      let chain = parts.map { $0.describe(in: .serialElement) }.joined(separator: " +> ")
      return context == .top ? chain : "(\(chain))"
    }
    switch parts[0].shape {
    case .stage(let label):
      return label.display
    case .hidden:
      return "identity"
    case .parallel(let branches, .tuple) where branches.count != 2:
      return "parallel(\(branches.map { $0.describe(in: .top) }.joined(separator: ", ")))"
    case .parallel(let branches, .pairOperator), .parallel(let branches, .tuple):
      // Two functions make the same pair either way: `parallel(a, b)` is `a <> b`.
      let text = branches.enumerated().map { index, branch in
        // `<>` is left-associative: a pair on the left needs no parentheses.
        if index == 0, case .parallel(let inner, .pairOperator) = branch.shape, inner.count == 2 {
          return branch.describe(in: .top)
        }
        return branch.describe(in: .parallelElement)
      }.joined(separator: " <> ")
      return context == .top ? text : "(\(text))"
    case .parallel(let branches, .array):
      return "parallel([\(branches.map { $0.describe(in: .top) }.joined(separator: ", "))])"
    case .modified(let inner, let call):
      return "\(inner.describe(in: .modifierBase)).\(call)"
    }
  }

  /// The stages of a serial composition in order, however it was nested. Iterative, so a
  /// chain of 100,000 `+>` describes without deep recursion.
  private func serialParts() -> [Program] {
    var parts: [Program] = []
    var pending = [self]
    while let next = pending.popLast() {
      switch next {
      case .serial(let pair):
        pending.append(pair.second)
        pending.append(pair.first)
      case .sequence(let programs):
        pending.append(contentsOf: programs.reversed())
      case .then(let link):
        // A chain describes each of its links, as the blocks it stands for would.
        pending.append(contentsOf: repeatElement(.hop(link), count: link.hopCount))
        pending.append(link.previous)
      case .hop:
        parts.append(next)  // Hidden unless it is a promise block.
      case .callback, .direct, .modifier:
        parts.append(next)
      }
    }
    return parts
  }
}
