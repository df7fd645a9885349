/* rng.c — xoshiro256** seeded by splitmix64.  See rng.h. */
#include "rng.h"

#include <math.h>
#include <string.h>

uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x)
{
    *x += 0x9e3779b97f4a7c15ULL;
    return mix64(*x);
}

void rng_seed(rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void rng_derive(rng_t *r, uint64_t seed, uint64_t stream)
{
    rng_seed(r, mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL)));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(rng_t *r)
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

uint64_t rng_below(rng_t *r, uint64_t n)
{
    /* Lemire, "Fast random integer generation in an interval" (2019). */
    unsigned __int128 m = (unsigned __int128)rng_u64(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t thresh = -n % n;
        while (lo < thresh) {
            m = (unsigned __int128)rng_u64(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double rng_uniform(rng_t *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

double rng_normal(rng_t *r)
{
    double u1 = 1.0 - rng_uniform(r);      /* (0, 1] so log is finite */
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int rng_chance(rng_t *r, double p)
{
    if (p <= 0) return 0;
    if (p >= 1) return 1;
    return rng_uniform(r) < p;
}

void rng_shuffle(rng_t *r, void *base, size_t n, size_t sz)
{
    unsigned char *a = base, tmp[256];
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(r, i);
        if (j == i - 1) continue;
        unsigned char *x = a + (i - 1) * sz, *y = a + j * sz;
        for (size_t off = 0; off < sz; off += sizeof tmp) {
            size_t k = sz - off < sizeof tmp ? sz - off : sizeof tmp;
            memcpy(tmp, x + off, k);
            memcpy(x + off, y + off, k);
            memcpy(y + off, tmp, k);
        }
    }
}
