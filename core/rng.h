// clef's seeded generator (xoshiro256**, seeded by splitmix64): the same
// seed gives the same head, fixture and batch order on every machine.
#ifndef CLEF_RNG_H
#define CLEF_RNG_H

#include <stdint.h>

typedef struct clef_rng {
    uint64_t s[4];
} clef_rng;

// splitmix64: advances *state, returns the next 64 bits (the seeder; tests
// and benchmarks use it as a small stream of their own).
uint64_t clef_splitmix64(uint64_t *state);
// splitmix64's output function of one counter value: clef_splitmix64(&x)
// returns clef_mix64(x + golden) and so does a counter-based draw keyed by x.
static inline uint64_t clef_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void clef_rng_seed(clef_rng *r, uint64_t seed);
uint64_t clef_rng_next(clef_rng *r);
double clef_rng_double(clef_rng *r);                     // [0, 1), 53 bits
float clef_rng_uniform(clef_rng *r, float lo, float hi); // [lo, hi)
float clef_rng_normal(clef_rng *r);                      // N(0, 1), Box-Muller
uint64_t clef_rng_below(clef_rng *r, uint64_t n);        // [0, n), unbiased

#endif
