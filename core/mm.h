// The head's matrix products in the training's precision (issue 20).
//
// fp32 (a kernel table without a bf16 context, k->mm == NULL): the table's
// gemm_nt / gemm_nn / gemm_tn, exactly as before.
// bf16 (k->mm set, clef_mm_table): both operands rounded to bf16 (round to
// nearest even) and the table's gemm_bf16_* kernels, which accumulate and
// write float32. The parameters are read from a bf16 mirror of hd->params
// made once per update (clef_mm_refresh); any other operand (activations,
// gradients, x̂) is converted at the call into per-thread scratch. Every
// other op (LayerNorm, softmax, GELU, the attention kernels, the loss,
// AdamW on the float32 master weights) stays float32.
#ifndef CLEF_MM_H
#define CLEF_MM_H

#include <stddef.h>
#include <stdint.h>

#include "head.h"
#include "kernels.h"

enum { CLEF_PRECISION_FP32 = 0, CLEF_PRECISION_BF16 = 1 };
// "fp32" / "bf16" -> CLEF_PRECISION_*, -1 for anything else.
int clef_precision_parse(const char *name);
const char *clef_precision_name(int precision);

// Scratch slots: one per OpenMP thread number (products run inside
// parallel regions too), two operands each, grown on first use.
#define CLEF_MM_SLOTS 64
typedef struct clef_mm_buf {
    void *p;    // bf16 elements
    size_t cap; // elements
} clef_mm_buf;

struct clef_mm {
    const float *pbase; // the parameters the mirror copies (hd->params)
    size_t pn;
    uint16_t *pbf; // (pn) their bf16 mirror
    // pbf holds the parameters as they are: set by clef_mm_refresh, kept by
    // AdamW (core/train.c writes the mirror chunk by chunk beside the
    // parameters, clef_mm_mirror), cleared by clef_mm_params_changed
    int current;
    clef_mm_buf scr[CLEF_MM_SLOTS][2];
};

// Products below this many flops (2·M·N·K) run the rounded operands,
// widened to float, through the fp32 kernel: the same rounding of the
// operands and float sums, without the bf16 kernels' fixed cost (AMX tile
// configuration, 32×32 padding, VNNI packing), which dominates a small
// head's update.
#define CLEF_MM_BF16_SMALL_FLOPS 2097152.0

// A bf16 context for head hd: allocates the mirror (not yet filled).
// 0, or -1 when out of memory.
int clef_mm_init(struct clef_mm *mm, const clef_head *hd);
void clef_mm_free(struct clef_mm *mm);
// *out = *k with the bf16 context mm: the table the head runs on in bf16.
// -1 (out untouched) when k lacks a bf16 GEMM or the conversion.
int clef_mm_table(const clef_kernels *k, struct clef_mm *mm, clef_kernels *out);
// Rounds the parameters into the mirror (fixed chunks, any thread count:
// elementwise). A no-op for an fp32 table. Call whenever the parameters
// changed before a forward pass.
void clef_mm_refresh(const clef_kernels *k);
// clef_mm_refresh unless the mirror is current: what each update does
// first (clef_train_begin). AdamW keeps the mirror current as it writes the
// parameters, so after the first update this costs nothing.
void clef_mm_refresh_stale(const clef_kernels *k);
// mirror [off, off + n) = bf16(parameters [off, off + n)): AdamW's chunks,
// right after they wrote those parameters (still in cache). No-op for fp32.
void clef_mm_mirror(const clef_kernels *k, size_t off, size_t n);
// Anything but AdamW that writes the parameters between updates (a
// restored checkpoint, a fault injected by a test) calls this: the next
// update refreshes the whole mirror again.
void clef_mm_params_changed(const clef_kernels *k);

// C (M, N) [+]= op(A) op(B), as the kernels' gemm_nt / gemm_nn / gemm_tn
// (kernels.h), in k's precision.
void clef_mm_nt(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc);
void clef_mm_nn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc);
void clef_mm_tn(const clef_kernels *k, int M, int N, int K, const float *A,
                int lda, const float *B, int ldb, float *C, int ldc, int acc);

// y (rows, cols) dense = X (rows, cols; row stride ldx) rounded to bf16 by
// k's conversion (a bf16 table only): an operand rounded once and read by
// several products (the _b16 forms below).
void clef_mm_round(const clef_kernels *k, int rows, int cols, const float *X,
                   int ldx, uint16_t *y);
// clef_mm_nt / clef_mm_nn with op(B) already in bf16 (a bf16 table only;
// A rounded at the call): the same bits as those on B's float values.
void clef_mm_nt_b16(const clef_kernels *k, int M, int N, int K, const float *A,
                    int lda, const uint16_t *B, int ldb, float *C, int ldc,
                    int acc);
void clef_mm_nn_b16(const clef_kernels *k, int M, int N, int K, const float *A,
                    int lda, const uint16_t *B, int ldb, float *C, int ldc,
                    int acc);
// The same as clef_mm_tn on operands already in bf16 (a bf16 table only):
// the x̂ a record keeps in bf16.
void clef_mm_tn16(const clef_kernels *k, int M, int N, int K, const uint16_t *A,
                  int lda, const uint16_t *B, int ldb, float *C, int ldc,
                  int acc);

#endif
