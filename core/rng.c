#include "rng.h"

#include <math.h>

uint64_t clef_splitmix64(uint64_t *x)
{
    const uint64_t z = clef_mix64(*x);
    *x += 0x9e3779b97f4a7c15ull;
    return z;
}

void clef_rng_seed(clef_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = clef_splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t clef_rng_next(clef_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double clef_rng_double(clef_rng *r)
{
    return (double)(clef_rng_next(r) >> 11) * 0x1.0p-53;
}

float clef_rng_uniform(clef_rng *r, float lo, float hi)
{
    return (float)(lo + (hi - lo) * clef_rng_double(r));
}

float clef_rng_normal(clef_rng *r)
{
    double u1 = clef_rng_double(r), u2 = clef_rng_double(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint64_t clef_rng_below(clef_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = clef_rng_next(r);
    while (x >= limit);
    return x % n;
}
