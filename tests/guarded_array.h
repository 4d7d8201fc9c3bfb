/* Arrays whose first byte past the end faults: each at the very end of an mmap'd region,
 * followed (and preceded) by a PROT_NONE page, so that a write or read one element outside
 * it faults even from code AddressSanitizer does not instrument (a library, OpenBLAS, MPI).
 * For the memory-safety tests of the plan APIs (tests/plan_c_asan_test.cc); C and C++. */
#ifndef MESHTUNE_TESTS_GUARDED_ARRAY_H_
#define MESHTUNE_TESTS_GUARDED_ARRAY_H_

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* `bytes` bytes at `data` (zero-filled), inside the mapping `base` of `length` bytes; a
 * NULL `base` when the array came from malloc. */
typedef struct {
  void* data;
  size_t bytes;
  char* base;
  size_t length;
} GuardedArray;

/* An array of `bytes` bytes ending at a guard page (`guard`), or calloc'd at exactly that
 * size (else, for ASan's redzones). Aborts when the memory cannot be mapped. */
static inline GuardedArray guarded_array(size_t bytes, int guard) {
  GuardedArray a = {NULL, bytes, NULL, 0};
  if (!guard) {
    a.data = calloc(1, bytes); /* exactly `bytes` (perhaps NULL for none) */
    return a;
  }
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t body = (bytes + page - 1) / page * page;
  a.length = body + 2 * page;
  a.base = (char*)mmap(NULL, a.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a.base == MAP_FAILED) {
    perror("mmap");
    abort();
  }
  mprotect(a.base, page, PROT_NONE);
  mprotect(a.base + page + body, page, PROT_NONE);
  a.data = a.base + page + body - bytes; /* its last byte is the guard page's neighbour */
  return a;
}

/* Makes a guarded array's pages read-only (an input the plan may only read). */
static inline void guarded_array_freeze(const GuardedArray* a) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (a->base != NULL && a->length > 2 * page) {
    mprotect(a->base + page, a->length - 2 * page, PROT_READ);
  }
}

static inline void guarded_array_free(GuardedArray* a) {
  if (a->base != NULL) {
    munmap(a->base, a->length);
  } else {
    free(a->data);
  }
  a->data = NULL;
  a->base = NULL;
}

#endif /* MESHTUNE_TESTS_GUARDED_ARRAY_H_ */
