// attention kernels for avx512: clef_f32_attention_fwd__avx512 clef_f32_attention_bwd__avx512 
// Body written once for both ISAs: backends/x86/tmpl_attention.h (vector layer
// in this directory's vec.h).
#include <math.h>

#include "vec.h"
#include "avx512.h"

#define ATTN_GEMM_NT clef_f32_gemm_nt_14x32__avx512
#define ATTN_GEMM_NN clef_f32_gemm_nn_14x32__avx512
#define ATTN_GEMM_TN clef_f32_gemm_tn_14x32__avx512

#include "backends/x86/tmpl_softmax_row.h"
#include "backends/x86/tmpl_attention.h"
