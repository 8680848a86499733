/// Stops the program for a misuse of the public API: an argument outside its documented
/// range. Every check of a user's argument goes through here or ``require(_:_:file:line:)``.
///
/// `fatalError` rather than `precondition`: under `-O` a precondition prints no message, and
/// no file or line, while `fatalError` prints all three in every build. `file` and `line` are
/// the caller's, passed down from the public function's defaulted `#fileID`/`#line`
/// parameters, so the message points at the line that made the mistake, not the library's.
/// The message starts with the call as the user wrote it, then says what the rule is.
///
/// `package`, so that AsyncCombinatorsTesting checks its arguments the same way.
///
/// Checks of the library's own invariants, which only a bug in the library can break, stay
/// `precondition`/`assert`: they need no message for users.
package func misuse(
  _ message: @autoclosure () -> String, file: StaticString, line: UInt
) -> Never {
  fatalError("AsyncCombinators misuse: \(message())", file: file, line: line)
}

/// Calls ``misuse(_:file:line:)`` when `condition` is false, in debug and release builds alike.
@inline(__always)
package func require(
  _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString, line: UInt
) {
  if !condition { misuse(message(), file: file, line: line) }
}
