// A type error inside a block of a chain whose value's type is known.
import AsyncCombinators

func addsAStringToAnInt(_ profile: Promise<Int>, _ name: Promise<String>) -> CancellationToken {
  // expected-error: binary operator '+' cannot be applied to operands of type 'Int' and 'String'
  when(profile, name).then { n, s in n + s }.error { _ in }
}
