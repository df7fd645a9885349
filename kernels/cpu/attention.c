/* attention.c — causal grouped-query attention, forward and backward,
 * plus the single-token step used by KV-cache decoding.
 * Plain loops over (batch, head, query row) with OpenMP: attention is a
 * small share of the FLOPs at the sizes hat trains, and every loop here
 * visits only the causal triangle (no O(T^3) anywhere). */
#include "kernels.h"

#include <math.h>
#include <string.h>

static inline float dot(const float *a, const float *b, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void attention_forward(float *out, float *att, const float *q,
                       const float *k, const float *v,
                       int B, int T, int H, int KV, int D)
{
    int grp = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    #pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                int kh = h / grp;
                const float *qr = q + (((size_t)b * T + t) * H + h) * D;
                float *p = att + (((size_t)b * H + h) * T + t) * T;
                float mx = -INFINITY;
                for (int s = 0; s <= t; s++) {
                    p[s] = dot(qr, k + (((size_t)b * T + s) * KV + kh) * D, D) * scale;
                    if (p[s] > mx) mx = p[s];
                }
                float sum = 0;
                for (int s = 0; s <= t; s++) { p[s] = expf(p[s] - mx); sum += p[s]; }
                float inv = 1.0f / sum;
                float *o = out + (((size_t)b * T + t) * H + h) * D;
                memset(o, 0, sizeof(float) * D);
                for (int s = 0; s <= t; s++) {
                    p[s] *= inv;
                    const float *vr = v + (((size_t)b * T + s) * KV + kh) * D;
                    for (int i = 0; i < D; i++) o[i] += p[s] * vr[i];
                }
            }
}

/* Two passes so no two threads write the same gradient row:
 * (1) per query row: dS = P (dP - <P,dP>), dq;  (2) per key row of each
 * kv head: dk and dv summed over the query heads sharing it. */
void attention_backward(float *dq, float *dk, float *dv, float *datt,
                        const float *dout, const float *att,
                        const float *q, const float *k, const float *v,
                        int B, int T, int H, int KV, int D)
{
    int grp = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    #pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
                int kh = h / grp;
                const float *p = att + (((size_t)b * H + h) * T + t) * T;
                float *ds = datt + (((size_t)b * H + h) * T + t) * T;
                const float *go = dout + (((size_t)b * T + t) * H + h) * D;
                float pdp = 0;
                for (int s = 0; s <= t; s++) {
                    ds[s] = dot(go, v + (((size_t)b * T + s) * KV + kh) * D, D);
                    pdp += p[s] * ds[s];
                }
                float *gq = dq + (((size_t)b * T + t) * H + h) * D;
                for (int s = 0; s <= t; s++) {
                    ds[s] = p[s] * (ds[s] - pdp) * scale;
                    const float *kr = k + (((size_t)b * T + s) * KV + kh) * D;
                    for (int i = 0; i < D; i++) gq[i] += ds[s] * kr[i];
                }
            }
    #pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < KV; kh++)
            for (int s = 0; s < T; s++) {
                float *gk = dk + (((size_t)b * T + s) * KV + kh) * D;
                float *gv = dv + (((size_t)b * T + s) * KV + kh) * D;
                for (int h = kh * grp; h < (kh + 1) * grp; h++)
                    for (int t = s; t < T; t++) {
                        size_t r = ((size_t)b * H + h) * T + t;
                        float ds = datt[r * T + s], p = att[r * T + s];
                        const float *qr = q + (((size_t)b * T + t) * H + h) * D;
                        const float *go = dout + (((size_t)b * T + t) * H + h) * D;
                        for (int i = 0; i < D; i++) {
                            gk[i] += ds * qr[i];
                            gv[i] += p * go[i];
                        }
                    }
            }
}

void attention_decode(float *out, float *scratch, const float *q,
                      const float *kc, const float *vc, int n_ctx,
                      int H, int KV, int D)
{
    int grp = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    for (int h = 0; h < H; h++) {
        int kh = h / grp;
        const float *qr = q + (size_t)h * D;
        float *p = scratch + (size_t)h * n_ctx, mx = -INFINITY;
        for (int s = 0; s < n_ctx; s++) {
            p[s] = dot(qr, kc + ((size_t)s * KV + kh) * D, D) * scale;
            if (p[s] > mx) mx = p[s];
        }
        float sum = 0;
        for (int s = 0; s < n_ctx; s++) { p[s] = expf(p[s] - mx); sum += p[s]; }
        float inv = 1.0f / sum, *o = out + (size_t)h * D;
        memset(o, 0, sizeof(float) * D);
        for (int s = 0; s < n_ctx; s++) {
            float w = p[s] * inv;
            const float *vr = vc + ((size_t)s * KV + kh) * D;
            for (int i = 0; i < D; i++) o[i] += w * vr[i];
        }
    }
}
