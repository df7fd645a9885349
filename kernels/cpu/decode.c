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
 *     computed in a 4-row tile, in one half of a 16-lane register beside
 *     another row (AVX-512 tiles) or alone; threads split the outputs;
 *   - attention_rows: one (group of rows, kv head) task at a time, the
 *     rows of a group on the same shared prefix (the same keys, read from
 *     one copy, chunk by chunk for all of them), each row's scores and
 *     value chains those it computes alone against its own cache;
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
#include "util.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
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

/* hsum of a[0..3] into lanes 0..3, the same tree by exact shuffles: a
 * tile's four outputs of a row reduced and stored at once. */
typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4)));
typedef int v8i __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) v4 hsum4(const v8 *a)
{
    const v8i lo = { 0, 1, 2, 3, 8, 9, 10, 11 }, hi = { 4, 5, 6, 7, 12, 13, 14, 15 };
    const v8i e = { 0, 2, 8, 10, 4, 6, 12, 14 }, o = { 1, 3, 9, 11, 5, 7, 13, 15 };
    v8 u01 = __builtin_shuffle(a[0], a[1], lo) + __builtin_shuffle(a[0], a[1], hi);   /* a_k + a_k+4 */
    v8 u23 = __builtin_shuffle(a[2], a[3], lo) + __builtin_shuffle(a[2], a[3], hi);
    v8 h = __builtin_shuffle(u01, u23, e) + __builtin_shuffle(u01, u23, o);          /* pairs */
    return __builtin_shufflevector(h, h, 0, 4, 2, 6) + __builtin_shufflevector(h, h, 1, 5, 3, 7);
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
            v8 xv[MR];                                                                    \
            UNROLL for (int r = 0; r < MR; r++) xv[r] = *(const v8u *)(x + (size_t)r * C + k); \
            if (!(k & 15))                                                                \
                UNROLL for (int o = 0; o < NR; o++)                                       \
                    __builtin_prefetch(w + (size_t)(o + NR) * C + k);                     \
            UNROLL for (int o = 0; o < NR; o++) {                                         \
                v8 wv = *(const v8u *)(w + (size_t)o * C + k);                            \
                UNROLL for (int r = 0; r < MR; r++) acc[r][o] += xv[r] * wv;              \
            }                                                                             \
        }                                                                                 \
        if (NR % 4 == 0 && C8 == C) {                                                     \
            UNROLL for (int r = 0; r < MR; r++)                                           \
                UNROLL for (int o = 0; o < NR; o += 4) {                                  \
                    v4 s = hsum4(&acc[r][o]);                                             \
                    v4u *y = (v4u *)(out + (size_t)r * ldo + o);                          \
                    *y = beta != 0 ? *y + s : s;                                          \
                }                                                                         \
        } else                                                                            \
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

/* Rows [0,N) x outputs [0,no) of one output block.  Rows go in threes
 * and pairs against 8 outputs on AVX-512 (24 or 16 accumulators), 4 on
 * AVX2 (wide_tiles below), a lone row against 8: several weight rows
 * streamed at once, which is what keeps memory busy when the weights
 * come from DRAM (a 2-row verification then costs about what one row
 * does). */
#define ROWS_BLOCK(NAME, WT, DOT, WS)                                                     \
    HAT_CLONES                                                                            \
    static void NAME(float *out, const float *inp, const WT *wb, int N, int C, int no,    \
                     int ldo, float beta, int wide)                                       \
    {                                                                                     \
        int C8 = C / 8 * 8;                                                               \
        (void)C8;                                                                         \
        int n = 0;                                                                        \
        for (; n + 3 <= N && N - n != 4; n += 3) {                                        \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            if (wide) ROW_TILE(DOT, WS, 3, 8);                                            \
            else ROW_TILE(DOT, WS, 3, 4);                                                 \
        }                                                                                 \
        for (; n + 2 <= N; n += 2) {                                                      \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            if (wide) ROW_TILE(DOT, WS, 2, 8);                                            \
            else ROW_TILE(DOT, WS, 2, 4);                                                 \
        }                                                                                 \
        if (n < N) {                                                                      \
            const float *x = inp + (size_t)n * C;                                         \
            float *ob = out + (size_t)n * ldo;                                            \
            ROW_TILE(DOT, WS, 1, 8);                                                      \
        }                                                                                 \
    }

ROWS_BLOCK(rows_block, float, DOT_TILE, C)
ROWS_BLOCK(rows_block_bf16, uint32_t, DOT_TILE_BF16, C / 2)

/* Tiles sized to the vector registers: 3 or 2 rows x 8 outputs (24 or 16
 * accumulators) take AVX-512's 32; AVX2's 16 take 3 or 2 rows x 4 (each
 * weight vector loaded once and used by the tile's rows), where 2 x 8
 * spilled and ran at two thirds of the speed (session 19).  Which tile a
 * row falls in changes no bit (DOT_TILE), so this choice is free;
 * decode_avx512(0) takes the 16-register tiles on any CPU, so that tests
 * compare the two.  (libgcc fills the CPU model before main: the test is
 * a load.) */
static int z_off;                /* decode_avx512(0) */
static int wide_tiles(void)
{
    return !z_off && __builtin_cpu_supports("avx512vl") != 0;
}

/* Output blocks of OB weight rows (OB*C weights stay in L2 while every
 * row block passes over them); row blocks of RB rows. */
#define OB 64
#define RB 64

/* ------------------------------------------------------------ AVX-512 tiles
 * On a CPU with AVX-512 (x86-64-v4: the clone the kernels above run
 * there) the same dot products go two rows to a 16-lane register: rows
 * are packed in pairs, chunk c of the pair being [row a's 8 elements |
 * row b's], and each 8-element chunk of a weight row is broadcast to
 * both halves (a load-port broadcast).  Every lane still computes what
 * it computed in DOT_TILE (the same fused multiply-adds in the same
 * order), and the 8 lanes of each half are summed in hsum's tree, for 8
 * outputs at once, by exact shuffles: the same bits as the 8-lane tiles,
 * with half the multiply-add instructions.  Only for C % 8 == 0 (no
 * scalar tail) and at least two rows; a lone row keeps the 8-lane tile. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAT_Z 1
#include <immintrin.h>
#define ZTARGET __attribute__((target("arch=x86-64-v4")))

static int z_tiles(void)
{
    return !z_off && __builtin_cpu_supports("x86-64-v4") != 0;
}

/* An 8-lane shuffle of two vectors x, y (indices 0..7: x's lanes, 8..15:
 * y's) applied to both 8-lane halves of two 16-lane registers (X lanes
 * 0..15, Y 16..31 in permutex2var's terms), and the sum of two such
 * shuffles: one level of a tree of lane sums, for both halves at once. */
#define ZI(i, h) ((i) < 8 ? (i) + 8 * (h) : (i) + 8 + 8 * (h))
#define ZM(i0, i1, i2, i3, i4, i5, i6, i7)                                                \
    _mm512_set_epi32(ZI(i7, 1), ZI(i6, 1), ZI(i5, 1), ZI(i4, 1), ZI(i3, 1), ZI(i2, 1), ZI(i1, 1), \
                     ZI(i0, 1), ZI(i7, 0), ZI(i6, 0), ZI(i5, 0), ZI(i4, 0), ZI(i3, 0), ZI(i2, 0), \
                     ZI(i1, 0), ZI(i0, 0))
#define ZPAIR(x, y, e, o) _mm512_add_ps(_mm512_permutex2var_ps(x, e, y), _mm512_permutex2var_ps(x, o, y))

/* a[0..7]: each [row A's 8 lanes | row B's] of one output; returns
 * [A's 8 sums | B's], each hsum's tree of its lanes: (l, l+4), then
 * adjacent pairs twice. */
ZTARGET static inline __attribute__((always_inline)) __m512 zsum8(const __m512 *a)
{
    const __m512i e1 = ZM(0, 1, 2, 3, 8, 9, 10, 11), o1 = ZM(4, 5, 6, 7, 12, 13, 14, 15);
    const __m512i e2 = ZM(0, 2, 4, 6, 8, 10, 12, 14), o2 = ZM(1, 3, 5, 7, 9, 11, 13, 15);
    __m512 p0 = ZPAIR(a[0], a[1], e1, o1), p1 = ZPAIR(a[2], a[3], e1, o1);
    __m512 p2 = ZPAIR(a[4], a[5], e1, o1), p3 = ZPAIR(a[6], a[7], e1, o1);
    __m512 q0 = ZPAIR(p0, p1, e2, o2), q1 = ZPAIR(p2, p3, e2, o2);
    return ZPAIR(q0, q1, e2, o2);
}

/* The same for lanes8's tree (adjacent pairs, then pairs of pairs, then
 * halves): sum8x8 for both halves. */
ZTARGET static inline __attribute__((always_inline)) __m512 zlanes8x8(const __m512 *a)
{
    const __m512i e = ZM(0, 8, 2, 10, 4, 12, 6, 14), o = ZM(1, 9, 3, 11, 5, 13, 7, 15);
    const __m512i e2 = ZM(0, 1, 8, 9, 4, 5, 12, 13), o2 = ZM(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i e4 = ZM(0, 1, 2, 3, 8, 9, 10, 11), o4 = ZM(4, 5, 6, 7, 12, 13, 14, 15);
    __m512 p0 = ZPAIR(a[0], a[1], e, o), p1 = ZPAIR(a[2], a[3], e, o);
    __m512 p2 = ZPAIR(a[4], a[5], e, o), p3 = ZPAIR(a[6], a[7], e, o);
    __m512 q0 = ZPAIR(p0, p1, e2, o2), q1 = ZPAIR(p2, p3, e2, o2);
    return ZPAIR(q0, q1, e4, o4);
}

/* MP row pairs x NR outputs (NR 8 or 1) over nc chunks; xp: the first
 * pair's chunks, pairs nc*16 floats apart; rows of out ldo apart. */
#define ZDOT(MP, NR)                                                                      \
    do {                                                                                  \
        __m512 acc[MP][NR];                                                               \
        UNROLL for (int m = 0; m < MP; m++)                                               \
            UNROLL for (int o = 0; o < NR; o++) acc[m][o] = _mm512_setzero_ps();          \
        for (int c = 0; c < nc; c++) {                                                    \
            __m512 xv[MP];                                                                \
            UNROLL for (int m = 0; m < MP; m++) xv[m] = _mm512_load_ps(x + ((size_t)m * nc + c) * 16); \
            if (!(c & 1))                                                                 \
                UNROLL for (int o = 0; o < NR; o++)                                       \
                    __builtin_prefetch(w + (size_t)(o + NR) * C + 8 * c);                 \
            UNROLL for (int o = 0; o < NR; o++) {                                         \
                __m512 wv = _mm512_broadcast_f32x8(_mm256_loadu_ps(w + (size_t)o * C + 8 * c)); \
                UNROLL for (int m = 0; m < MP; m++) acc[m][o] = _mm512_fmadd_ps(xv[m], wv, acc[m][o]); \
            }                                                                             \
        }                                                                                 \
        for (int m = 0; m < MP; m++) {                                                    \
            float *ya = out + (size_t)(2 * m) * ldo, *yb = ya + ldo;                      \
            if (NR == 8) {                                                                \
                __m512 s = zsum8(acc[m]);                                                 \
                __m256 sa = _mm512_castps512_ps256(s), sb = _mm512_extractf32x8_ps(s, 1); \
                if (beta != 0) {                                                          \
                    sa = _mm256_add_ps(_mm256_loadu_ps(ya), sa);                          \
                    sb = _mm256_add_ps(_mm256_loadu_ps(yb), sb);                          \
                }                                                                         \
                _mm256_storeu_ps(ya, sa);                                                 \
                _mm256_storeu_ps(yb, sb);                                                 \
            } else {                                                                      \
                for (int o = 0; o < NR; o++) {                                            \
                    float sa = hsum((v8)_mm512_castps512_ps256(acc[m][o]));               \
                    float sb = hsum((v8)_mm512_extractf32x8_ps(acc[m][o], 1));            \
                    ya[o] = beta != 0 ? ya[o] + sa : sa;                                  \
                    yb[o] = beta != 0 ? yb[o] + sb : sb;                                  \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    } while (0)

#define ZROW_TILE(MP)                                                                     \
    do {                                                                                  \
        int o = 0;                                                                        \
        for (; o + 8 <= no; o += 8) {                                                     \
            const float *w = wb + (size_t)o * C;                                          \
            float *out = ob + o;                                                          \
            ZDOT(MP, 8);                                                                  \
        }                                                                                 \
        for (; o < no; o++) {                                                             \
            const float *w = wb + (size_t)o * C;                                          \
            float *out = ob + o;                                                          \
            ZDOT(MP, 1);                                                                  \
        }                                                                                 \
    } while (0)

/* Rows [0, N) (N even) of one output block from their packed pairs xp. */
ZTARGET static void rows_block_z(float *out, const float *xp, const float *wb, int N, int C, int no,
                                 int ldo, float beta)
{
    int nc = C / 8, P = N / 2, p = 0;
    for (; p + 3 <= P && P - p != 4; p += 3) {
        const float *x = xp + (size_t)p * nc * 16;
        float *ob = out + (size_t)(2 * p) * ldo;
        ZROW_TILE(3);
    }
    for (; p + 2 <= P; p += 2) {
        const float *x = xp + (size_t)p * nc * 16;
        float *ob = out + (size_t)(2 * p) * ldo;
        ZROW_TILE(2);
    }
    if (p < P) {
        const float *x = xp + (size_t)p * nc * 16;
        float *ob = out + (size_t)(2 * p) * ldo;
        ZROW_TILE(1);
    }
}

/* Per-thread scratch buffers of the decode kernels: grown, never shrunk,
 * and freed when the thread exits (a pthread key's destructor: serve's
 * scheduler threads come and go, and a __thread pointer alone would leak
 * its buffer with each). */
enum { SCRATCH_PAIRS, SCRATCH_GROUPS, SCRATCH_SLOTS };
typedef struct { void *p[SCRATCH_SLOTS]; size_t cap[SCRATCH_SLOTS]; } scratch_set;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static void scratch_free(void *v)
{
    scratch_set *s = v;
    for (int i = 0; i < SCRATCH_SLOTS; i++) free(s->p[i]);
    free(s);
}
static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }
/* At least bytes, 64-byte aligned, for slot of the calling thread; NULL
 * when memory is out. */
static void *thread_scratch(int slot, size_t bytes)
{
    pthread_once(&scratch_once, scratch_init);
    scratch_set *s = pthread_getspecific(scratch_key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s))) return NULL;
        pthread_setspecific(scratch_key, s);
    }
    if (bytes > s->cap[slot]) {
        size_t cap = (bytes + bytes / 2 + 63) / 64 * 64;
        void *p = aligned_alloc(64, cap);
        if (!p) return NULL;
        free(s->p[slot]);
        s->p[slot] = p;
        s->cap[slot] = cap;
    }
    return s->p[slot];
}

/* The packed pairs of rows [0, N & ~1) of inp, in a buffer of the
 * calling thread's. */
static const float *pack_pairs(const float *inp, int N, int C)
{
    float *buf = thread_scratch(SCRATCH_PAIRS, (size_t)(N / 2) * C * 2 * sizeof(float));
    if (!buf) return NULL;
    int nc = C / 8;
    for (int p = 0; p < N / 2; p++)
        for (int c = 0; c < nc; c++) {
            float *d = buf + ((size_t)p * nc + c) * 16;
            memcpy(d, inp + (size_t)(2 * p) * C + 8 * c, 8 * sizeof(float));
            memcpy(d + 8, inp + (size_t)(2 * p + 1) * C + 8 * c, 8 * sizeof(float));
        }
    return buf;
}

int decode_avx512(int on)
{
    int was = !z_off && __builtin_cpu_supports("x86-64-v4") != 0;
    z_off = !on;
    return was;
}

/* matmul_rows on AVX-512 tiles: 0, or -1 when they do not apply. */
static int matmul_rows_z(float *out, const float *inp, const float *w, int N, int C, int OC, float beta)
{
    if (N < 2 || C % 8 || !z_tiles()) return -1;
    const float *xp = pack_pairs(inp, N, C);
    if (!xp) return -1;
    int N2 = N & ~1, nb = (OC + OB - 1) / OB, nt = nthreads((double)N * C * OC);
    if (nt > nb) nt = nb;
    #pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int b = 0; b < nb; b++) {
        int o0 = b * OB, no = OC - o0 < OB ? OC - o0 : OB;
        for (int n0 = 0; n0 < N2; n0 += RB) {
            int nr = N2 - n0 < RB ? N2 - n0 : RB;
            rows_block_z(out + (size_t)n0 * OC + o0, xp + (size_t)n0 * C, w + (size_t)o0 * C, nr, C, no,
                         OC, beta);
        }
        if (N2 < N)       /* the odd row: the 8-lane tile, the same bits */
            rows_block(out + (size_t)N2 * OC + o0, inp + (size_t)N2 * C, w + (size_t)o0 * C, 1, C, no, OC,
                       beta, 0);
    }
    return 0;
}
#else
int decode_avx512(int on)
{
    z_off = !on;
    return 0;
}

static int matmul_rows_z(float *out, const float *inp, const float *w, int N, int C, int OC, float beta)
{
    return -1;
}
#endif

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
    if (!matmul_rows_z(out, inp, w, N, C, OC, beta)) return;
    MATMUL_ROWS(rows_block, C);
}

void matmul_rows_bf16(float *out, const float *inp, const uint32_t *w, int N, int C, int OC, float beta)
{
    MATMUL_ROWS(rows_block_bf16, C / 2);
}

/* bf16 of x, rounded to nearest even (NaN kept a NaN). */
void bf16_pack_rows(uint32_t *dst, const float *src, int OC, int C)
{
    for (size_t o = 0; o < (size_t)OC; o++)
        for (int g = 0; g < C; g += 16)
            for (int l = 0; l < 8; l++)
                dst[o * (C / 2) + g / 2 + l] = bf16_bits(src[o * C + g + l]) |
                                               bf16_bits(src[o * C + g + 8 + l]) << 16;
}

/* ------------------------------------------------------------ attention */

/* The 8 lanes of each of a[0..7] summed, ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)),
 * into lane k of the result for a[k]: 14 shuffles and 7 adds for 8 keys'
 * dot products, where summing each alone is a serial chain (the old
 * per-key reduction was two thirds of a rollout's time).  lanes8 below is
 * the same tree for one vector, so a key's score is the same bits whether
 * it falls in a block of 8 or in the tail. */
#define PAIR_SUM(a, b, lo, hi) (__builtin_shuffle(a, b, lo) + __builtin_shuffle(a, b, hi))

/* The first two levels for a[0..3]: lane k holds a[k]'s (l0+l1)+(l2+l3),
 * lane 4+k its (l4+l5)+(l6+l7). */
static inline __attribute__((always_inline)) v8 sum_quarters(const v8 *a)
{
    const v8i e = { 0, 8, 2, 10, 4, 12, 6, 14 }, o = { 1, 9, 3, 11, 5, 13, 7, 15 };
    const v8i e2 = { 0, 1, 8, 9, 4, 5, 12, 13 }, o2 = { 2, 3, 10, 11, 6, 7, 14, 15 };
    return PAIR_SUM(PAIR_SUM(a[0], a[1], e, o), PAIR_SUM(a[2], a[3], e, o), e2, o2);
}

static inline __attribute__((always_inline)) v8 sum8x8(const v8 *a)
{
    const v8i e4 = { 0, 1, 2, 3, 8, 9, 10, 11 }, o4 = { 4, 5, 6, 7, 12, 13, 14, 15 };
    return PAIR_SUM(sum_quarters(a), sum_quarters(a + 4), e4, o4);
}

/* The same tree for a[0..3] (lanes 0-3 of the result; 4-7 unspecified):
 * four keys' scores where eight accumulators per head would not fit in
 * 16 registers. */
static inline __attribute__((always_inline)) v8 sum4x8(const v8 *a)
{
    const v8i lo = { 0, 1, 2, 3, 0, 1, 2, 3 }, hi = { 4, 5, 6, 7, 4, 5, 6, 7 };
    v8 q = sum_quarters(a);
    return __builtin_shuffle(q, lo) + __builtin_shuffle(q, hi);
}

static inline __attribute__((always_inline)) float lanes8(v8 a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* Scaled scores q.k for keys [0, n) of one kv head (k0: its first key,
 * keys D apart), for G query heads at
 * once (q + h*D into p + h*ps): each an 8-lane dot product over D (chunks
 * in order), lanes summed as lanes8, then the D % 8 tail in order.  G = 2
 * loads each key once for both heads of a group: the same bits, half the
 * cache traffic (attention reads keys faster than L2 serves them).  KB
 * keys a block: 8, or 4 where G x 8 accumulators would spill (AVX2's 16
 * registers); the same bits. */
static inline __attribute__((always_inline)) void att_scores(float *p, size_t ps, const float *q, const float *k0,
                                                            int n, int D, float scale, int G, int KB)
{
    int D8 = D / 8 * 8, s = 0;
    size_t ks = D;
    for (; s + KB <= n; s += KB) {
        v8 acc[2][8];
        UNROLL for (int h = 0; h < G; h++) UNROLL for (int j = 0; j < KB; j++) acc[h][j] = (v8){ 0 };
        for (int i = 0; i < D8; i += 8) {
            v8 qv[2];
            UNROLL for (int h = 0; h < G; h++) qv[h] = *(const v8u *)(q + h * D + i);
            UNROLL for (int j = 0; j < KB; j++) {
                v8 kv = *(const v8u *)(k0 + (s + j) * ks + i);
                UNROLL for (int h = 0; h < G; h++) acc[h][j] += qv[h] * kv;
            }
        }
        UNROLL for (int h = 0; h < G; h++) {
            v8 dv = KB == 8 ? sum8x8(acc[h]) : sum4x8(acc[h]);
            if (D8 == D) {   /* no tail: the block's scores scaled and stored at once */
                if (KB == 8) *(v8u *)(p + h * ps + s) = dv * scale;
                else UNROLL for (int j = 0; j < 4; j++) p[h * ps + s + j] = dv[j] * scale;
                continue;
            }
            for (int j = 0; j < KB; j++) {
                float t = dv[j];
                for (int i = D8; i < D; i++) t += q[h * D + i] * k0[(s + j) * ks + i];
                p[h * ps + s + j] = t * scale;
            }
        }
    }
    for (; s < n; s++)
        for (int h = 0; h < G; h++) {
            v8 acc = { 0 };
            for (int i = 0; i < D8; i += 8) acc += *(const v8u *)(q + h * D + i) * *(const v8u *)(k0 + s * ks + i);
            float t = lanes8(acc);
            for (int i = D8; i < D; i++) t += q[h * D + i] * k0[s * ks + i];
            p[h * ps + s] = t * scale;
        }
}

/* o[0, D) = sum over keys s in order of p[s] * v[s] from 0, each element
 * its own chain, for G heads (p + h*ps into o + h*D); a block of VB (64,
 * or 32 where 2 x 64 would spill AVX2's registers; then 8) elements stays
 * in registers across the keys, where adding into o in
 * memory made every key a store-to-load round trip.  Keys [0, np) are
 * read from the shared prefix vp, keys [np, n) from the row's own cache
 * vc (indexed by position).  This call adds keys [s0, s1) to the chains:
 * from 0 when s0 == 0, else from the partial sums in o, so that running
 * the keys in pieces, splitting them at np, or G, changes no bit.  G = 2
 * halves the loads of V, as above. */
#define VROW(s) ((s) < np ? vp0 + (s) * vs : v0 + (s) * vs)
#define VBLOCK(S0, S1, BASE)                                                              \
    for (int s = (S0); s < (S1); s++) {                                                   \
        v8 w[2];                                                                          \
        UNROLL for (int h = 0; h < G; h++) w[h] = (v8){ 0 } + p[h * ps + s];              \
        UNROLL for (int j = 0; j < VB / 8; j++) {                                         \
            v8 x = *(const v8u *)((BASE) + s * vs + i + 8 * j);                           \
            UNROLL for (int h = 0; h < G; h++) acc[h][j] += w[h] * x;                     \
        }                                                                                 \
    }
static inline __attribute__((always_inline)) void att_values(float *o, const float *p, size_t ps,
                                                            const float *vp0, int np, const float *v0,
                                                            int s0, int s1, int D, int G, int VB)
{
    size_t vs = D;
    int i = 0, mid = np < s0 ? s0 : np > s1 ? s1 : np;
    for (; i + VB <= D; i += VB) {
        v8 acc[2][8];
        UNROLL for (int h = 0; h < G; h++) UNROLL for (int j = 0; j < VB / 8; j++)
            acc[h][j] = s0 ? *(const v8u *)(o + h * D + i + 8 * j) : (v8){ 0 };
        VBLOCK(s0, mid, vp0)
        VBLOCK(mid, s1, v0)
        UNROLL for (int h = 0; h < G; h++) UNROLL for (int j = 0; j < VB / 8; j++)
            *(v8u *)(o + h * D + i + 8 * j) = acc[h][j];
    }
    for (int h = 0; h < G; h++) {
        const float *ph = p + h * ps;
        float *oh = o + h * D;
        int i2 = i;
        for (; i2 + 8 <= D; i2 += 8) {
            v8 acc = s0 ? *(const v8u *)(oh + i2) : (v8){ 0 };
            for (int s = s0; s < s1; s++) acc += ((v8){ 0 } + ph[s]) * *(const v8u *)(VROW(s) + i2);
            *(v8u *)(oh + i2) = acc;
        }
        for (; i2 < D; i2++) {
            float t = s0 ? oh[i2] : 0;
            for (int s = s0; s < s1; s++) t += ph[s] * VROW(s)[i2];
            oh[i2] = t;
        }
    }
}
#undef VBLOCK
#undef VROW

/* Rows of one task (one kv head): NR (up to ATT_GROUP) rows on the same
 * shared prefix (or one row), their queries, outputs, lengths, and where
 * that kv head's keys and values start in the prefix (kp, vp) and in each
 * row's own cache (kc, vc), keys D floats apart. */
#define ATT_GROUP 16
#define ATT_CHUNK 64     /* prefix keys whose K or V rows stay in L1 while every row of a group uses them */
typedef struct {
    int nr, np;
    const float *kp, *vp;
    const float *q[ATT_GROUP], *kc[ATT_GROUP], *vc[ATT_GROUP];
    float *out[ATT_GROUP], *p[ATT_GROUP];
    int n[ATT_GROUP];
} att_group;

/* G query heads (h0 on) of the task's kv head for every row of a group: the
 * prefix keys chunk by chunk, each chunk for all rows while it is in L1
 * (rows of one prefix read it from the cache once, not once each); then
 * each row's own keys.  Every score and every value chain is what one row
 * alone computes. */
static inline __attribute__((always_inline)) void att_heads(const att_group *g, int h0, int D, int stride,
                                                           int G, int KB, int VB)
{
    float scale = 1.0f / sqrtf((float)D);
    size_t ks = D, hq = (size_t)h0 * D, hp = (size_t)h0 * stride;
    int np = g->np;
    for (int s0 = 0; s0 < np; s0 += ATT_CHUNK) {
        int c = np - s0 < ATT_CHUNK ? np - s0 : ATT_CHUNK;
        for (int r = 0; r < g->nr; r++)
            att_scores(g->p[r] + hp + s0, stride, g->q[r] + hq, g->kp + s0 * ks, c, D, scale, G, KB);
    }
    for (int r = 0; r < g->nr; r++) {
        att_scores(g->p[r] + hp + np, stride, g->q[r] + hq, g->kc[r] + np * ks, g->n[r] - np, D, scale, G, KB);
        for (int h = 0; h < G; h++) vsoftmax(g->p[r] + hp + (size_t)h * stride, g->n[r], NULL);
    }
    for (int s0 = 0; s0 < np; s0 += ATT_CHUNK) {
        int s1 = np - s0 < ATT_CHUNK ? np : s0 + ATT_CHUNK;
        for (int r = 0; r < g->nr; r++)
            att_values(g->out[r] + hq, g->p[r] + hp, stride, g->vp, np, g->vc[r], s0, s1, D, G, VB);
    }
    for (int r = 0; r < g->nr; r++)
        att_values(g->out[r] + hq, g->p[r] + hp, stride, g->vp, np, g->vc[r], np, g->n[r], D, G, VB);
}

/* The gq query heads of the task's kv head for a group's rows: two at a
 * time, in blocks that fit the registers (wide_tiles). */
HAT_CLONES
static void att_task(const att_group *g, int gq, int D, int stride)
{
    int h = 0, wide = wide_tiles();
    for (; h + 2 <= gq; h += 2)
        if (wide) att_heads(g, h, D, stride, 2, 8, 64);
        else att_heads(g, h, D, stride, 2, 4, 32);
    for (; h < gq; h++) att_heads(g, h, D, stride, 1, 8, 64);
}

#ifdef HAT_Z
/* ---- the same on AVX-512 tiles, two query heads to a register
 * Scores: a row's two query heads' chunk c packed as [head a | head b]
 * (all of q in registers), each key's chunk broadcast to both halves;
 * a lane computes what att_scores' lane does, and lanes8's tree sums
 * the 8 keys of a block for both heads at once (zlanes8x8).  Values:
 * 16 elements to a register, each element's chain over the keys in
 * order as in att_values.  So the same bits, with half the
 * multiply-add instructions and no horizontal sums of single keys. */
ZTARGET static inline __attribute__((always_inline)) void zatt_scores(float *p, size_t ps, const float *q,
                                                                     const float *k0, int n, int D, float scale)
{
    int nc = D / 8, s = 0;
    size_t ks = D;
    __m512 qz[16];
    UNROLL for (int c = 0; c < nc; c++)
        qz[c] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(q + 8 * c)),
                                   _mm256_loadu_ps(q + D + 8 * c), 1);
    const __m512 sc = _mm512_set1_ps(scale);
    for (; s + 8 <= n; s += 8) {
        __m512 acc[8];
        UNROLL for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
        UNROLL for (int c = 0; c < nc; c++)
            UNROLL for (int j = 0; j < 8; j++)
                acc[j] = _mm512_fmadd_ps(qz[c], _mm512_broadcast_f32x8(_mm256_loadu_ps(k0 + (s + j) * ks + 8 * c)),
                                         acc[j]);
        __m512 t = _mm512_mul_ps(zlanes8x8(acc), sc);
        _mm256_storeu_ps(p + s, _mm512_castps512_ps256(t));
        _mm256_storeu_ps(p + ps + s, _mm512_extractf32x8_ps(t, 1));
    }
    for (; s < n; s++) {
        __m512 acc = _mm512_setzero_ps();
        UNROLL for (int c = 0; c < nc; c++)
            acc = _mm512_fmadd_ps(qz[c], _mm512_broadcast_f32x8(_mm256_loadu_ps(k0 + s * ks + 8 * c)), acc);
        p[s] = lanes8((v8)_mm512_castps512_ps256(acc)) * scale;
        p[ps + s] = lanes8((v8)_mm512_extractf32x8_ps(acc, 1)) * scale;
    }
}

/* x is pinned in a register: GCC otherwise folds its load into both
 * heads' multiply-adds, two 64-byte loads a chunk where one does, and the
 * loop waits on the load ports (13% of the time of prefix rows, measured) */
#define ZVBLOCK(S0, S1, BASE)                                                             \
    for (int s = (S0); s < (S1); s++) {                                                   \
        __m512 w0 = _mm512_set1_ps(p[s]), w1 = _mm512_set1_ps(p[ps + s]);                 \
        UNROLL for (int j = 0; j < 4; j++) {                                              \
            if (j >= nb) break;                                                           \
            __m512 x = _mm512_loadu_ps((BASE) + s * vs + i + 16 * j);                     \
            __asm__("" : "+v"(x));                                                        \
            acc[0][j] = _mm512_fmadd_ps(w0, x, acc[0][j]);                                \
            acc[1][j] = _mm512_fmadd_ps(w1, x, acc[1][j]);                                \
        }                                                                                 \
    }
ZTARGET static inline __attribute__((always_inline)) void zatt_values(float *o, const float *p, size_t ps,
                                                                     const float *vp0, int np, const float *v0,
                                                                     int s0, int s1, int D)
{
    size_t vs = D;
    int mid = np < s0 ? s0 : np > s1 ? s1 : np;
    for (int i = 0; i < D; i += 64) {
        int nb = D - i >= 64 ? 4 : (D - i) / 16;
        __m512 acc[2][4];
        UNROLL for (int h = 0; h < 2; h++) UNROLL for (int j = 0; j < 4; j++)
            acc[h][j] = s0 && j < nb ? _mm512_loadu_ps(o + h * D + i + 16 * j) : _mm512_setzero_ps();
        ZVBLOCK(s0, mid, vp0)
        ZVBLOCK(mid, s1, v0)
        UNROLL for (int h = 0; h < 2; h++) UNROLL for (int j = 0; j < 4; j++)
            if (j < nb) _mm512_storeu_ps(o + h * D + i + 16 * j, acc[h][j]);
    }
}
#undef ZVBLOCK

/* att_heads for G = 2 on these tiles. */
ZTARGET static inline __attribute__((always_inline)) void zatt_heads(const att_group *g, int h0, int D, int stride)
{
    float scale = 1.0f / sqrtf((float)D);
    size_t ks = D, hq = (size_t)h0 * D, hp = (size_t)h0 * stride;
    int np = g->np;
    for (int s0 = 0; s0 < np; s0 += ATT_CHUNK) {
        int c = np - s0 < ATT_CHUNK ? np - s0 : ATT_CHUNK;
        for (int r = 0; r < g->nr; r++)
            zatt_scores(g->p[r] + hp + s0, stride, g->q[r] + hq, g->kp + s0 * ks, c, D, scale);
    }
    for (int r = 0; r < g->nr; r++) {
        zatt_scores(g->p[r] + hp + np, stride, g->q[r] + hq, g->kc[r] + np * ks, g->n[r] - np, D, scale);
        for (int h = 0; h < 2; h++) vsoftmax(g->p[r] + hp + (size_t)h * stride, g->n[r], NULL);
    }
    for (int s0 = 0; s0 < np; s0 += ATT_CHUNK) {
        int s1 = np - s0 < ATT_CHUNK ? np : s0 + ATT_CHUNK;
        for (int r = 0; r < g->nr; r++)
            zatt_values(g->out[r] + hq, g->p[r] + hp, stride, g->vp, np, g->vc[r], s0, s1, D);
    }
    for (int r = 0; r < g->nr; r++)
        zatt_values(g->out[r] + hq, g->p[r] + hp, stride, g->vp, np, g->vc[r], np, g->n[r], D);
}

/* att_task on these tiles: gq even, D a multiple of 16 up to 128 (q in
 * registers); the common head sizes with D a constant. */
ZTARGET static void zatt_task(const att_group *g, int gq, int D, int stride)
{
    for (int h = 0; h + 2 <= gq; h += 2) {
        if (D == 64) zatt_heads(g, h, 64, stride);
        else if (D == 128) zatt_heads(g, h, 128, stride);
        else zatt_heads(g, h, D, stride);
    }
}

static int zatt_fits(int gq, int D)
{
    return gq % 2 == 0 && D % 16 == 0 && D <= 128 && z_tiles();
}
#else
static void zatt_task(const att_group *g, int gq, int D, int stride) {}
static int zatt_fits(int gq, int D) { return 0; }
#endif

size_t attention_rows_scratch(int max_ctx, int H, int KV)
{
    return (size_t)omp_get_max_threads() * ATT_GROUP * (H / KV) * max_ctx;
}

/* Rows x and y read the same keys first: the same shared prefix, or, on
 * none, the same own cache (rows of one prompt being prefilled). */
static int same_source(const attn_rows *a, int x, int y)
{
    int px = a->n_pre ? a->n_pre[x] : 0, py = a->n_pre ? a->n_pre[y] : 0;
    if (px || py) return px == py && a->kp[x] == a->kp[y];
    return a->kc[x] == a->kc[y];
}

/* The rows in groups of one source (wherever they sit in the batch), up
 * to ATT_GROUP to a group, so that the keys they share are read once for
 * each group: a shared prefix, or the first keys of a cache that several
 * rows of a prompt attend to.  ord: the rows group by group, gs: where
 * each group starts in it (ng + 1 entries).  Returns ng.  O(R x groups). */
static int att_groups(const attn_rows *a, int R, int *ord, int *gs, unsigned char *taken)
{
    memset(taken, 0, R);
    int n = 0, ng = 0;
    for (int r = 0; r < R; r++) {
        if (taken[r]) continue;
        gs[ng++] = n;
        ord[n++] = r;
        taken[r] = 1;
        int cnt = 1;
        for (int r2 = r + 1; r2 < R; r2++) {
            if (taken[r2] || !same_source(a, r, r2)) continue;
            if (cnt == ATT_GROUP) { gs[ng++] = n; cnt = 0; }
            ord[n++] = r2;
            taken[r2] = 1;
            cnt++;
        }
    }
    gs[ng] = n;
    return ng;
}

void attention_rows(float *out, float *scratch, const float *q, const attn_rows *a, int R,
                    int H, int KV, int D, int max_ctx)
{
    int *ord = thread_scratch(SCRATCH_GROUPS, (size_t)R * (2 * sizeof(int) + 1) + sizeof(int));
    if (!ord) hat_die("attention_rows: out of memory");
    int *gs = ord + R;
    int ng = att_groups(a, R, ord, gs, (unsigned char *)(gs + R + 1));
    int g = H / KV;
    double work = 0;
    for (int r = 0; r < R; r++) work += (double)a->n_ctx[r] * H * D * 2;
    int nt = nthreads(work);
    int tasks = ng * KV, z = zatt_fits(g, D);
    #pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int t = 0; t < tasks; t++) {
        /* a group's kv heads one after the other: they interleave in its
         * caches, and the second reads what the prefetchers brought in
         * for the first (kv head major was 1.2x slower) */
        int gi = t / KV, kh = t % KV, r0 = ord[gs[gi]];
        att_group grp;
        grp.nr = gs[gi + 1] - gs[gi];
        grp.np = a->n_pre ? a->n_pre[r0] : 0;
        grp.kp = grp.np ? a->kp[r0] + (size_t)kh * grp.np * D : NULL;
        grp.vp = grp.np ? a->vp[r0] + (size_t)kh * grp.np * D : NULL;
        if (!grp.np && grp.nr > 1) {
            /* rows of one cache: the keys all of them attend to read
             * chunk by chunk as a prefix (a row's bits do not depend on
             * where its prefix ends) */
            grp.np = a->n_ctx[r0];
            for (int i = 1; i < grp.nr; i++)
                if (a->n_ctx[ord[gs[gi] + i]] < grp.np) grp.np = a->n_ctx[ord[gs[gi] + i]];
            grp.kp = a->kc[r0] + (size_t)kh * a->cs * D;
            grp.vp = a->vc[r0] + (size_t)kh * a->cs * D;
        }
        float *p = scratch + (size_t)omp_get_thread_num() * ATT_GROUP * g * max_ctx;
        for (int i = 0; i < grp.nr; i++) {
            int r = ord[gs[gi] + i];
            size_t at = ((size_t)r * H + (size_t)kh * g) * D;
            grp.q[i] = q + at;
            grp.out[i] = out + at;
            grp.kc[i] = a->kc[r] + (size_t)kh * a->cs * D;
            grp.vc[i] = a->vc[r] + (size_t)kh * a->cs * D;
            grp.n[i] = a->n_ctx[r];
            grp.p[i] = p + (size_t)i * g * max_ctx;
        }
        if (z) zatt_task(&grp, g, D, max_ctx);
        else att_task(&grp, g, D, max_ctx);
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
