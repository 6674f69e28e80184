// attention kernels for avx2: clef_f32_attention_fwd__avx2 clef_f32_attention_bwd__avx2 
// Body written once for both ISAs: backends/x86/tmpl_attention.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx2.h"

#define ATTN_GEMM_NT clef_f32_gemm_nt_6x16__avx2
#define ATTN_GEMM_NN clef_f32_gemm_nn_6x16__avx2
#define ATTN_GEMM_TN clef_f32_gemm_tn_6x16__avx2

#include "backends/x86/tmpl_softmax_row.h"
#include "backends/x86/tmpl_attention.h"
