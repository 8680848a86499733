// The unsafe code of the interpreter, the trampoline and the timelines, in one place, each
// piece with the argument that makes it safe. The rest of the library calls the safe
// interfaces below. (The cancellation token's unsafe references are in TaggedReference.swift,
// and the joins' write-once slots in WriteOnceSlots.swift, each with its own argument.)
// Tests/AsyncCombinatorsTests/Internal/UnsafeTests.swift exercises each piece, the
// thread-local slot from many threads at once, which ThreadSanitizer checks in CI.
//
// Why the unsafe form rather than a safe one: Performance.md, "What the code's shape buys,
// and the check that holds it".

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `value` as a `Target`, when `Value` is `Target`; `nil` otherwise.
///
/// Safe: the cast reinterprets a value only as its own type, which the comparison of type
/// metadata has just established, so the bits, size and reference counts it hands over are
/// those of a `Target`. Unlike `as?`, it never looks inside the value: an existential
/// `Value`, or a subclass instance in a `Value` that is its superclass, is not `Target`
/// here even when the value inside it is.
@inlinable
package func castExactly<Value, Target>(_ value: Value, to _: Target.Type) -> Target? {
  guard Value.self == Target.self else { return nil }
  return unsafeBitCast(value, to: Target.self)
}

/// Takes a value back out of its erased form.
///
/// The interpreter only ever hands a stage the output of the stage before it, so the dynamic
/// type is `Value` by construction, and opening the existential finds it without the general
/// cast (Performance.md says why). Safe: the bit cast happens only once the two types are
/// compared equal, so it reinterprets a value as its own type. The one exception is a `Value`
/// that is itself an existential, such as the `any Error` a `recover(with:)` fallback takes:
/// boxing opens it to the concrete type inside, so that case takes the checked cast. The
/// result is returned directly, not through an optional, which an unspecialized opening
/// would have to build and take apart.
@inlinable
package func unbox<Value>(_ value: AnyValue, as _: Value.Type = Value.self) -> Value {
  func open<Contained>(_ contained: Contained) -> Value {
    guard Contained.self == Value.self else { return contained as! Value }
    return unsafeBitCast(contained, to: Value.self)
  }
  return open(value)
}

/// A slot of each thread that holds a strong reference to an object, or nothing.
///
/// Safe: the slot owns one retain of the object it holds, taken when it is stored and given
/// back when another value replaces it or its thread exits (the key's destructor). Only the
/// thread a slot belongs to reads or writes it, so nothing else can release the object
/// between the read of the pointer and the retain that `value`'s caller receives. The
/// key is never deleted: a slot lives as long as the process.
struct ThreadLocalReference<Object: AnyObject>: Sendable {
  private let key: pthread_key_t

  init() {
    var key = pthread_key_t()
    let created = pthread_key_create(&key) { held in
      // Unmanaged's `release` of the stored retain, whatever the object's class.
      Unmanaged<AnyObject>.fromOpaque((held as UnsafeMutableRawPointer?)!).release()
    }
    precondition(created == 0, "pthread_key_create failed: the process has no key left")
    self.key = key
  }

  /// The object this thread's slot holds.
  var value: Object? {
    get {
      pthread_getspecific(key).map { Unmanaged<Object>.fromOpaque($0).takeUnretainedValue() }
    }
    nonmutating set {
      let old = pthread_getspecific(key)
      pthread_setspecific(key, newValue.map { Unmanaged.passRetained($0).toOpaque() })
      if let old { Unmanaged<Object>.fromOpaque(old).release() }
    }
  }
}

/// libdispatch's `dispatch_queue_get_label`, which the Swift `Dispatch` module does not
/// expose off Apple platforms: looked up by name in the process, where `Dispatch` has loaded
/// it, rather than through the toolchain's internal C module. `nil` if it is not found.
///
/// Safe: the type the symbol is cast to spells libdispatch's declaration,
/// `const char *dispatch_queue_get_label(dispatch_queue_t)`, a stable part of its C interface;
/// a queue is a pointer, passed here as `nil`, which asks for the current queue's label.
let dispatchQueueGetLabel: (@convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?)? = {
  guard let process = dlopen(nil, RTLD_NOW),
    let symbol = dlsym(process, "dispatch_queue_get_label")
  else { return nil }
  return unsafeBitCast(
    symbol, to: (@convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?).self)
}()
