/* swiglu.c — the SwiGLU gate of the MLP: out = silu(gate) * up, and the
 * residual add.  The loops are split into per-thread ranges and each
 * range runs a vectorised helper (vexpf) built per CPU (HAT_CLONES). */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <omp.h>

HAT_CLONES
static void swiglu_fwd_range(float *out, const float *gate, const float *up, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + vexpf(-g)) * up[i];
    }
}

HAT_CLONES
static void swiglu_bwd_range(float *dgate, float *dup, const float *dout,
                             const float *gate, const float *up, size_t n)
{
    #pragma omp simd
    for (size_t i = 0; i < n; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + vexpf(-g));
        dgate[i] = 0.0f + dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
        dup[i] = 0.0f + dout[i] * g * sg;
    }
}

/* Thread t's share of n, in whole 64-byte lines. */
static void share(size_t n, size_t *lo, size_t *hi)
{
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    size_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
    *lo = t * chunk < n ? t * chunk : n;
    *hi = *lo + chunk < n ? *lo + chunk : n;
}

void swiglu_forward(float *out, const float *gate, const float *up, size_t N)
{
    #pragma omp parallel
    {
        size_t lo, hi;
        share(N, &lo, &hi);
        swiglu_fwd_range(out + lo, gate + lo, up + lo, hi - lo);
    }
}

void swiglu_backward(float *dgate, float *dup, const float *dout,
                     const float *gate, const float *up, size_t N)
{
    #pragma omp parallel
    {
        size_t lo, hi;
        share(N, &lo, &hi);
        swiglu_bwd_range(dgate + lo, dup + lo, dout + lo, gate + lo, up + lo, hi - lo);
    }
}

/* Reference versions (libm expf, one loop). */
void swiglu_forward_ref(float *out, const float *gate, const float *up, size_t N)
{
    for (size_t i = 0; i < N; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void swiglu_backward_ref(float *dgate, float *dup, const float *dout,
                         const float *gate, const float *up, size_t N)
{
    for (size_t i = 0; i < N; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        dgate[i] += dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
        dup[i] += dout[i] * g * sg;
    }
}

void add_forward(float *out, const float *a, const float *b, size_t N)
{
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}
