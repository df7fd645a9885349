/* rng.h — the one random number generator of hat.
 *
 * Algorithm: xoshiro256** (Blackman & Vigna, 2018) for the stream, its
 * 256-bit state filled from the 64-bit seed by splitmix64, exactly as the
 * authors recommend.  Same seed → same stream on every platform: nothing
 * here depends on the C library's rand().  Derived streams (rng_derive)
 * mix a seed with a stream id (a record index, a worker, a group) through
 * splitmix64 so that parallel or resumed work draws the same numbers as a
 * serial run.  The state is four uint64_t, saved verbatim in checkpoints. */
#ifndef HAT_RNG_H
#define HAT_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint64_t s[4]; } rng_t;

void     rng_seed(rng_t *r, uint64_t seed);
/* Independent stream for (seed, stream id). */
void     rng_derive(rng_t *r, uint64_t seed, uint64_t stream);
uint64_t rng_u64(rng_t *r);
/* Uniform in [0, n) without modulo bias (Lemire's method); n > 0. */
uint64_t rng_below(rng_t *r, uint64_t n);
/* Uniform double in [0, 1) with 53 random bits. */
double   rng_uniform(rng_t *r);
/* Standard normal (Box–Muller, no cached second value: stateless). */
double   rng_normal(rng_t *r);
/* 1 with probability p. */
int      rng_chance(rng_t *r, double p);
/* Fisher–Yates shuffle of n elements of size sz. */
void     rng_shuffle(rng_t *r, void *base, size_t n, size_t sz);
/* splitmix64 finaliser: a good 64-bit mix, also used for hashing seeds. */
uint64_t mix64(uint64_t x);

#endif
