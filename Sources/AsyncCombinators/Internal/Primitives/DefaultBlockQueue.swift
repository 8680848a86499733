import Dispatch

/// The queue the interpreter's promise-block paths (`BlockChain`, `DefaultQueueHop`) hop to
/// when a block names none. The facade no longer uses them; this goes when they go.
let defaultBlockQueue = DispatchQueue.global()
