// Matrix products in fp32 or bf16 (mm.h).
#include "mm.h"
#include "par.h"

#include "backends/gemm_bf16_widen.h"

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

// Conversion chunks: fixed, and the conversion is elementwise, so the split
// never changes a bit.
#define CVT_CHUNK ((size_t)1 << 16)

// y (n) = x rounded to bf16, in chunks on the team when it is free.
static void cvt_chunks(const clef_kernels *k, size_t n, const float *x,
                       uint16_t *y)
{
    const size_t nc = (n + CVT_CHUNK - 1) / CVT_CHUNK;
    CLEF_PAR_FOR(nc > 2, size_t, c, nc,
        const size_t i0 = c * CVT_CHUNK;
        k->cvt_f32_bf16(n - i0 < CVT_CHUNK ? n - i0 : CVT_CHUNK, x + i0,
                        y + i0);
    );
}

void clef_mm_refresh(const clef_kernels *k)
{
    struct clef_mm *mm = k->mm;
    if (!mm)
        return;
    cvt_chunks(k, mm->pn, mm->pbase, mm->pbf);
    mm->current = 1;
}

void clef_mm_refresh_stale(const clef_kernels *k)
{
    if (k->mm && !k->mm->current)
        clef_mm_refresh(k);
}

void clef_mm_mirror(const clef_kernels *k, size_t off, size_t n)
{
    if (k->mm)
        k->cvt_f32_bf16(n, k->mm->pbase + off, k->mm->pbf + off);
}

void clef_mm_params_changed(const clef_kernels *k)
{
    if (k->mm)
        k->mm->current = 0;
}

// This thread's scratch slot number. Products on more threads than slots
// have no way back into the pass: the process stops with a message.
static int slot(void)
{
    const int t = omp_get_thread_num();
    if (t >= CLEF_MM_SLOTS) {
        fprintf(stderr, "clef: bf16 products on thread %d: at most %d\n", t,
                CLEF_MM_SLOTS);
        abort();
    }
    return t;
}

// b grown to n bf16 elements (out of memory: stops, as above).
static uint16_t *grow(clef_mm_buf *b, size_t n)
{
    if (b->cap < n) {
        void *p = realloc(b->p, sizeof(uint16_t) * n);
        if (!p) {
            fprintf(stderr,
                    "clef: out of memory for a bf16 operand of "
                    "%zu elements\n",
                    n);
            abort();
        }
        b->p = p, b->cap = n;
    }
    return b->p;
}

// X (rows, cols) with row stride ldx as a bf16 operand: its place in the
// parameters' mirror (same stride), or a contiguous copy (*ld = cols) in
// scratch slot (this thread, which).
static const uint16_t *operand(const clef_kernels *k, int which, int rows,
                               int cols, const float *X, int ldx, int *ld)
{
    struct clef_mm *mm = k->mm;
    if (X >= mm->pbase && X < mm->pbase + mm->pn) {
        *ld = ldx;
        return mm->pbf + (X - mm->pbase);
    }
    const size_t n = (size_t)rows * cols;
    *ld = cols > 0 ? cols : 1;
    if (n == 0) // nothing is read
        return mm->pbf;
    uint16_t *y = grow(&mm->scr[slot()][which], n);
    clef_mm_round(k, rows, cols, X, ldx, y);
    return y;
}

void clef_mm_round(const clef_kernels *k, int rows, int cols, const float *X,
                   int ldx, uint16_t *y)
{
    const size_t n = (size_t)rows * cols;
    if (n == 0)
        return;
    if (ldx == cols) {
        cvt_chunks(k, n, X, y);
        return;
    }
    CLEF_PAR_FOR(n > 2 * CVT_CHUNK, int, r, rows,
        k->cvt_f32_bf16((size_t)cols, X + (size_t)r * ldx,
                        y + (size_t)r * cols);
    );
}

// The three forms share one body: op(A) is (M, K) stored (ar, ac), op(B)
// (K, N) stored (br, bc), as kernels.h lays them out.
enum { NT, NN, TN };

static clef_gemm_fn f32_of(const clef_kernels *k, int form)
{
    return form == NT ? k->gemm_nt : form == NN ? k->gemm_nn : k->gemm_tn;
}

// C (M, N) [+]= op(A) op(B) on bf16 operands a, b (strides la, lb).
static void mm16(const clef_kernels *k, int form, int M, int N, int K,
                 const uint16_t *a, int la, const uint16_t *b, int lb, float *C,
                 int ldc, int acc)
{
    const clef_gemm_bf16_fn b16 = form == NT   ? k->gemm_bf16_nt
                                  : form == NN ? k->gemm_bf16_nn
                                               : k->gemm_bf16_tn;
    if (2.0 * M * N * K < CLEF_MM_BF16_SMALL_FLOPS) {
        // the rounded operands as floats through the fp32 kernel: products
        // of bf16 values are exact in float, sums in float, as the bf16
        // kernels compute them, without their tile setup and packing (the
        // widened kernels' own body; b16 only without scratch memory)
        bf16_widen_gemm(form == TN, form == NT, M, N, K, a, la, b, lb, C, ldc,
                        acc, f32_of(k, form), b16);
        return;
    }
    b16(M, N, K, a, la, b, lb, C, ldc, acc);
}

// The bf16 form (k->mm set): operands as bf16, then mm16.
static void mm(const clef_kernels *k, int form, int M, int N, int K,
               const float *A, int lda, const float *B, int ldb, float *C,
               int ldc, int acc)
{
    const int ar = form == TN ? K : M, ac = form == TN ? M : K;
    const int br = form == NT ? N : K, bc = form == NT ? K : N;
    int la, lb;
    const uint16_t *a = operand(k, 0, ar, ac, A, lda, &la);
    const uint16_t *b = operand(k, 1, br, bc, B, ldb, &lb);
    mm16(k, form, M, N, K, a, la, b, lb, C, ldc, acc);
}

// op(A) rounded here, op(B) given in bf16 (stride ldb).
static void mm_b16(const clef_kernels *k, int form, int M, int N, int K,
                   const float *A, int lda, const uint16_t *B, int ldb,
                   float *C, int ldc, int acc)
{
    int la;
    const uint16_t *a = operand(k, 0, M, K, A, lda, &la);
    mm16(k, form, M, N, K, a, la, B, ldb, C, ldc, acc);
}

void clef_mm_nt_b16(const clef_kernels *k, int M, int N, int K, const float *A,
                    int lda, const uint16_t *B, int ldb, float *C, int ldc,
                    int acc)
{
    mm_b16(k, NT, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_nn_b16(const clef_kernels *k, int M, int N, int K, const float *A,
                    int lda, const uint16_t *B, int ldb, float *C, int ldc,
                    int acc)
{
    mm_b16(k, NN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_tn16(const clef_kernels *k, int M, int N, int K, const uint16_t *A,
                  int lda, const uint16_t *B, int ldb, float *C, int ldc,
                  int acc)
{
    mm16(k, TN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_nt(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    if (!k->mm) { // fp32: the kernel itself, no detour
        k->gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, acc);
        return;
    }
    mm(k, NT, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_nn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    if (!k->mm) { // fp32: the kernel itself, no detour
        k->gemm_nn(M, N, K, A, lda, B, ldb, C, ldc, acc);
        return;
    }
    mm(k, NN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}

void clef_mm_tn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc)
{
    if (!k->mm) { // fp32: the kernel itself, no detour
        k->gemm_tn(M, N, K, A, lda, B, ldb, C, ldc, acc);
        return;
    }
    mm(k, TN, M, N, K, A, lda, B, ldb, C, ldc, acc);
}
