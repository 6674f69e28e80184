// Loops over independent iterations, threaded only when it pays: entering an
// OpenMP region costs about a microsecond even when its if clause is false,
// which the tiny head's ~150 kernel calls per update cannot afford, and a
// region of one thread makes libgomp allocate (and free) its team, which the
// update loop must not do. Each iteration writes its own outputs, so the
// split never changes a result. In backends/ so that kernels use it too
// (core and the rest include it as "par.h").
#ifndef CLEF_PAR_H
#define CLEF_PAR_H

#include <omp.h>

// 1 when a parallel region here would run on more than one thread.
static inline int clef_par_team(void)
{
    return omp_get_max_threads() > 1 && !omp_in_parallel();
}

// for (type i = 0; i < n; i++) { body }, on the OpenMP team when `par`.
#define CLEF_PAR_FOR(par, type, i, n, ...)                                     \
    do {                                                                       \
        if ((par) && clef_par_team()) {                                        \
            _Pragma("omp parallel for schedule(static)") for (type i = 0;      \
                                                              i < (n); i++)    \
            {                                                                  \
                __VA_ARGS__                                                    \
            }                                                                  \
        } else {                                                               \
            for (type i = 0; i < (n); i++) {                                   \
                __VA_ARGS__                                                    \
            }                                                                  \
        }                                                                      \
    } while (0)

#endif
