/* swiglu.c — the SwiGLU gate of the MLP: out = silu(gate) * up. */
#include "kernels.h"

#include <math.h>

void swiglu_forward(float *out, const float *gate, const float *up, size_t N)
{
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void swiglu_backward(float *dgate, float *dup, const float *dout,
                     const float *gate, const float *up, size_t N)
{
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float g = gate[i], sg = 1.0f / (1.0f + expf(-g));
        float silu = g * sg;
        dgate[i] += dout[i] * up[i] * sg * (1.0f + g * (1.0f - sg));
        dup[i] += dout[i] * silu;
    }
}

void add_forward(float *out, const float *a, const float *b, size_t N)
{
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) out[i] = a[i] + b[i];
}
