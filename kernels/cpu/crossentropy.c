/* crossentropy.c — softmax + cross-entropy over the vocabulary, one row
 * per position.  Forward keeps each row's log-sum-exp so backward is a
 * single vectorised pass (softmax = exp(z - lse)); rows are independent,
 * so threads split them.  The reference computes both in double. */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <string.h>

HAT_CLONES
static float row_lse(const float *z, int V)
{
    float mx = -INFINITY, sum = 0;
    #pragma omp simd reduction(max:mx)
    for (int i = 0; i < V; i++) mx = z[i] > mx ? z[i] : mx;
    #pragma omp simd reduction(+:sum)
    for (int i = 0; i < V; i++) sum += vexpf(z[i] - mx);
    return mx + logf(sum);
}

HAT_CLONES
static void row_grad(float *dz, const float *z, float lse, int V, float scale)
{
    #pragma omp simd
    for (int i = 0; i < V; i++) dz[i] = scale * vexpf(z[i] - lse);
}

void crossentropy_forward(float *losses, float *lse, const float *logits,
                          const int *targets, int N, int V)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        int t = targets[n];
        lse[n] = t < 0 ? 0 : row_lse(z, V);
        losses[n] = t < 0 ? 0 : lse[n] - z[t];
    }
}

void crossentropy_backward(float *dlogits, const float *logits, const float *lse,
                           const int *targets, int N, int V, float scale)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *dz = dlogits + (size_t)n * V;
        int t = targets[n];
        if (t < 0) { memset(dz, 0, sizeof(float) * V); continue; }
        row_grad(dz, logits + (size_t)n * V, lse[n], V, scale);
        dz[t] -= scale;
    }
}

void crossentropy_forward_backward(float *losses, float *dlogits,
                                   const float *logits, const int *targets,
                                   int N, int V, float scale)
{
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V;
        float *dz = dlogits ? dlogits + (size_t)n * V : NULL;
        int t = targets[n];
        if (t < 0) {
            losses[n] = 0;
            if (dz) for (int i = 0; i < V; i++) dz[i] = 0;
            continue;
        }
        float mx = z[0];
        for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
        double sum = 0;
        for (int i = 0; i < V; i++) sum += exp((double)(z[i] - mx));
        double lse = log(sum) + mx;
        losses[n] = (float)(lse - z[t]);
        if (dz) {
            for (int i = 0; i < V; i++)
                dz[i] = scale * (float)exp((double)z[i] - lse);
            dz[t] -= scale;
        }
    }
}
