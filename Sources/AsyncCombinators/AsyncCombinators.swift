// The one module an app imports: the library's layers, each a target of its own (see
// Architecture.md), brought in together.
@_exported import AsyncCombinatorsCore
@_exported import AsyncCombinatorsKernel
@_exported import AsyncCombinatorsPromise
