import Synchronization

// The cancellation token's unsafe references, in one place. Its state word packs two flags
// and a reference to its handler table into one atomic word, so that a first registration, a
// cancellation and a detach each read and change all of it in one atomic step and never miss
// one another; and each token refers to the root of its tree without retaining it, since the
// root is shared by every token of a run and a retain per child would be one more write to a
// line every thread touches.
//
// Safety, once for the whole file:
//
// - `AtomicTaggedReference` holds a +1 reference to its object from the compare-exchange that
//   stores it until its own `deinit`, and never replaces or clears it in between. So an
//   address read from the word names an object alive for as long as the word is, and
//   `object(in:)` may turn it back into a reference for any holder of the word. Objects are
//   at least word-aligned, so the low bits of their address are free for the flags.
// - `UnownedReference` is unchecked: its holder promises that something else keeps the object
//   alive for as long as the holder lives (for a token: the chain of parents that every token
//   holds, which ends at the root).

/// An atomic word with flag bits and, once set, a strong reference to one object, which stays
/// until the word goes.
///
/// Store it as a `let` of a class. Every operation is one atomic load, `or`, or compare-exchange
/// with acquiring-and-releasing ordering.
struct AtomicTaggedReference<Object: AnyObject & Sendable>: ~Copyable, Sendable {
  /// The bits an address leaves free for flags.
  static var flagBits: UInt { 3 }

  /// One reading of the word: its flags, and whether it holds the object.
  struct Value {
    fileprivate let bits: UInt

    /// The flags set so far.
    var flags: UInt { bits & AtomicTaggedReference.flagBits }

    /// Whether the object has been stored.
    var hasObject: Bool { bits & ~AtomicTaggedReference.flagBits != 0 }
  }

  private let word = Atomic<UInt>(0)

  init() {}

  deinit {
    let bits = word.load(ordering: .acquiring)
    if let address = UnsafeRawPointer(bitPattern: bits & ~Self.flagBits) {
      Unmanaged<Object>.fromOpaque(address).release()
    }
  }

  /// The word now.
  func load() -> Value { Value(bits: word.load(ordering: .acquiring)) }

  /// The object a reading of this word holds, if any.
  func object(in value: Value) -> Object? {
    guard let address = UnsafeRawPointer(bitPattern: value.bits & ~Self.flagBits) else {
      return nil
    }
    return Unmanaged<Object>.fromOpaque(address).takeUnretainedValue()
  }

  /// The object held now, if any.
  func loadObject() -> Object? { object(in: load()) }

  /// Sets `flags` (within ``flagBits``); returns the word as it was before.
  @discardableResult
  func setFlags(_ flags: UInt) -> Value {
    Value(
      bits: word.bitwiseOr(flags & Self.flagBits, ordering: .acquiringAndReleasing).oldValue)
  }

  /// The object, stored now from `make` if there is none yet, as long as `allowed` holds for
  /// the word; `nil` once it does not. `make` may run more than once when other threads
  /// change the word meanwhile; every object but the one stored is let go.
  func objectStoringOne(
    while allowed: (Value) -> Bool, making make: (Value) -> Object
  ) -> Object? {
    var current = load()
    while true {
      if !allowed(current) { return nil }
      if let object = object(in: current) { return object }
      let made = Unmanaged.passRetained(make(current))
      let address = UInt(bitPattern: made.toOpaque())
      let (exchanged, original) = word.compareExchange(
        expected: current.bits, desired: current.bits | address,
        ordering: .acquiringAndReleasing)
      if exchanged { return made.takeUnretainedValue() }
      made.release()  // Another thread stored one, or the flags changed: look again.
      current = Value(bits: original)
    }
  }
}

/// A reference that neither retains its object nor checks that it is alive: its holder
/// promises that something else keeps the object alive for as long as the holder lives.
struct UnownedReference<Object: AnyObject>: @unchecked Sendable {
  unowned(unsafe) let object: Object

  init(_ object: Object) { self.object = object }
}
