// A type error inside a block of a chain. With the pair's types inferred from literals,
// Swift 6.3 still answers "failed to produce diagnostic for expression; please submit a bug
// report": the compiler's bug, kept here as an expected failure (XFAIL) so that CI notices
// the day it is fixed. The same mistake on a promise whose type is known gets the real
// message: see WhenPairTypeErrorTyped.swift.
import AsyncCombinators

func addsAStringToAnInt() -> CancellationToken {
  // xfail: failed to produce diagnostic
  // expected-error: binary operator '+' cannot be applied to operands of type 'Int' and 'String'
  when(firstly { 1 }, firstly { "a" }).then { n, s in n + s }.error { _ in }
}
