/// `String(describing:)` of a function: its structure written with the operators that built it.
///
/// Written with an explicit stack of what is left to write, so that 100,000 nested `+>` or
/// `<>` describe without deep recursion.
extension Program {
  package var structure: String {
    var text = ""
    var pending: [Piece] = [.program(self, .top)]
    while let piece = pending.popLast() {
      switch piece {
      case .text(let part): text += part
      case .program(let program, let context): program.describe(in: context, into: &pending)
      }
    }
    return text
  }

  fileprivate enum Context {
    case top
    case serialElement
    case parallelElement
    case modifierBase
  }

  /// What is left to write: text as it is, or a program in its context.
  fileprivate enum Piece {
    case text(String)
    case program(Program, Context)
  }

  /// Pushes what describes this program, last piece first, onto `pending`.
  private func describe(in context: Context, into pending: inout [Piece]) {
    let parts = serialParts().filter {
      if case .hidden = $0.shape { return false }
      return true
    }
    guard parts.count == 1 else {
      if parts.isEmpty { return pending.append(.text("identity")) }
      let wrapped = context != .top
      pending.push(
        parts.map { .program($0, .serialElement) }, separator: " +> ",
        open: wrapped ? "(" : "", close: wrapped ? ")" : "")
      return
    }
    switch parts[0].shape {
    case .stage(let label):
      pending.append(.text(label.display))
    case .hidden:
      pending.append(.text("identity"))
    case .parallel(let branches, .tuple) where branches.programs.count != 2:
      pending.push(
        branches.programs.map { .program($0, .top) }, separator: ", ", open: "parallel(",
        close: ")")
    case .parallel(let branches, .pairOperator), .parallel(let branches, .tuple):
      // Two functions make the same pair either way: `parallel(a, b)` is `a <> b`.
      let items = branches.programs.enumerated().map { index, branch -> Piece in
        // `<>` is left-associative: a pair on the left needs no parentheses.
        if index == 0, case .parallel(let inner, .pairOperator) = branch.shape,
          inner.programs.count == 2
        {
          return .program(branch, .top)
        }
        return .program(branch, .parallelElement)
      }
      let wrapped = context != .top
      pending.push(items, separator: " <> ", open: wrapped ? "(" : "", close: wrapped ? ")" : "")
    case .parallel(let branches, .array):
      pending.push(
        branches.programs.map { .program($0, .top) }, separator: ", ", open: "parallel([",
        close: "])")
    case .modified(let inner, let call):
      pending.append(.text(".\(call)"))
      pending.append(.program(inner, .modifierBase))
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
      case .callback, .direct, .hop, .modifier:
        parts.append(next)
      }
    }
    return parts
  }
}

extension [Program.Piece] {
  /// Pushes `open`, the items with `separator` between them, then `close`, so that they pop
  /// in that order.
  fileprivate mutating func push(
    _ items: [Program.Piece], separator: String, open: String, close: String
  ) {
    if !close.isEmpty { append(.text(close)) }
    for (index, item) in items.enumerated().reversed() {
      append(item)
      if index > 0 { append(.text(separator)) }
    }
    if !open.isEmpty { append(.text(open)) }
  }
}
