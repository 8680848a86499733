import AsyncCombinatorsKernel

// Foundation's error reporting, kept out of the core file so that the library itself needs
// no Foundation: only this conformance does, where Foundation exists.
#if canImport(FoundationEssentials)
  import FoundationEssentials
#elseif canImport(Foundation)
  import Foundation
#endif

#if canImport(FoundationEssentials) || canImport(Foundation)
  extension ContractViolation: LocalizedError {
    /// What `localizedDescription` shows: the one-line ``ContractViolation/description`` (the
    /// function, where it was made, what it broke), rather than Foundation's "The operation could
    /// not be completed" with a type name and a number.
    public var errorDescription: String? { description }
  }
#endif
