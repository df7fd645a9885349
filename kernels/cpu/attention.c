/* attention.c — causal grouped-query attention, forward and backward,
 * plus the single-token step used by KV-cache decoding.
 *
 * The training kernels are flash-attention style on sgemm: per (batch,
 * head) the queries go in tiles of ATT_TILE rows; a tile's scores
 * against the keys it can see (the causal prefix, so the work is about
 * half of T x T) are one sgemm, the causal softmax runs on the tile in
 * a scratch buffer, and P V is a second sgemm.  Only the log-sum-exp of
 * each row is kept (B,H,T), not the (B,H,T,T) probabilities: backward
 * recomputes a tile's P from it (one more sgemm) so memory stays O(T).
 * Backward works per (batch, kv head), looping over the query heads that
 * share it, so each thread owns its dk/dv rows: no races, and every
 * gradient is summed in a fixed order (deterministic).
 * The _ref versions below are the plain loops these are tested against. */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#define ATT_TILE 64

static inline float dot(const float *a, const float *b, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

size_t attention_scratch_floats(int T)
{
    return (size_t)omp_get_max_threads() * 2 * ATT_TILE * T;
}

/* Causal softmax over a tile of scores S (m rows of stride e): row r is
 * query position t0 + r and sees columns 0..t0+r.  Overwrites S with
 * the probabilities (0 past the diagonal) and stores each row's
 * log-sum-exp (of the scaled scores) in lse[r]. */
HAT_CLONES
static void softmax_tile(float *S, float *lse, int m, int e, int t0)
{
    for (int r = 0; r < m; r++) {
        float *p = S + (size_t)r * e;
        int n = t0 + r + 1;
        vsoftmax(p, n, &lse[r]);
        memset(p + n, 0, sizeof(float) * (e - n));
    }
}

/* Backward of a tile: S holds the scaled scores and becomes
 * P = exp(S - lse); dP holds dout v^T and becomes
 * dS = P (dP - <dout, out>) * scale.  Both 0 past the diagonal. */
HAT_CLONES
static void dsoftmax_tile(float *S, float *dP, const float *lse, const float *dout,
                          const float *out, int ld, int m, int e, int t0, int D, float scale)
{
    for (int r = 0; r < m; r++) {
        float *p = S + (size_t)r * e, *dp = dP + (size_t)r * e, l = lse[r], di = 0;
        const float *go = dout + (size_t)r * ld, *o = out + (size_t)r * ld;
        int n = t0 + r + 1;
        #pragma omp simd reduction(+:di)
        for (int i = 0; i < D; i++) di += go[i] * o[i];
        #pragma omp simd
        for (int s = 0; s < n; s++) {
            float pr = vexpf(p[s] - l);
            p[s] = pr;
            dp[s] = pr * (dp[s] - di) * scale;
        }
        memset(p + n, 0, sizeof(float) * (e - n));
        memset(dp + n, 0, sizeof(float) * (e - n));
    }
}

void attention_forward(float *out, float *lse, float *scratch, const float *q,
                       const float *k, const float *v,
                       int B, int T, int H, int KV, int D)
{
    matmul_init();
    int grp = H / KV, nq = (T + ATT_TILE - 1) / ATT_TILE, HD = H * D, KD = KV * D;
    float scale = 1.0f / sqrtf((float)D);
    /* Tiles further down the sequence cost more: biggest first. */
    #pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (int i = nq - 1; i >= 0; i--)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                float *S = scratch + (size_t)omp_get_thread_num() * 2 * ATT_TILE * T;
                int t0 = i * ATT_TILE, m = T - t0 < ATT_TILE ? T - t0 : ATT_TILE, e = t0 + m;
                const float *Q = q + ((size_t)b * T + t0) * HD + (size_t)h * D;
                const float *K = k + (size_t)b * T * KD + (size_t)(h / grp) * D;
                const float *V = v + (size_t)b * T * KD + (size_t)(h / grp) * D;
                gemm_block(0, 1, m, e, D,
                            scale, Q, HD, K, KD, 0.0f, S, e);
                softmax_tile(S, lse + ((size_t)b * H + h) * T + t0, m, e, t0);
                gemm_block(0, 0, m, D, e,
                            1.0f, S, e, V, KD, 0.0f, out + ((size_t)b * T + t0) * HD + (size_t)h * D, HD);
            }
}

void attention_backward(float *dq, float *dk, float *dv, float *scratch,
                        const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v,
                        int B, int T, int H, int KV, int D)
{
    matmul_init();
    int grp = H / KV, nq = (T + ATT_TILE - 1) / ATT_TILE, HD = H * D, KD = KV * D;
    float scale = 1.0f / sqrtf((float)D);
    #pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int kh = 0; kh < KV; kh++) {
            float *S = scratch + (size_t)omp_get_thread_num() * 2 * ATT_TILE * T;
            float *dP = S + (size_t)ATT_TILE * T;
            size_t kv0 = (size_t)b * T * KD + (size_t)kh * D;
            for (int h = kh * grp; h < (kh + 1) * grp; h++)
                for (int i = 0; i < nq; i++) {
                    int t0 = i * ATT_TILE, m = T - t0 < ATT_TILE ? T - t0 : ATT_TILE, e = t0 + m;
                    size_t q0 = ((size_t)b * T + t0) * HD + (size_t)h * D;
                    gemm_block(0, 1, m, e, D,
                                scale, q + q0, HD, k + kv0, KD, 0.0f, S, e);
                    gemm_block(0, 1, m, e, D,
                                1.0f, dout + q0, HD, v + kv0, KD, 0.0f, dP, e);
                    dsoftmax_tile(S, dP, lse + ((size_t)b * H + h) * T + t0, dout + q0, out + q0,
                                  HD, m, e, t0, D, scale);
                    /* dq += dS k;  dk += dS^T q;  dv += P^T dout */
                    gemm_block(0, 0, m, D, e,
                                1.0f, dP, e, k + kv0, KD, 1.0f, dq + q0, HD);
                    gemm_block(1, 0, e, D, m,
                                1.0f, dP, e, q + q0, HD, 1.0f, dk + kv0, KD);
                    gemm_block(1, 0, e, D, m,
                                1.0f, S, e, dout + q0, HD, 1.0f, dv + kv0, KD);
                }
        }
}

/* ------------------------------------------------------------ reference */

void attention_forward_ref(float *out, float *att, const float *q,
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
void attention_backward_ref(float *dq, float *dk, float *dv, float *datt,
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

/* Vectorised per CPU; the caller parallelises over rows. */
HAT_CLONES
void attention_decode(float *out, float *scratch, const float *q,
                      const float *kc, const float *vc, int n_ctx,
                      int H, int KV, int D)
{
    int grp = H / KV;
    float scale = 1.0f / sqrtf((float)D);
    for (int h = 0; h < H; h++) {
        int kh = h / grp;
        const float *qr = q + (size_t)h * D;
        float *p = scratch + (size_t)h * n_ctx, mx = -INFINITY, sum = 0;
        for (int s = 0; s < n_ctx; s++) {
            const float *kr = kc + ((size_t)s * KV + kh) * D;
            float d = 0;
            #pragma omp simd reduction(+:d)
            for (int i = 0; i < D; i++) d += qr[i] * kr[i];
            p[s] = d * scale;
            mx = p[s] > mx ? p[s] : mx;
        }
        #pragma omp simd reduction(+:sum)
        for (int s = 0; s < n_ctx; s++) { p[s] = vexpf(p[s] - mx); sum += p[s]; }
        float inv = 1.0f / sum, *o = out + (size_t)h * D;
        memset(o, 0, sizeof(float) * D);
        for (int s = 0; s < n_ctx; s++) {
            float w = p[s] * inv;
            const float *vr = vc + ((size_t)s * KV + kh) * D;
            #pragma omp simd
            for (int i = 0; i < D; i++) o[i] += w * vr[i];
        }
    }
}
