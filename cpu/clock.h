// The clocks clef measures with: monotonic wall time and this process's CPU
// time, in seconds. Header-only, so every layer (and a CLEF_MINIMAL build)
// can use them.
#ifndef CLEF_CLOCK_H
#define CLEF_CLOCK_H

#include <time.h>

static inline double clef_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double clef_cpu_time_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
