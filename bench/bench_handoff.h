// clef-bench --handoff (bench/handoff.c): the cost of handing cache lines
// from one thread to another, and the cross-core round trip.
#ifndef CLEF_BENCH_HANDOFF_H
#define CLEF_BENCH_HANDOFF_H

#include <stddef.h>

#define CLEF_HANDOFF_OPS 3 // read, rmw, write

// rate[op][s] (GB/s): thread 1's pass over `bytes` after it (s = 0) or
// thread 0 (s = 1) left the lines so; medians over `rounds`. -1 without
// two threads or memory (rate untouched).
int clef_bench_handoff_run(size_t bytes, int rounds,
                           double rate[CLEF_HANDOFF_OPS][2]);

// The round trip of one cache line between OpenMP threads 0 and 1, in ns;
// NaN on one CPU.
double clef_bench_round_trip_ns(void);

int clef_bench_wants_handoff(int argc, char **argv);
int clef_bench_handoff_main(int argc, char **argv);

#endif
