/* vecmath.h — small inline helpers shared by the CPU kernels: an expf
 * the compiler can vectorise, and the attribute that builds a hot loop
 * for AVX-512, AVX2+FMA and plain x86-64, picked at load time.
 *
 * glibc's expf is a scalar call, so a softmax over 4096 logits spends
 * more time in calls than in arithmetic; vexpf is branch-free straight
 * line code (Cephes polynomial, |rel err| < 2e-7 on [-87, 88]) that
 * `#pragma omp simd` turns into 16-lane code.  The binaries stay
 * portable: -O2 with no -march, and HAT_CLONES dispatches per CPU.
 * Its clamps are compare-and-select: under GCC's default -ftrapping-math
 * the AVX2 clones cannot if-convert them and stay scalar, so every file
 * that uses this header is built with -fno-trapping-math (the Makefile's
 * KERNEL_CFLAGS; tests/cli/vectorised.sh checks the result). */
#ifndef HAT_VECMATH_H
#define HAT_VECMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HAT_CLONES
#endif

/* e^x; inputs below -87 give ~1e-38 (not 0), above 88 give ~1.6e38.
 * Comparisons rather than fminf/fmaxf: those keep NaN rules that stop
 * GCC from vectorising. */
static inline float vexpf(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    /* n = round(x / ln 2) by the 1.5*2^23 trick; r = x - n ln 2 in two parts */
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;    /* 2^n */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* Softmax of p[0, n) in place; the log-sum-exp of the inputs in *lse
 * unless it is NULL.  A maximum is exact in any order, so it is
 * vectorised too.  Always inlined: the callers' target clones vectorise it. */
static inline __attribute__((always_inline)) void vsoftmax(float *p, int n, float *lse)
{
    float mx = -INFINITY, sum = 0;
    #pragma omp simd reduction(max:mx)
    for (int s = 0; s < n; s++) mx = p[s] > mx ? p[s] : mx;
    #pragma omp simd reduction(+:sum)
    for (int s = 0; s < n; s++) { p[s] = vexpf(p[s] - mx); sum += p[s]; }
    float inv = 1.0f / sum;
    #pragma omp simd
    for (int s = 0; s < n; s++) p[s] *= inv;
    if (lse) *lse = mx + logf(sum);
}

/* x rounded to bf16, to nearest with ties to even; a NaN stays a
 * (quiet) NaN.  The one rounding rule of the CPU kernels' bf16 paths. */
static inline uint32_t bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40;
    return (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
}

#endif
