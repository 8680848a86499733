// PromiseKit's `ensure`, which the facade spells otherwise: the error names our spelling.
import AsyncCombinators

func promiseKitEnsure() {
  // expected-error: 'ensure(on:_:)' has been renamed to 'always(on:_:)'
  firstly { 1 }.ensure { print("done") }.error { print($0) }
}
