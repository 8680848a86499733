// Counts the process's heap allocations, for the allocation check (Sources/AllocationChecks).
//
// On Linux this file defines malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign
// and free in the executable. The dynamic linker binds every library's calls of them to the
// executable's definitions, which count each call and forward it to the C library's function,
// found once with dlsym(RTLD_NEXT, ...). dlsym may itself allocate (glibc keeps its error
// state in memory from calloc); while a thread looks the functions up, its allocations come
// from a small static arena that is never given back, and free ignores pointers into it.
// On other platforms, and under a sanitizer, the functions of the header count nothing and
// the check is skipped.

#include "CAllocationCounter.h"

// A sanitizer's runtime replaces malloc itself: under one, the check counts nothing.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define AC_SANITIZED 1
#endif
#endif

#if defined(__linux__) && !defined(AC_SANITIZED)

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

typedef void *(*malloc_function)(size_t);
typedef void *(*calloc_function)(size_t, size_t);
typedef void *(*realloc_function)(void *, size_t);
typedef int (*posix_memalign_function)(void **, size_t, size_t);
typedef void *(*aligned_alloc_function)(size_t, size_t);
typedef void (*free_function)(void *);

static _Atomic(malloc_function) real_malloc;
static _Atomic(calloc_function) real_calloc;
static _Atomic(realloc_function) real_realloc;
static _Atomic(posix_memalign_function) real_posix_memalign;
static _Atomic(aligned_alloc_function) real_aligned_alloc;
static _Atomic(aligned_alloc_function) real_memalign;
static _Atomic(free_function) real_free;

static _Atomic int64_t allocations;
static _Atomic int64_t frees;
// Blocks allocated and not yet freed: a realloc that moves a block changes nothing here.
static _Atomic int64_t live;

// What dlsym allocates while a thread looks the functions up.
#define ARENA_SIZE 8192
static _Alignas(64) unsigned char arena[ARENA_SIZE];
static _Atomic size_t arena_used;
static __thread int resolving;

static void *arena_allocate(size_t size) {
  size_t rounded = (size + 15) & ~(size_t)15;
  size_t start = atomic_fetch_add(&arena_used, rounded);
  if (start + rounded > ARENA_SIZE) {
    return NULL;
  }
  // The arena is zero-filled static memory, used once: calloc's contract holds too.
  return arena + start;
}

static int in_arena(const void *pointer) {
  const unsigned char *p = pointer;
  return p >= arena && p < arena + ARENA_SIZE;
}

static void resolve(void) {
  resolving = 1;
  atomic_store(&real_malloc, (malloc_function)dlsym(RTLD_NEXT, "malloc"));
  atomic_store(&real_calloc, (calloc_function)dlsym(RTLD_NEXT, "calloc"));
  atomic_store(&real_realloc, (realloc_function)dlsym(RTLD_NEXT, "realloc"));
  atomic_store(&real_posix_memalign, (posix_memalign_function)dlsym(RTLD_NEXT, "posix_memalign"));
  atomic_store(&real_aligned_alloc, (aligned_alloc_function)dlsym(RTLD_NEXT, "aligned_alloc"));
  atomic_store(&real_memalign, (aligned_alloc_function)dlsym(RTLD_NEXT, "memalign"));
  // Last: the other functions test `real_free` to know that the lookup is over.
  atomic_store(&real_free, (free_function)dlsym(RTLD_NEXT, "free"));
  resolving = 0;
}

// Whether the caller must serve itself from the arena: the lookup is under way on this thread.
static int ready(void) {
  if (atomic_load_explicit(&real_free, memory_order_acquire) != NULL) {
    return 1;
  }
  if (resolving) {
    return 0;
  }
  resolve();
  return 1;
}

static void counted(void) {
  atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
}

void *malloc(size_t size) {
  if (!ready()) {
    return arena_allocate(size);
  }
  counted();
  return atomic_load_explicit(&real_malloc, memory_order_relaxed)(size);
}

void *calloc(size_t count, size_t size) {
  if (!ready()) {
    if (size != 0 && count > SIZE_MAX / size) {
      return NULL;
    }
    return arena_allocate(count * size);
  }
  counted();
  return atomic_load_explicit(&real_calloc, memory_order_relaxed)(count, size);
}

void *realloc(void *pointer, size_t size) {
  if (!ready()) {
    return arena_allocate(size);
  }
  atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
  if (pointer == NULL || in_arena(pointer)) {
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);  // A new block.
  }
  if (pointer != NULL && in_arena(pointer)) {
    // Moved out of the arena; its old size is unknown, so copy what the arena can hold.
    void *moved = atomic_load_explicit(&real_malloc, memory_order_relaxed)(size);
    size_t available = (size_t)(arena + ARENA_SIZE - (unsigned char *)pointer);
    if (moved != NULL) {
      memcpy(moved, pointer, size < available ? size : available);
    }
    return moved;
  }
  void *moved = atomic_load_explicit(&real_realloc, memory_order_relaxed)(pointer, size);
  if (pointer != NULL && size == 0 && moved == NULL) {
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);  // glibc freed the block.
  }
  return moved;
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  if (!ready()) {
    return ENOMEM;
  }
  counted();
  return atomic_load_explicit(&real_posix_memalign, memory_order_relaxed)(out, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
  if (!ready()) {
    return NULL;
  }
  counted();
  return atomic_load_explicit(&real_aligned_alloc, memory_order_relaxed)(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
  if (!ready()) {
    return NULL;
  }
  counted();
  return atomic_load_explicit(&real_memalign, memory_order_relaxed)(alignment, size);
}

void free(void *pointer) {
  if (pointer == NULL || in_arena(pointer)) {
    return;
  }
  if (!ready()) {
    return;  // Freed during the lookup, by dlsym: kept, as the arena's memory is.
  }
  atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
  atomic_load_explicit(&real_free, memory_order_relaxed)(pointer);
}

bool ac_counting_available(void) { return true; }

int64_t ac_allocations(void) { return atomic_load(&allocations); }

int64_t ac_frees(void) { return atomic_load(&frees); }

int64_t ac_live_blocks(void) { return atomic_load(&live); }

#else

bool ac_counting_available(void) { return false; }

int64_t ac_allocations(void) { return 0; }

int64_t ac_frees(void) { return 0; }

int64_t ac_live_blocks(void) { return 0; }

#endif
