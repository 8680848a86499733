import AsyncCombinatorsKernel

// Every operator and precedence group of the library, in one place.
//
// `<>` binds tighter than `+>`, so `a <> b +> c` reads as `(a <> b) +> c`: run `a` and `b`
// at once, then feed the pair to `c`. Both are left-associative. Both sit below the
// comparison and arithmetic operators and above assignment, so `let f = a <> b +> c` needs no
// parentheses.
//
// Our `<>` is not Haskell's (or swift-prelude's) semigroup append: it runs two functions in
// parallel and pairs their results. A module that also declares `<>` with another precedence
// makes the operator ambiguous; use the named twins (`parallel`, `serial`) there.

/// The precedence of `+>`, serial composition.
precedencegroup SerialCompositionPrecedence {
  associativity: left
  higherThan: AssignmentPrecedence
  lowerThan: TernaryPrecedence
}

/// The precedence of `<>`, parallel composition: tighter than `+>`.
precedencegroup ParallelCompositionPrecedence {
  associativity: left
  higherThan: SerialCompositionPrecedence
  lowerThan: TernaryPrecedence
}

/// Serial composition: run the left function, then the right one on its output.
/// The named twin is `serial(_:_:)` (or the method `then(_:)`).
infix operator +> : SerialCompositionPrecedence

/// Parallel composition: run both functions on the same input at once and pair the results.
/// The named twin is `parallel(a, b)` (``parallel(_:)`` with two functions).
infix operator <> : ParallelCompositionPrecedence
