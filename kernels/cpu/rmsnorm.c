/* rmsnorm.c — RMSNorm forward and backward (CPU back end).
 * y = w * x * rstd, rstd = 1/sqrt(mean(x^2) + eps).  Used for the block
 * norms (C = hidden) and the per-head q/k norms (C = head_dim). */
#include "kernels.h"

#include <math.h>

void rmsnorm_forward(float *out, float *rstd, const float *inp,
                     const float *w, int N, int C, float eps)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *y = out + (size_t)n * C;
        double ss = 0;
        for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
        float r = (float)(1.0 / sqrt(ss / C + eps));
        for (int i = 0; i < C; i++) y[i] = w[i] * (x[i] * r);
        if (rstd) rstd[n] = r;
    }
}

/* dx = r * (w*dy - x * r^2 * mean(w*dy*x)).  dw sums over rows: the
 * rows are split into fixed per-thread chunks whose partial sums are
 * added in thread order, so the result does not depend on timing. */
void rmsnorm_backward(float *dinp, float *dw, const float *dout,
                      const float *inp, const float *w, const float *rstd,
                      int N, int C)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float r = rstd[n];
        double dot = 0;
        for (int i = 0; i < C; i++) dot += (double)w[i] * dy[i] * x[i];
        float k = (float)(dot / C) * r * r;
        for (int i = 0; i < C; i++) dx[i] += r * (w[i] * dy[i] - x[i] * k);
    }
    if (!dw) return;
    /* Columns are independent: parallelise over columns, rows in order. */
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < C; i++) {
        double acc = 0;
        for (int n = 0; n < N; n++)
            acc += (double)dout[(size_t)n * C + i] * inp[(size_t)n * C + i] * rstd[n];
        dw[i] += (float)acc;
    }
}
