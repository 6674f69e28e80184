// The AMX bf16 GEMMs on emulated tiles (tests/util_amx_emu.c; x86-64 only,
// and only where the CPU has AVX-512 F/BW/DQ/VL).
#ifndef CLEF_TEST_AMX_EMU_H
#define CLEF_TEST_AMX_EMU_H

#include "kernels.h"

#if defined(__x86_64__)
clef_gemm_bf16_t clef_bf16_gemm_nt_32x32__amxemu;
clef_gemm_bf16_t clef_bf16_gemm_nn_32x32__amxemu;
clef_gemm_bf16_t clef_bf16_gemm_tn_32x32__amxemu;
#endif

#endif
