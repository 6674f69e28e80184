// Large zeroed buffers (the head's parameters, gradients and moments, the
// batch workspace). From 8 MiB up they are anonymous mappings: zero pages
// that cost nothing until touched (a workspace sized for the largest batch
// is never touched in full), 2 MiB-aligned and advised MADV_HUGEPAGE so
// that Linux may back them with transparent huge pages (this machine's THP
// mode is "madvise"). The few-row products walk a weight down its rows a
// row (4 KiB or more) apart; with 4 KiB pages nearly every row costs a TLB
// miss. CLEF_HUGE_PAGES=0 keeps the mappings but drops the advice. Smaller
// buffers are ordinary 64-byte-aligned heap memory.
#ifndef CLEF_BIGALLOC_H
#define CLEF_BIGALLOC_H

#include <stddef.h>

// n bytes, zeroed, 64-byte aligned at least; NULL when out of memory.
void *clef_big_calloc(size_t n);
// Frees p (NULL: nothing), which clef_big_calloc(n) returned.
void clef_big_free(void *p, size_t n);

#endif
