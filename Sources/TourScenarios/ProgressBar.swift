import AsyncCombinators

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Shows a batch's ``BatchProgress`` as it runs: one line redrawn in place on a terminal, a few
/// plain lines (at the start and each quarter) anywhere else, such as a log file or a CI console.
///
/// Feed it from a fold's `progress:` closure; those calls never overlap, which is what lets it
/// keep its last drawing in a plain `var` behind no lock of its own.
public final class ProgressBar: @unchecked Sendable {
  // `@unchecked Sendable`: `lastDrawn` is touched only by `update`, whose calls the fold
  // serializes (never two at once, each one's effects visible to the next).
  private let label: String
  private let isTerminal: Bool
  private let width: Int
  private let write: @Sendable (String) -> Void
  private var lastDrawn: Int = -1

  /// Creates a bar that writes through `write`.
  ///
  /// - Parameters:
  ///   - label: What the batch is, shown before the bar.
  ///   - isTerminal: Whether to redraw one line with carriage returns.
  ///   - width: The bar's cells.
  ///   - write: Receives text exactly as it should appear, newlines included.
  public init(
    label: String, isTerminal: Bool, width: Int = 30,
    write: @escaping @Sendable (String) -> Void
  ) {
    self.label = label
    self.isTerminal = isTerminal
    self.width = width
    self.write = write
  }

  /// A bar on standard output, redrawn in place when standard output is a terminal.
  public static func standardOutput(label: String) -> ProgressBar {
    ProgressBar(label: label, isTerminal: isatty(STDOUT_FILENO) != 0) { text in
      writeToStandardOutput(text)
    }
  }

  /// Draws `progress` if it moved the bar: on a terminal at every whole percent, elsewhere at
  /// every quarter; the last element always ends the line.
  public func update(_ progress: BatchProgress) {
    guard let total = progress.total, total > 0 else { return }
    let steps = isTerminal ? 100 : 4
    let step = progress.completed * steps / total
    guard step != lastDrawn else { return }
    lastDrawn = step
    let line = render(progress, total: total)
    if isTerminal {
      write("\r" + line + (progress.completed == total ? "\n" : ""))
    } else {
      write(line + "\n")
    }
  }

  /// `uploads [###########.......] 1200/2400  41 failed  8 in flight`.
  func render(_ progress: BatchProgress, total: Int) -> String {
    let filled = progress.completed * width / total
    let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
    return
      "\(label) [\(bar)] \(progress.completed)/\(total)  \(progress.failed) failed  "
      + "\(progress.inFlight) in flight"
  }
}

/// Writes `text` now, after whatever `print` has buffered, so that the bar shows as it moves.
private func writeToStandardOutput(_ text: String) {
  fflush(nil)
  let bytes = Array(text.utf8)
  var offset = 0
  while offset < bytes.count {
    let written = bytes.withUnsafeBytes {
      write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset)
    }
    guard written > 0 else { return }
    offset += written
  }
}
