// Seeded random numbers and fills for tests (splitmix64).
#include <math.h>

#include "rng.h"
#include "util.h"

uint64_t clef_test_rng_next(uint64_t *state)
{
    return clef_splitmix64(state);
}

double clef_test_rand_unit(uint64_t *state)
{
    return (double)(clef_test_rng_next(state) >> 11) * 0x1.0p-53;
}

int clef_test_rand_int(uint64_t *state, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
    return lo + (int)(clef_test_rng_next(state) % span);
}

void clef_test_fill_uniform(float *x, size_t n, float lo, float hi,
                            uint64_t *state)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(lo + (hi - (double)lo) * clef_test_rand_unit(state));
}

void clef_test_fill_normal(float *x, size_t n, float mean, float std,
                           uint64_t *state)
{
    const double two_pi = 6.283185307179586476925;
    for (size_t i = 0; i < n; i++) {
        double u1 = 1.0 - clef_test_rand_unit(state); // (0, 1]
        double u2 = clef_test_rand_unit(state);
        double z = sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
        x[i] = (float)(mean + std * z);
    }
}

void clef_test_fill_const(float *x, size_t n, float value)
{
    for (size_t i = 0; i < n; i++)
        x[i] = value;
}

void clef_test_fill_pattern(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(i % 7) - 3) * 0.25f;
}
