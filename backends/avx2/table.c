// The avx2 backend's table: every op, its kernel and its name.
#include "avx2.h"

#define CLEF_ISA_ENTRY(op, type) .op = clef_f32_##op##__avx2,
#define CLEF_ISA_NAME(op, type) [CLEF_OP_##op] = "clef_f32_" #op "__avx2",
// the GEMMs carry their register tile in the name
#define CLEF_ISA_OTHER_OPS(X)                                                  \
    X(bias_add, 0) X(colsum, 0) X(layernorm_fwd, 0) X(layernorm_bwd, 0)        \
    X(gelu_fwd, 0) X(gelu_bwd, 0) X(softmax_fwd, 0) X(softmax_bwd, 0)          \
    X(softmax_seg_fwd, 0) X(softmax_seg_bwd, 0) X(attention_fwd, 0)            \
    X(attention_bwd, 0) X(span_mean, 0) X(span_scatter, 0) X(gather_rows, 0)   \
    X(scatter_add_rows, 0) X(normalize_fwd, 0) X(normalize_bwd, 0)             \
    X(cosine_fwd, 0) X(cosine_bwd, 0) X(adamw, 0) X(loss, 0)

const clef_kernels clef_avx2_kernels = {
    .backend = "avx2",
    .gemm_nt = clef_f32_gemm_nt_6x16__avx2,
    .gemm_nn = clef_f32_gemm_nn_6x16__avx2,
    .gemm_tn = clef_f32_gemm_tn_6x16__avx2,
    CLEF_ISA_OTHER_OPS(CLEF_ISA_ENTRY)
    .names = {
        [CLEF_OP_gemm_nt] = "clef_f32_gemm_nt_6x16__avx2",
        [CLEF_OP_gemm_nn] = "clef_f32_gemm_nn_6x16__avx2",
        [CLEF_OP_gemm_tn] = "clef_f32_gemm_tn_6x16__avx2",
        CLEF_ISA_OTHER_OPS(CLEF_ISA_NAME)
    },
    .prepack = &clef_gemm_prepack_6x16__avx2,
};
