/* layout.h — the index arithmetic of the CUDA back end, in plain C so the
 * CPU tests can check it without a GPU.
 *
 * Two things live here:
 *   1. gemm_rm_to_cm: hat's tensors are row-major, cuBLAS is
 *      column-major.  A row-major product C = op(A) op(B) is the
 *      column-major product C^T = op(B)^T op(A)^T over the same bytes, so
 *      the call swaps the operands and the M/N sizes and keeps the
 *      transpose flags and leading dimensions.  Every cuBLAS call in
 *      kernels/cuda/ goes through this one mapping.
 *   2. The attention plan: causal GQA attention as batched GEMMs over
 *      (batch, head) plus row-softmax steps.  att_plan_forward/backward
 *      emit the steps to an executor; kernels/cuda/attention.cu runs them
 *      with cublasGemmBatchedEx and CUDA kernels, tests/unit/test_cuda.c
 *      runs the SAME plan with cblas (column-major, through the mapping
 *      above) and checks it against attention_forward_ref/backward_ref.
 * Functions marked HAT_HD are compiled for the device too. */
#ifndef HAT_CUDA_LAYOUT_H
#define HAT_CUDA_LAYOUT_H

#include <stddef.h>

#ifdef __CUDACC__
#define HAT_HD __host__ __device__
#else
#define HAT_HD
#endif

/* ------------------------------------------------ row-major GEMM mapping */

/* C (M,N) = alpha op(A) op(B) + beta C, all row-major; op = transpose
 * when the flag is 1.  lda/ldb/ldc are row strides. */
typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc;
} gemm_rm;

/* The same product as a column-major call: first operand is `a`
 * (= the row-major B), second is `b` (= the row-major A). */
typedef struct {
    int ta, tb, m, n, k, lda, ldb, ldc;
    int a_is_rm_b;    /* always 1: the column-major A is the row-major B */
} gemm_cm;

static inline gemm_cm gemm_rm_to_cm(gemm_rm g)
{
    gemm_cm c = { g.tb, g.ta, g.N, g.M, g.K, g.ldb, g.lda, g.ldc, 1 };
    return c;
}

/* ------------------------------------------------ attention plan */

/* Buffers the plan refers to.  Q/dQ/O/dO are (B,T,H,D); K/V/dK/dV are
 * (B,T,KV,D); the score-sized ones are (B*H, T, T) in the scratch. */
enum {
    ATT_Q, ATT_K, ATT_V, ATT_O, ATT_DO, ATT_DQ, ATT_DK, ATT_DV,
    ATT_S,      /* float scores, then float dP in backward */
    ATT_P,      /* probabilities, in the activation type */
    ATT_DP,     /* float dO V^T */
    ATT_DS,     /* dS, in the activation type */
    ATT_NBUF
};

/* Element offset of batch entry i into buffer `buf`:
 *   (i / nh) * bs + (((i % nh) * mul + add) / div) * hs
 * which covers "head h of batch b" (nh = H), "kv head of query head h"
 * (div = H/KV) and "query head kh*grp+g of kv head kh" (mul = grp,
 * add = g). */
typedef struct {
    int    buf;
    int    nh, mul, add, div;
    size_t bs, hs;
} att_operand;

static HAT_HD inline size_t att_offset(const att_operand *o, int i)
{
    return (size_t)(i / o->nh) * o->bs
         + (size_t)(((i % o->nh) * o->mul + o->add) / o->div) * o->hs;
}

/* One batched GEMM step: for every i < batch,
 * C_i = alpha op(A_i) op(B_i) + beta C_i (row-major, see gemm_rm). */
typedef struct {
    gemm_rm     g;
    float       alpha, beta;
    att_operand a, b, c;
    int         batch;
} att_gemm;

typedef struct {
    int   B, T, H, KV, D;
    float scale;            /* D^-0.5 */
} att_dims;

/* Executor callbacks.  softmax_fwd: S (scaled scores) -> P and lse,
 * causal.  softmax_bwd: S -> P = exp(S - lse), S' = dP (in ATT_DP) ->
 * dS = P (dP - <dO,O>) * scale, both 0 past the diagonal. */
typedef struct {
    void (*gemm)(void *ctx, const att_gemm *g);
    void (*softmax_fwd)(void *ctx);
    void (*softmax_bwd)(void *ctx);
    void *ctx;
} att_exec;

static inline att_operand att_op(int buf, int nh, int mul, int add, int div,
                                 size_t bs, size_t hs)
{
    att_operand o = { buf, nh, mul, add, div, bs, hs };
    return o;
}

/* Per (b,h) operands: query-side rows, kv-side rows of head h/grp, and
 * a (T,T) score matrix. */
static inline att_operand att_qside(const att_dims *d, int buf)
{
    return att_op(buf, d->H, 1, 0, 1, (size_t)d->T * d->H * d->D, (size_t)d->D);
}
static inline att_operand att_kvside(const att_dims *d, int buf)
{
    return att_op(buf, d->H, 1, 0, d->H / d->KV, (size_t)d->T * d->KV * d->D, (size_t)d->D);
}
static inline att_operand att_score(const att_dims *d, int buf)
{
    return att_op(buf, 1, 0, 0, 1, (size_t)d->T * d->T, 0);
}

/* S = scale Q K^T;  softmax;  O = P V. */
static inline void att_plan_forward(const att_dims *d, const att_exec *x)
{
    int T = d->T, D = d->D, HD = d->H * d->D, KD = d->KV * d->D, n = d->B * d->H;
    att_gemm s = { { 0, 1, T, T, D, HD, KD, T }, d->scale, 0.0f,
                   att_qside(d, ATT_Q), att_kvside(d, ATT_K), att_score(d, ATT_S), n };
    x->gemm(x->ctx, &s);
    x->softmax_fwd(x->ctx);
    att_gemm o = { { 0, 0, T, D, T, T, KD, HD }, 1.0f, 0.0f,
                   att_score(d, ATT_P), att_kvside(d, ATT_V), att_qside(d, ATT_O), n };
    x->gemm(x->ctx, &o);
}

/* Recompute S and P from lse; dP = dO V^T; dS; then
 * dQ += dS K (all heads at once: each (b,h) owns its dQ rows) and
 * dK += dS^T Q, dV += P^T dO one query head of each group at a time,
 * so that no two entries of one batched call write the same kv rows. */
static inline void att_plan_backward(const att_dims *d, const att_exec *x)
{
    int T = d->T, D = d->D, HD = d->H * d->D, KD = d->KV * d->D, n = d->B * d->H;
    int grp = d->H / d->KV, nkv = d->B * d->KV;
    att_gemm s = { { 0, 1, T, T, D, HD, KD, T }, d->scale, 0.0f,
                   att_qside(d, ATT_Q), att_kvside(d, ATT_K), att_score(d, ATT_S), n };
    x->gemm(x->ctx, &s);
    att_gemm dp = { { 0, 1, T, T, D, HD, KD, T }, 1.0f, 0.0f,
                    att_qside(d, ATT_DO), att_kvside(d, ATT_V), att_score(d, ATT_DP), n };
    x->gemm(x->ctx, &dp);
    x->softmax_bwd(x->ctx);
    att_gemm dq = { { 0, 0, T, D, T, T, KD, HD }, 1.0f, 1.0f,
                    att_score(d, ATT_DS), att_kvside(d, ATT_K), att_qside(d, ATT_DQ), n };
    x->gemm(x->ctx, &dq);
    size_t qb = (size_t)T * HD, kb = (size_t)T * KD, sb = (size_t)d->H * T * T;
    for (int g = 0; g < grp; g++) {
        /* entry i = (b, kh); query head kh*grp + g */
        att_operand sc = att_op(ATT_DS, d->KV, grp, g, 1, sb, (size_t)T * T);
        att_operand pc = att_op(ATT_P, d->KV, grp, g, 1, sb, (size_t)T * T);
        att_operand qh = att_op(ATT_Q, d->KV, grp, g, 1, qb, (size_t)D);
        att_operand oh = att_op(ATT_DO, d->KV, grp, g, 1, qb, (size_t)D);
        att_operand dk = att_op(ATT_DK, d->KV, 1, 0, 1, kb, (size_t)D);
        att_operand dv = att_op(ATT_DV, d->KV, 1, 0, 1, kb, (size_t)D);
        att_gemm gk = { { 1, 0, T, D, T, T, HD, KD }, 1.0f, 1.0f, sc, qh, dk, nkv };
        x->gemm(x->ctx, &gk);
        att_gemm gv = { { 1, 0, T, D, T, T, HD, KD }, 1.0f, 1.0f, pc, oh, dv, nkv };
        x->gemm(x->ctx, &gv);
    }
}

/* Scratch the CUDA attention needs, in floats: float S and dP, and P
 * and dS in the activation type (counted as floats, so enough for
 * either), plus room for the pointer arrays of the batched calls. */
static inline size_t att_scratch_floats(int B, int T, int H)
{
    size_t tt = (size_t)B * H * T * T;
    return 4 * tt + 3 * 2 * (size_t)B * H + 64;
}

#endif
