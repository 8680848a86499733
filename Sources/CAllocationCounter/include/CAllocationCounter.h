#ifndef C_ALLOCATION_COUNTER_H
#define C_ALLOCATION_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

/// Whether this platform counts allocations. On Linux the executable that links this target
/// defines malloc and its kin, which every library of the process then calls; elsewhere the
/// functions below count nothing.
bool ac_counting_available(void);

/// Heap allocations since the process started: calls of malloc, calloc, realloc,
/// posix_memalign, aligned_alloc and memalign.
int64_t ac_allocations(void);

/// Calls of free with a pointer other than NULL since the process started.
int64_t ac_frees(void);

/// Blocks allocated and not freed since the process started: what it holds on the heap, in
/// blocks. A realloc that moves a block leaves it unchanged.
int64_t ac_live_blocks(void);

#endif
