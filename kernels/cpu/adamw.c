/* adamw.c — the AdamW update and the reductions the optimiser needs. */
#include "kernels.h"

#include <math.h>

void adamw_update(float *p, float *m, float *v, const float *g, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd,
                  int t)
{
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        float mh = m[i] / bc1, vh = v[i] / bc2;
        p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
    }
}

/* Fixed blocks summed in block order: the same answer for any thread
 * count or schedule. */
#define SUMSQ_BLOCK 4096
double sumsq(const float *x, size_t n)
{
    size_t nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    double total = 0;
    #pragma omp parallel for schedule(static) ordered
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * SUMSQ_BLOCK, hi = lo + SUMSQ_BLOCK < n ? lo + SUMSQ_BLOCK : n;
        double s = 0;
        for (size_t i = lo; i < hi; i++) s += (double)x[i] * x[i];
        #pragma omp ordered
        total += s;
    }
    return total;
}

void scale_inplace(float *x, size_t n, float s)
{
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
