/* crossentropy.c — fused softmax + cross-entropy (+ its gradient) over
 * the vocabulary, one row per position. */
#include "kernels.h"

#include <math.h>

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
