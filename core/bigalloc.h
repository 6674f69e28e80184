// Large zeroed buffers (the head's parameters, gradients and moments, the
// batch workspace) on 2 MiB-aligned memory that Linux may back with
// transparent huge pages (madvise(MADV_HUGEPAGE): this machine's THP mode is
// "madvise"). The few-row products walk a weight down its rows a row (a
// 4 KiB page or more) apart; with 4 KiB pages nearly every row costs a TLB
// miss. Small buffers get ordinary 64-byte-aligned memory, and so does
// everything when CLEF_HUGE_PAGES=0. Free with free().
#ifndef CLEF_BIGALLOC_H
#define CLEF_BIGALLOC_H

#include <stddef.h>

// n bytes, zeroed; NULL when out of memory.
void *clef_big_calloc(size_t n);

#endif
