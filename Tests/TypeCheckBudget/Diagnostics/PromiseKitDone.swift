// PromiseKit's `done`, which the facade spells otherwise: the error names our spelling.
import AsyncCombinators

func promiseKitDone() {
  // expected-error: 'done(on:_:)' has been renamed to 'then(on:_:)'
  firstly { 1 }.done { print($0) }
}
