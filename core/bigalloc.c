#define _DEFAULT_SOURCE // MADV_HUGEPAGE under -std=c11
#include "bigalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
// below this, a huge page would be mostly empty: ordinary memory
#define HUGE_MIN ((size_t)8 << 20)

void *clef_big_calloc(size_t n)
{
    const char *env = getenv("CLEF_HUGE_PAGES"); // "0": no advice (A/B runs)
    const int huge = n >= HUGE_MIN && !(env && !strcmp(env, "0"));
    const size_t align = huge ? HUGE_PAGE : 64;
    if (n > SIZE_MAX - align)
        return NULL;
    const size_t len = (n + align - 1) / align * align; // aligned_alloc: a multiple
    void *p = aligned_alloc(align, len ? len : align);
    if (!p)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (huge)
        madvise(p, len, MADV_HUGEPAGE); // advice only: its failure is harmless
#endif
    memset(p, 0, len);
    return p;
}
