// The AMX bf16 GEMMs of backends/amx/gemm_bf16.c built on an emulation of
// the tile instructions (backends/amx/tile_emu.h), as
// clef_bf16_gemm_{nt,nn,tn}_32x32__amxemu (tests/amx_emu.h), so that every
// part of them but the tile instructions themselves is tested on CPUs
// without AMX (tests/test_isa_gemm_bf16.c). Their packs are AVX-512 F/BW
// code: a caller checks the CPU first.
#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")
#define CLEF_AMX_EMULATE 1
#define clef_bf16_gemm_nt_32x32__amx clef_bf16_gemm_nt_32x32__amxemu
#define clef_bf16_gemm_nn_32x32__amx clef_bf16_gemm_nn_32x32__amxemu
#define clef_bf16_gemm_tn_32x32__amx clef_bf16_gemm_tn_32x32__amxemu
#include "backends/amx/gemm_bf16.c"
#endif
