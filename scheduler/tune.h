// Per-op backend selection: the `auto` backend, the tuning file that
// `clef-bench --tune` writes, and the fall-through that library backends
// (oneDNN, BLIS) use for the ops their library lacks.
//
// How `auto` chooses, per op and per shape class (small / medium / large by
// the op's work, clef_shape_class_of):
//   1. the tuning file, when one exists for this CPU: the fastest backend
//      that passed parity when `clef-bench --tune` measured this machine
//      ($XDG_CACHE_HOME/clef/tune-<cpu hash>.json, else ~/.cache/clef/...);
//   2. otherwise (or where the file's choice cannot run here) the built-in
//      preference order: avx512 > onednn > avx2 > blis > scalar, where a
//      library backend counts only for ops it implements itself and BLIS is
//      skipped when it runs its `generic` sub-configuration (no SIMD kernels).
//      The bf16 GEMMs: amx > avx512_bf16 > avx512 > onednn > avx2 (avx512,
//      avx2: their fp32 GEMMs on widened operands), except in the large
//      class, where oneDNN's bf16 matmul comes before the AVX512-BF16 kernel
//      (4-22 % faster on the head's large shapes on Zen 5, docs/PERF-NOTES.md)
//      and the AMX kernel, ahead of oneDNN on the Intel host, stays first. A
//      library's bf16 GEMMs count only on a CPU with bf16 arithmetic and no
//      cap below its level.
// Hand-written backends above CLEF_MAX_ISA are never chosen. CLEF_VERBOSE=1
// prints every choice and where it came from.
//
// Process-wide state: the selection behind the auto table's per-class
// trampolines. clef_auto_kernels() replaces it; every auto table follows the
// most recent selection (one per process in practice: the CLI builds one).
#ifndef CLEF_TUNE_H
#define CLEF_TUNE_H

#include <stddef.h>

#include "backends/kernels.h"
#include "cpu/cpu.h" // clef_verbose
#include "scheduler/registry.h"

// ---- the best hand-written backend ----
// avx512, avx2 or scalar: the highest level clef_isa_level() allows whose
// registry entry is compiled and runnable. Never NULL.
const clef_backend *clef_best_handwritten(void);

// Completes a library table: every op whose kernel name does not contain
// "__<lib>" (the library's own kernels all do) gets the best hand-written
// kernel (the dispatcher's per-op choice, scheduler/dispatch.h; without a
// dispatcher, clef_best_handwritten()'s), pointer and name, each written in one store (readers never see a
// NULL). Prints one line per op to stderr under CLEF_VERBOSE, marking the
// fall-throughs. Returns the number of ops that fell through.
int clef_fill_fallthrough(clef_kernels *t, const char *lib);

// 1 when b computes op with its own kernel (a hand-written backend always;
// a library backend when its table's name for op ends in "__<b->name>..."),
// 0 when the op falls through to another backend.
int clef_backend_native(const clef_backend *b, clef_op op);

// ---- shape classes ----
typedef enum clef_shape_class {
    CLEF_CLASS_SMALL = 0,
    CLEF_CLASS_MEDIUM,
    CLEF_CLASS_LARGE,
    CLEF_CLASS_COUNT
} clef_shape_class;

const char *clef_shape_class_name(clef_shape_class c); // "small", ...
int clef_shape_class_parse(const char *name);          // -1 when unknown

// An op's work: flops for GEMM (2MNK) and attention (2·heads·nq·nk·dh),
// elements of its main tensor otherwise (rows·n, n, total segment length,
// nspan·n, nidx·n).
// Thresholds: flops < 2^21 small, < 2^30 medium; elements < 2^14 small,
// < 2^20 medium; the rest large.
// (Which ops count flops: the op list's unit, clef_op_work_is_flops.)
clef_shape_class clef_shape_class_of(clef_op op, double work);

// ---- the tuning file ----
#define CLEF_TUNE_FORMAT "clef-tune/1"

typedef struct clef_tune_entry {
    int set;          // 0: not measured
    char backend[16]; // the fastest backend that passed
    double time_s;    // its best time per call, summed over the class's shapes
} clef_tune_entry;

typedef struct clef_tuning {
    char cpu[64];       // model the file was measured on
    char cpu_hash[17];  // clef_tune_cpu_hash() at the time
    char blis_arch[32]; // BLIS sub-configuration at the time
    int threads;        // thread count it was measured with
    clef_tune_entry e[CLEF_OP_COUNT][CLEF_CLASS_COUNT];
} clef_tuning;

// 16 hex digits: FNV-1a 64 of the CPU model and its ISA flags.
void clef_tune_cpu_hash(char out[17]);
// The default path: $XDG_CACHE_HOME/clef/tune-<hash>.json, else
// $HOME/.cache/clef/tune-<hash>.json. 0, or -1 when neither is set.
int clef_tune_default_path(char *buf, size_t n);

// Reads path into t. 0 on success; -1 with a message in err naming the file,
// field and rule (missing file: -1 and errno ENOENT kept).
int clef_tune_load(const char *path, clef_tuning *t, char *err, size_t nerr);
// Writes t atomically (temp file + rename), creating the directory. 0 or -1.
int clef_tune_save(const char *path, const clef_tuning *t, char *err,
                   size_t nerr);

// ---- auto ----
typedef enum clef_choice_source {
    CLEF_SRC_BUILTIN = 0, // built-in preference order
    CLEF_SRC_TUNED,       // the tuning file's measured choice
    CLEF_SRC_TUNED_NEAR,  // the tuning file, nearest measured class
} clef_choice_source;

typedef struct clef_auto_choice {
    const clef_backend *backend;
    clef_choice_source source;
    char why[192]; // e.g. "tune-….json: 1.2 ms" or "built-in (tuned blis ...)"
} clef_auto_choice;

// Builds the auto table into out (backend "auto"). tune_path: the tuning
// file to use; NULL: the default path (a missing file means built-in order);
// "": no tuning file. A tuning file that cannot be read is reported on stderr
// and ignored. choices, if not NULL, receives the choice per op and class.
// Returns 0; -1 only when no backend at all can run (never on x86-64).
int clef_auto_kernels(
    clef_kernels *out, const char *tune_path,
    clef_auto_choice choices[CLEF_OP_COUNT][CLEF_CLASS_COUNT]);

// What auto's rules depend on besides the registry, detected by
// clef_auto_kernels(); tests pass their own to clef_auto_build() (a generic
// BLIS, a lower ISA cap, another CPU).
typedef struct clef_auto_facts {
    int max_isa;       // hand-written backends above it are not chosen
    int native_isa;    // the CPU's own level: a library's bf16 GEMMs, which
                       // pick the CPU's best bf16 unit themselves, count only
                       // when max_isa does not cap it
    int blis_generic;  // BLIS runs `generic`: not in the built-in order
    char cpu_hash[17]; // a tuning file for another hash is ignored
} clef_auto_facts;
void clef_auto_facts_detect(clef_auto_facts *f);
// Position of a backend in the built-in order for op in shape class cls (0
// best); past the end when it is not in it. clef-bench --tune breaks
// near-ties with it.
int clef_auto_builtin_rank(clef_op op, int cls, const char *name);

// NULL when auto may choose b for op under f, else why not. builtin: the
// built-in order's rules (a generic BLIS is skipped there; a tuning file's
// measured choice is trusted).
const char *clef_auto_why_not(const clef_backend *b, clef_op op, int builtin,
                              const clef_auto_facts *f);
int clef_auto_build(clef_kernels *out, const char *tune_path,
                    const clef_auto_facts *f,
                    clef_auto_choice choices[CLEF_OP_COUNT][CLEF_CLASS_COUNT]);

// The registry's `auto` entry: a table built once with the default tuning
// file the first time clef_auto_unavailable() runs (the registry calls it
// before the table is used). Always available.
extern clef_kernels clef_auto_table;
const char *clef_auto_unavailable(void);

#endif
