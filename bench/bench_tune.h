// clef-bench --tune (bench/tune.c): measures every backend per op and shape
// class and writes the tuning file `--backend auto` reads (scheduler/tune.h).
#ifndef CLEF_BENCH_TUNE_H
#define CLEF_BENCH_TUNE_H

#include <stdio.h>

// 1 when argv holds --tune: main() then hands the whole command line to
// clef_bench_tune_main(), which has its own few options.
int clef_bench_wants_tune(int argc, char **argv);
// Exit code: 0 written, 1 a backend failed parity (file still written) or
// the file could not be written, 2 bad usage.
int clef_bench_tune_main(int argc, char **argv);

// clef-bench's header line for the library backends: versions and the
// sub-configuration BLIS chose ("libs: onednn 2.6.3 | blis 0.9.0 zen3").
void clef_bench_print_libs(FILE *f);
// BLIS's sub-configuration ("zen3", "generic"; "none" in CLEF_MINIMAL builds).
const char *clef_bench_blis_arch(void);

#endif
