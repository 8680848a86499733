// PromiseKit's `catch`, which the facade spells otherwise: the error names our spelling.
import AsyncCombinators

func promiseKitCatch() {
  // expected-error: 'catch(on:_:)' has been renamed to 'error(on:_:)'
  firstly { 1 }.catch { print($0) }
}
