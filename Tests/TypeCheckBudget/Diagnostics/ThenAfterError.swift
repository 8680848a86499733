// error ends a chain: it starts the run and returns its token, so nothing can follow it.
import AsyncCombinators

func continuesAfterError() {
  // expected-error: value of type 'CancellationToken' has no member 'then'
  _ = firstly { 1 }.error { _ in }.then { _ in 2 }
}
