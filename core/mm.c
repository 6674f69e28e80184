// Matrix products in fp32 or bf16 (mm.h).
#include "mm.h"
#include "par.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int clef_precision_parse(const char *name)
{
    if (!strcmp(name, "fp32"))
        return CLEF_PRECISION_FP32;
    if (!strcmp(name, "bf16"))
        return CLEF_PRECISION_BF16;
    return -1;
}

const char *clef_precision_name(int precision)
{
    return precision == CLEF_PRECISION_BF16 ? "bf16" : "fp32";
}

int clef_mm_init(struct clef_mm *mm, const clef_head *hd)
{
    memset(mm, 0, sizeof(*mm));
    mm->pbase = hd->params;
    mm->pn = hd->nparams;
    mm->pbf = malloc(sizeof(uint16_t) * (hd->nparams ? hd->nparams : 1));
    return mm->pbf ? 0 : -1;
}

void clef_mm_free(struct clef_mm *mm)
{
    free(mm->pbf);
    for (int t = 0; t < CLEF_MM_SLOTS; t++)
        for (int i = 0; i < 2; i++)
            free(mm->scr[t][i].p);
    memset(mm, 0, sizeof(*mm));
}

int clef_mm_table(const clef_kernels *k, struct clef_mm *mm, clef_kernels *out)
{
    if (!k->gemm_bf16_nt || !k->gemm_bf16_nn || !k->gemm_bf16_tn ||
        !k->cvt_f32_bf16)
        return -1;
    *out = *k;
    out->mm = mm;
    out->prepack = NULL; // the packed operands are float32 panels
    return 0;
}

// Mirror chunks: fixed, so the split never changes a bit (elementwise).
#define MIRROR_CHUNK ((size_t)1 << 16)

void clef_mm_refresh(const clef_kernels *k)
{
    struct clef_mm *mm = k->mm;
    if (!mm)
        return;
    const size_t n = mm->pn, nc = (n + MIRROR_CHUNK - 1) / MIRROR_CHUNK;
    CLEF_PAR_FOR(nc > 2, size_t, c, nc,
        const size_t i0 = c * MIRROR_CHUNK;
        k->cvt_f32_bf16(n - i0 < MIRROR_CHUNK ? n - i0 : MIRROR_CHUNK,
                        mm->pbase + i0, mm->pbf + i0);
    );
}

// X (rows, cols) with row stride ldx as a bf16 operand: its place in the
// parameters' mirror (same stride), or a contiguous copy (*ld = cols) in
// scratch slot (this thread, which). Running out of memory here has no
// way back into the pass: it stops the process with a message.
static const uint16_t *operand(const clef_kernels *k, int which, int rows,
                               int cols, const float *X, int ldx, int *ld)
{
    struct clef_mm *mm = k->mm;
    if (X >= mm->pbase && X < mm->pbase + mm->pn) {
        *ld = ldx;
        return mm->pbf + (X - mm->pbase);
    }
    const int t = omp_get_thread_num();
    if (t >= CLEF_MM_SLOTS) {
        fprintf(stderr, "clef: bf16 products on thread %d: at most %d\n", t,
                CLEF_MM_SLOTS);
        abort();
    }
    clef_mm_buf *b = &mm->scr[t][which];
    const size_t n = (size_t)rows * cols;
    *ld = cols > 0 ? cols : 1;
    if (n == 0) // nothing is read
        return mm->pbf;
    if (b->cap < n) {
        uint16_t *p = realloc(b->p, sizeof(uint16_t) * n);
        if (!p) {
            fprintf(stderr,
                    "clef: out of memory for a bf16 operand of "
                    "%zu elements\n",
                    n);
            abort();
        }
        b->p = p, b->cap = n;
    }
    if (ldx == cols)
        k->cvt_f32_bf16(n, X, b->p);
    else
        for (int r = 0; r < rows; r++)
            k->cvt_f32_bf16((size_t)cols, X + (size_t)r * ldx,
                            b->p + (size_t)r * cols);
    return b->p;
}

// The three forms share one body: op(A) is (M, K) stored (ar, ac), op(B)
// (K, N) stored (br, bc), as kernels.h lays them out.
enum { NT, NN, TN };

static void mm(const clef_kernels *k, int form, int M, int N, int K,
               const float *A, int lda, const float *B, int ldb, float *C,
               int ldc, int acc)
{
    if (!k->mm) {
        const clef_gemm_fn f32 = form == NT   ? k->gemm_nt
                                 : form == NN ? k->gemm_nn
                                              : k->gemm_tn;
        f32(M, N, K, A, lda, B, ldb, C, ldc, acc);
        return;
    }
    const int ar = form == TN ? K : M, ac = form == TN ? M : K;
    const int br = form == NT ? N : K, bc = form == NT ? K : N;
    int la, lb;
    const uint16_t *a = operand(k, 0, ar, ac, A, lda, &la);
    const uint16_t *b = operand(k, 1, br, bc, B, ldb, &lb);
    const clef_gemm_bf16_fn b16 = form == NT   ? k->gemm_bf16_nt
                                  : form == NN ? k->gemm_bf16_nn
                                               : k->gemm_bf16_tn;
    b16(M, N, K, a, la, b, lb, C, ldc, acc);
}

void clef_mm_nt(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    mm(k, NT, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_nn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    mm(k, NN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_tn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    mm(k, TN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}
