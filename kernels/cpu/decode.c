/* decode.c — row-invariant kernels for the decoding engine (CPU back end).
 *
 * The engine batches rows of unrelated sequences, and of one sequence's
 * prompt, draft and verification, through the same matmuls.  OpenBLAS
 * sgemm picks its blocking, and so the order of each K-long sum, from the
 * number of rows: a sequence's log-probs then depend at ~1e-6 on what
 * else shares the batch, and a prompt prefilled in one pass gets other
 * K/V bits than the same tokens fed one by one.  Every kernel here
 * computes an output row from its input row with one fixed sequence of
 * instructions whatever the number of rows, the tile a row falls in or
 * the thread count:
 *   - matmul_rows: each output element is the same 8-lane dot product
 *     (lanes summed in a fixed tree, then the tail), whether it is
 *     computed in a 4-row tile or alone; threads split the outputs;
 *   - attention_rows: one (row, kv head) task at a time against that
 *     row's own cache;
 *   - rmsnorm_rows, rope_rows, swiglu_rows: per-row loops.
 * So row r's bits depend only on row r: batch invariance, exact KV-cache
 * reuse and token-for-token speculative verification follow.
 *
 * Threading: an op opens a parallel region only when it has at least
 * PAR_MIN multiply-adds; below that the wake-up of a second thread costs
 * more than it saves (decoding one token of a 256-wide model is ~30
 * regions of a few microseconds each).  See generate.h on OMP_WAIT_POLICY. */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#define PAR_MIN (1 << 18)

typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));

static int nthreads(double work)
{
    return work < PAR_MIN ? 1 : omp_get_max_threads();
}

static inline float hsum(v8 a)
{
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* The tile loops must unroll completely so acc lives in registers (-O2
 * alone leaves it on the stack: 4x slower). */
#define UNROLL _Pragma("GCC unroll 16")

/* MR rows x NR outputs of dot products over C; every element goes through
 * the same statements (its own accumulator, chunks of 8, fixed tree, then
 * the scalar tail), so MR and NR do not change any bit.  Each cache line
 * of the tile's weights also asks for the next tile's line: one core
 * streaming weights from DRAM needs that many misses in flight (1.7x on
 * a 1-row matmul of 512x1536 weights). */
#define DOT_TILE(MR, NR)                                                                  \
    do {                                                                                  \
        v8 acc[MR][NR];                                                                   \
        UNROLL for (int r = 0; r < MR; r++)                                               \
            UNROLL for (int o = 0; o < NR; o++) acc[r][o] = (v8){ 0 };                    \
        for (int k = 0; k < C8; k += 8) {                                                 \
            v8 xv[MR], wv[NR];                                                            \
            UNROLL for (int r = 0; r < MR; r++) xv[r] = *(const v8u *)(x + (size_t)r * C + k); \
            if (!(k & 15))                                                                \
                UNROLL for (int o = 0; o < NR; o++)                                       \
                    __builtin_prefetch(w + (size_t)(o + NR) * C + k);                     \
            UNROLL for (int o = 0; o < NR; o++) wv[o] = *(const v8u *)(w + (size_t)o * C + k); \
            UNROLL for (int r = 0; r < MR; r++)                                           \
                UNROLL for (int o = 0; o < NR; o++) acc[r][o] += xv[r] * wv[o];           \
        }                                                                                 \
        for (int r = 0; r < MR; r++)                                                      \
            for (int o = 0; o < NR; o++) {                                                \
                float s = hsum(acc[r][o]);                                                \
                for (int k = C8; k < C; k++) s += x[(size_t)r * C + k] * w[(size_t)o * C + k]; \
                float *y = out + (size_t)r * ldo + o;                                     \
                *y = beta != 0 ? *y + s : s;                                              \
            }                                                                             \
    } while (0)

/* The same over packed bf16 weights (see bf16_pack_rows): a 32-byte load
 * holds 16 weights, k..k+7 in the low halves of its words and k+8..k+15
 * in the high halves, so widening is one shift and one mask, in the same
 * order of sums as the fp32 tile.  C is a multiple of 16. */
typedef unsigned int u32x8 __attribute__((vector_size(32)));
typedef unsigned int u32x8u __attribute__((vector_size(32), aligned(4)));
#define DOT_TILE_BF16(MR, NR)                                                             \
    do {                                                                                  \
        v8 acc[MR][NR];                                                                   \
        UNROLL for (int r = 0; r < MR; r++)                                               \
            UNROLL for (int o = 0; o < NR; o++) acc[r][o] = (v8){ 0 };                    \
        for (int k = 0; k < C; k += 16) {                                                 \
            v8 xa[MR], xb[MR];                                                            \
            UNROLL for (int r = 0; r < MR; r++) {                                         \
                xa[r] = *(const v8u *)(x + (size_t)r * C + k);                            \
                xb[r] = *(const v8u *)(x + (size_t)r * C + k + 8);                        \
            }                                                                             \
            if (!(k & 31))                                                                \
                UNROLL for (int o = 0; o < NR; o++)                                       \
                    __builtin_prefetch(w + (size_t)(o + NR) * (C / 2) + k / 2);           \
            UNROLL for (int o = 0; o < NR; o++) {                                         \
                u32x8 p = *(const u32x8u *)(w + (size_t)o * (C / 2) + k / 2);             \
                v8 wa = (v8)(p << 16), wb = (v8)(p & 0xffff0000u);                        \
                UNROLL for (int r = 0; r < MR; r++) acc[r][o] += xa[r] * wa;              \
                UNROLL for (int r = 0; r < MR; r++) acc[r][o] += xb[r] * wb;              \
            }                                                                             \
        }                                                                                 \
        for (int r = 0; r < MR; r++)                                                      \
            for (int o = 0; o < NR; o++) {                                                \
                float *y = out + (size_t)r * ldo + o;                                     \
                *y = beta != 0 ? *y + hsum(acc[r][o]) : hsum(acc[r][o]);                  \
            }                                                                             \
    } while (0)

/* MR rows of x against outputs [0,no): NR outputs at a time, then one by
 * one; weight rows are WS elements apart. */
#define ROW_TILE(DOT, WS, MR, NR)                                                         \
    do {                                                                                  \
        int o = 0;                                                                        \
        for (; o + NR <= no; o += NR) {                                                   \
            __typeof__(wb) w = wb + (size_t)o * (WS);                                     \
            float *out = ob + o;                                                          \
            DOT(MR, NR);                                                                  \
        }                                                                                 \
        for (; o < no; o++) {                                                             \
            __typeof__(wb) w = wb + (size_t)o * (WS);                                     \
            float *out = ob + o;                                                          \
            DOT(MR, 1);                                                                   \
        }                                                                                 \
    } while (0)

/* Rows [0,N) x outputs [0,no) of one output block.  Rows go in pairs
 * against 8 outputs: 16 accumulators, 10 loads per 16 multiply-adds, and
 * 8 weight rows streamed at once, which is what keeps memory busy when
 * the weights come from DRAM (a 2-row verification then costs about
 * what one row does). */
#define ROWS_BLOCK(NAME, WT, DOT, WS)                                                     \
    HAT_CLONES                                                                            \
    static void NAME(float *out, const float *inp, const WT *wb, int N, int C, int no,    \
                     int ldo, float beta, int wide)                                       \
    {                                                                                     \
        int C8 = C / 8 * 8;                                                               \
        (void)C8;                                                                         \
        int n = 0;                                                                        \
        for (; wide && n + 3 <= N && N - n != 4; n += 3) {                                \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            ROW_TILE(DOT, WS, 3, 8);                                                      \
        }                                                                                 \
        for (; n + 2 <= N; n += 2) {                                                      \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            ROW_TILE(DOT, WS, 2, 8);                                                      \
        }                                                                                 \
        if (n < N) {                                                                      \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            ROW_TILE(DOT, WS, 1, 8);                                                      \
        }                                                                                 \
    }

ROWS_BLOCK(rows_block, float, DOT_TILE, C)
ROWS_BLOCK(rows_block_bf16, uint32_t, DOT_TILE_BF16, C / 2)

/* 3-row tiles (24 accumulators) need the 32 vector registers of
 * AVX-512; with 16 they spill, and pairs are faster.  Which tile a row
 * falls in changes no bit (DOT_TILE), so this choice is free.  (libgcc
 * fills the CPU model before main: the test is a load.) */
static int wide_tiles(void)
{
    return __builtin_cpu_supports("avx512vl") != 0;
}

/* Output blocks of OB weight rows (OB*C weights stay in L2 while every
 * row block passes over them); row blocks of RB rows. */
#define OB 64
#define RB 64

#define MATMUL_ROWS(BLOCK, WS)                                                                \
    do {                                                                                  \
        int wide = wide_tiles();                                                          \
        int nb = (OC + OB - 1) / OB;                                                      \
        int nt = nthreads((double)N * C * OC);                                            \
        if (nt > nb) nt = nb;                                                             \
        _Pragma("omp parallel for schedule(static) num_threads(nt) if (nt > 1)")          \
        for (int b = 0; b < nb; b++) {                                                    \
            int o0 = b * OB, no = OC - o0 < OB ? OC - o0 : OB;                            \
            for (int n0 = 0; n0 < N; n0 += RB) {                                          \
                int nr = N - n0 < RB ? N - n0 : RB;                                       \
                BLOCK(out + (size_t)n0 * OC + o0, inp + (size_t)n0 * C, w + (size_t)o0 * (WS), \
                      nr, C, no, OC, beta, wide);                                         \
            }                                                                             \
        }                                                                                 \
    } while (0)

void matmul_rows(float *out, const float *inp, const float *w, int N, int C, int OC, float beta)
{
    MATMUL_ROWS(rows_block, C);
}

void matmul_rows_bf16(float *out, const float *inp, const uint32_t *w, int N, int C, int OC, float beta)
{
    MATMUL_ROWS(rows_block_bf16, C / 2);
}

/* bf16 of x, rounded to nearest even (NaN kept a NaN). */
static uint32_t bf16_bits(float x)
{
    union { float f; uint32_t u; } v = { x };
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (v.u >> 16) | 0x40;
    return (v.u + 0x7fffu + ((v.u >> 16) & 1)) >> 16;
}

void bf16_pack_rows(uint32_t *dst, const float *src, int OC, int C)
{
    for (size_t o = 0; o < (size_t)OC; o++)
        for (int g = 0; g < C; g += 16)
            for (int l = 0; l < 8; l++)
                dst[o * (C / 2) + g / 2 + l] = bf16_bits(src[o * C + g + l]) |
                                               bf16_bits(src[o * C + g + 8 + l]) << 16;
}

/* ------------------------------------------------------------ attention */

/* Query heads h0..h0+g-1 of one row, all reading kv head kh of a cache
 * (S, KV, D) rows 0..n-1.  Scores for the g heads are taken together so
 * each key row is loaded once. */
HAT_CLONES
static void att_task(float *out, float *p, const float *q, const float *kc, const float *vc,
                     int n, int g, int KV, int kh, int D, int stride)
{
    float scale = 1.0f / sqrtf((float)D);
    for (int s = 0; s < n; s++) {
        const float *kr = kc + ((size_t)s * KV + kh) * D;
        for (int h = 0; h < g; h++) {
            const float *qr = q + (size_t)h * D;
            float d = 0;
            #pragma omp simd reduction(+:d)
            for (int i = 0; i < D; i++) d += qr[i] * kr[i];
            p[(size_t)h * stride + s] = d * scale;
        }
    }
    for (int h = 0; h < g; h++) {
        float *ph = p + (size_t)h * stride, mx = -INFINITY, sum = 0;
        for (int s = 0; s < n; s++) mx = ph[s] > mx ? ph[s] : mx;
        #pragma omp simd reduction(+:sum)
        for (int s = 0; s < n; s++) { ph[s] = vexpf(ph[s] - mx); sum += ph[s]; }
        float inv = 1.0f / sum;
        #pragma omp simd
        for (int s = 0; s < n; s++) ph[s] *= inv;
        memset(out + (size_t)h * D, 0, sizeof(float) * D);
    }
    for (int s = 0; s < n; s++) {
        const float *vr = vc + ((size_t)s * KV + kh) * D;
        for (int h = 0; h < g; h++) {
            float wgt = p[(size_t)h * stride + s], *o = out + (size_t)h * D;
            #pragma omp simd
            for (int i = 0; i < D; i++) o[i] += wgt * vr[i];
        }
    }
}

size_t attention_rows_scratch(int max_ctx, int H, int KV)
{
    return (size_t)omp_get_max_threads() * (H / KV) * max_ctx;
}

void attention_rows(float *out, float *scratch, const float *q, float *const *kc,
                    float *const *vc, const int *n_ctx, int R, int H, int KV, int D, int max_ctx)
{
    int g = H / KV, tasks = R * KV;
    double work = 0;
    for (int r = 0; r < R; r++) work += (double)n_ctx[r] * H * D * 2;
    int nt = nthreads(work);
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int t = 0; t < tasks; t++) {
        int r = t / KV, kh = t % KV;
        float *p = scratch + (size_t)omp_get_thread_num() * g * max_ctx;
        att_task(out + ((size_t)r * H + (size_t)kh * g) * D, p, q + ((size_t)r * H + (size_t)kh * g) * D,
                 kc[r], vc[r], n_ctx[r], g, KV, kh, D, max_ctx);
    }
}

/* ------------------------------------------------------------ pointwise */

HAT_CLONES
static void norm_row(float *y, const float *x, const float *w, int C, float eps)
{
    double ss = 0;
    #pragma omp simd reduction(+:ss)
    for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / C + eps));
    #pragma omp simd
    for (int i = 0; i < C; i++) y[i] = w[i] * (x[i] * r);
}

void rmsnorm_rows(float *out, const float *inp, const float *w, int N, int C, float eps)
{
    int nt = nthreads((double)N * C * 4);
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int n = 0; n < N; n++) norm_row(out + (size_t)n * C, inp + (size_t)n * C, w, C, eps);
}

HAT_CLONES
static void swiglu_row(float *out, const float *gate, const float *up, int n)
{
    #pragma omp simd
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + vexpf(-g)) * up[i];
    }
}

void swiglu_rows(float *out, const float *gate, const float *up, int N, int I)
{
    int nt = nthreads((double)N * I * 8);
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int n = 0; n < N; n++)
        swiglu_row(out + (size_t)n * I, gate + (size_t)n * I, up + (size_t)n * I, I);
}

void rope_rows(float *x, const int *pos, const float *cos_t, const float *sin_t, int N, int nh, int D)
{
    int half = D / 2;
    for (int n = 0; n < N; n++) {
        const float *c = cos_t + (size_t)pos[n] * half, *s = sin_t + (size_t)pos[n] * half;
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)n * nh + h) * D;
            for (int j = 0; j < half; j++) {
                float a = v[j], b = v[j + half];
                v[j] = a * c[j] - b * s[j];
                v[j + half] = b * c[j] + a * s[j];
            }
        }
    }
}
