// The frozen inputs' digests: what training must never change.
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "train.h"

// SHA-256 of every buffer training must never touch: E and, per record,
// H and xhat, the bf16 x̂ (that replaced both, or beside them), qvhat,
// ctxhat and lex.
// hashes: NULL to count only.
int cli_frozen_hashes(const clef_package *p, char **hashes)
{
    int n = 0;
    const size_t d = (size_t)p->cfg.d;
#define HASH(buf, cnt)                                                         \
    do {                                                                       \
        if (hashes)                                                            \
            clef_sha256_hex((buf), (cnt) * sizeof(*(buf)), hashes[n]);         \
        n++;                                                                   \
    } while (0)
    HASH(p->E, (size_t)p->V * d);
    for (int i = 0; i < p->nrecords; i++) {
        const clef_record *r = &p->records[i];
        if (r->xhat16) // bf16 x̂ alone, or beside the float x̂
            HASH(r->xhat16, (size_t)r->T * d);
        if (r->xhat) {
            HASH(r->H, (size_t)r->T * d);
            HASH(r->xhat, (size_t)r->T * d);
        }
        HASH(r->qvhat, (size_t)r->Q * d);
        HASH(r->ctxhat, (size_t)r->O * d);
        HASH(r->lex, (size_t)r->O * d);
    }
#undef HASH
    return n;
}

char **cli_alloc_hashes(int n)
{
    char **h = calloc((size_t)n, sizeof(char *));
    if (!h)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!(h[i] = malloc(CLEF_SHA256_HEX)))
            return NULL;
    return h;
}

void cli_free_hashes(char **h, int n)
{
    for (int i = 0; h && i < n; i++)
        free(h[i]);
    free(h);
}

int cli_frozen_same(const clef_package *p, char **ref, int n)
{
    char **now = cli_alloc_hashes(n);
    if (!now)
        return 0;
    int same = cli_frozen_hashes(p, now) == n;
    for (int i = 0; same && i < n; i++)
        same = !strcmp(now[i], ref[i]);
    cli_free_hashes(now, n);
    return same;
}
