// The neon backend's table: every op, its kernel and its name.
#include "neon.h"

#define CLEF_NEON_ENTRY(op, type) .op = clef_f32_##op##__neon,
#define CLEF_NEON_NAME(op, type) [CLEF_OP_##op] = "clef_f32_" #op "__neon",
// the GEMMs carry their register tile in the name
#define CLEF_NEON_OTHER_OPS(X)                                                 \
    X(bias_add, 0) X(colsum, 0) X(layernorm_fwd, 0) X(layernorm_bwd, 0)        \
    X(gelu_fwd, 0) X(gelu_bwd, 0) X(softmax_fwd, 0) X(softmax_bwd, 0)          \
    X(softmax_seg_fwd, 0) X(softmax_seg_bwd, 0) X(attention_fwd, 0)            \
    X(attention_bwd, 0) X(span_mean, 0) X(span_scatter, 0) X(gather_rows, 0)   \
    X(scatter_add_rows, 0) X(normalize_fwd, 0) X(normalize_bwd, 0)             \
    X(cosine_fwd, 0) X(cosine_bwd, 0) X(adamw, 0) X(loss, 0)

const clef_kernels clef_neon_kernels = {
    .backend = "neon",
    .gemm_nt = clef_f32_gemm_nt_8x12__neon,
    .gemm_nn = clef_f32_gemm_nn_8x12__neon,
    .gemm_tn = clef_f32_gemm_tn_8x12__neon,
    CLEF_NEON_OTHER_OPS(CLEF_NEON_ENTRY)
    .names = {
        [CLEF_OP_gemm_nt] = "clef_f32_gemm_nt_8x12__neon",
        [CLEF_OP_gemm_nn] = "clef_f32_gemm_nn_8x12__neon",
        [CLEF_OP_gemm_tn] = "clef_f32_gemm_tn_8x12__neon",
        CLEF_NEON_OTHER_OPS(CLEF_NEON_NAME)
    },
};
