/* LD_PRELOAD shim (outside jitterlab): for every calloc of >= 64 KiB, print the buffer's
   address, its offset in its 4 KiB page, its size and, with mincore(2), the ranges of its
   pages that are NOT resident right after calloc returns (page 0 holds the first byte).
   sysjitter's timed loop is the next code to touch its buffer, so each absent page is first
   touched -- and faulted in -- by the loop. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
extern void *__libc_calloc(size_t, size_t);
void *calloc(size_t n, size_t size) {
  void *p = __libc_calloc(n, size);
  size_t bytes = n * size;
  if (p && bytes >= 65536) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)p & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + bytes + page - 1) & ~(uintptr_t)(page - 1);
    size_t pages = (end - first) / page;
    unsigned char *vec = __libc_calloc(pages, 1);
    if (vec && mincore((void *)first, end - first, vec) == 0) {
      fprintf(stderr, "mincore_shim: bytes %zu address %p offset_in_page %lu page_size %ld "
              "pages %zu absent", bytes, p, (unsigned long)((uintptr_t)p - first), page, pages);
      size_t k = 0, n_absent = 0;
      while (k < pages) {
        if (vec[k] & 1) { ++k; continue; }
        size_t start = k;
        while (k < pages && !(vec[k] & 1)) ++k;
        n_absent += k - start;
        fprintf(stderr, " %zu-%zu", start, k - 1);
      }
      fprintf(stderr, " n_absent %zu\n", n_absent);
    }
    free(vec);
  }
  return p;
}
