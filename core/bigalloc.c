#define _DEFAULT_SOURCE // MAP_ANONYMOUS, MADV_HUGEPAGE under -std=c11
#include "bigalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
// below this, a huge page would be mostly empty: ordinary memory
#define MAP_MIN ((size_t)8 << 20)

static size_t map_len(size_t n)
{
    return (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
}

// A 2 MiB-aligned anonymous mapping of map_len(n) bytes: map one huge page
// more, then unmap the slack on both sides.
static void *map_aligned(size_t n)
{
    const size_t len = map_len(n), over = len + HUGE_PAGE;
    char *raw = mmap(NULL, over, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) &
                       ~(uintptr_t)(HUGE_PAGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (raw + over > p + len)
        munmap(p + len, (size_t)(raw + over - (p + len)));
    return p;
}

void *clef_big_calloc(size_t n)
{
    if (n > SIZE_MAX - 2 * HUGE_PAGE)
        return NULL;
    if (n < MAP_MIN) {
        const size_t len = n ? (n + 63) / 64 * 64 : 64; // a multiple of 64
        void *p = aligned_alloc(64, len);
        if (p)
            memset(p, 0, len);
        return p;
    }
    void *p = map_aligned(n);
    if (!p)
        return NULL;
#ifdef MADV_HUGEPAGE
    const char *env = getenv("CLEF_HUGE_PAGES"); // "0": no advice (A/B runs)
    if (!(env && !strcmp(env, "0")))
        madvise(p, map_len(n), MADV_HUGEPAGE); // advice: failure is harmless
#endif
    return p;
}

void clef_big_free(void *p, size_t n)
{
    if (!p)
        return;
    if (n < MAP_MIN)
        free(p);
    else
        munmap(p, map_len(n));
}
