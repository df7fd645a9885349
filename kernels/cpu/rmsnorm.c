/* rmsnorm.c — RMSNorm forward and backward (CPU back end).
 * y = w * x * rstd, rstd = 1/sqrt(mean(x^2) + eps).  Used for the block
 * norms (C = hidden) and the per-head q/k norms (C = head_dim).
 * Row loops are vectorised helpers built per CPU; sums are in double.
 * The _ref versions are the plain loops the fast ones are tested against. */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>

HAT_CLONES
static float norm_row(float *y, const float *x, const float *w, int C, float eps)
{
    double ss = 0;
    #pragma omp simd reduction(+:ss)
    for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / C + eps));
    #pragma omp simd
    for (int i = 0; i < C; i++) y[i] = w[i] * (x[i] * r);
    return r;
}

void rmsnorm_forward(float *out, float *rstd, const float *inp,
                     const float *w, int N, int C, float eps)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float r = norm_row(out + (size_t)n * C, inp + (size_t)n * C, w, C, eps);
        if (rstd) rstd[n] = r;
    }
}

/* dx = add + r * (w*dy - x * r^2 * mean(w*dy*x)) for one row; add may
 * be dx itself.  Without add, 0.0f + ...: the bits of clearing dx first
 * (a -0 comes out +0), without the pass that cleared it. */
HAT_CLONES
static void dnorm_row(float *dx, const float *add, const float *dy, const float *x,
                      const float *w, float r, int C)
{
    double dot = 0;
    #pragma omp simd reduction(+:dot)
    for (int i = 0; i < C; i++) dot += (double)w[i] * dy[i] * x[i];
    float k = (float)(dot / C) * r * r;
    if (add) {
        #pragma omp simd
        for (int i = 0; i < C; i++) dx[i] = add[i] + r * (w[i] * dy[i] - x[i] * k);
    } else {
        #pragma omp simd
        for (int i = 0; i < C; i++) dx[i] = 0.0f + r * (w[i] * dy[i] - x[i] * k);
    }
}

/* dw[c0..c0+16) += sum over rows of dy * x * rstd: 16 columns = one
 * cache line per row, rows in order (deterministic for any threads). */
#define DW_COLS 16
HAT_CLONES
static void dw_cols(float *dw, const float *dout, const float *inp, const float *rstd,
                    int N, int C, int c0, int nc)
{
    double acc[DW_COLS] = { 0 };
    for (int n = 0; n < N; n++) {
        const float *dy = dout + (size_t)n * C + c0, *x = inp + (size_t)n * C + c0;
        double r = rstd[n];
        #pragma omp simd
        for (int j = 0; j < nc; j++) acc[j] += (double)dy[j] * x[j] * r;
    }
    for (int j = 0; j < nc; j++) dw[c0 + j] += (float)acc[j];
}

void rmsnorm_backward(float *dinp, const float *dadd, float *dw, const float *dout,
                      const float *inp, const float *w, const float *rstd,
                      int N, int C)
{
    int nb = (C + DW_COLS - 1) / DW_COLS;
    #pragma omp parallel
    {
        #pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++)
            dnorm_row(dinp + (size_t)n * C, dadd ? dadd + (size_t)n * C : NULL,
                      dout + (size_t)n * C, inp + (size_t)n * C, w, rstd[n], C);
        if (dw) {
            #pragma omp for schedule(static)
            for (int b = 0; b < nb; b++) {
                int c0 = b * DW_COLS;
                dw_cols(dw, dout, inp, rstd, N, C, c0, C - c0 < DW_COLS ? C - c0 : DW_COLS);
            }
        }
    }
}

/* ------------------------------------------------------------ reference */

void rmsnorm_forward_ref(float *out, float *rstd, const float *inp,
                         const float *w, int N, int C, float eps)
{
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

void rmsnorm_backward_ref(float *dinp, float *dw, const float *dout,
                          const float *inp, const float *w, const float *rstd,
                          int N, int C)
{
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
    for (int i = 0; i < C; i++) {
        double acc = 0;
        for (int n = 0; n < N; n++)
            acc += (double)dout[(size_t)n * C + i] * inp[(size_t)n * C + i] * rstd[n];
        dw[i] += (float)acc;
    }
}
