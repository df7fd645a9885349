/* attention.cu — causal grouped-query attention on the GPU, forward and
 * backward, and the single-token decoding step against a KV cache.
 *
 * Training attention runs the plan of layout.h: batched cuBLAS GEMMs over
 * (batch, head) for S = scale Q K^T, O = P V and the backward products,
 * with two row kernels in between (causal softmax -> P and lse; and
 * P = exp(S - lse), dS = P (dP - <dO,O>) scale).  The saved state is the
 * CPU's: out and lse (B,H,T) only; backward recomputes P from lse.
 * The scores are materialised, (B*H,T,T) floats in the scratch: simple
 * and on tensor cores, at O(T^2) memory and twice the causal FLOPs (the
 * upper triangle is computed and masked).  A fused flash kernel is the
 * next rung of the ladder; it must match this one.
 * Pointer arrays for the batched calls are written by a small kernel
 * into the front of the scratch, so nothing is copied from the host. */
#include "cuda/common.cuh"
#include "cuda/layout.h"

#include <math.h>

template <typename T>
struct att_ctx {
    att_dims    d;
    void       *buf[ATT_NBUF];
    float      *lse;
    const void *ptrs;        /* 3 * B*H pointers in the scratch */
};

template <typename T>
static cudaDataType_t buf_type(int b)
{
    return b == ATT_S || b == ATT_DP ? CUDA_R_32F : blas_type<T>::v;
}

static size_t type_size(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

__global__ void fill_ptrs_kernel(void **pa, void **pb, void **pc, char *ba, char *bb, char *bc,
                                 att_operand a, att_operand b, att_operand c,
                                 int ea, int eb, int ec, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    pa[i] = ba + att_offset(&a, i) * ea;
    pb[i] = bb + att_offset(&b, i) * eb;
    pc[i] = bc + att_offset(&c, i) * ec;
}

template <typename T>
static void exec_gemm(void *vctx, const att_gemm *g)
{
    att_ctx<T> *x = (att_ctx<T> *)vctx;
    int n = g->batch;
    void **pa = (void **)x->ptrs, **pb = pa + n, **pc = pb + n;
    cudaDataType_t ta = buf_type<T>(g->a.buf), tb = buf_type<T>(g->b.buf), tc = buf_type<T>(g->c.buf);
    fill_ptrs_kernel<<<grid_for(n, 128), 128, 0, cuda_stream()>>>(
        pa, pb, pc, (char *)x->buf[g->a.buf], (char *)x->buf[g->b.buf], (char *)x->buf[g->c.buf],
        g->a, g->b, g->c, (int)type_size(ta), (int)type_size(tb), (int)type_size(tc), n);
    CUDA_LAUNCHED();
    gemm_cm c = gemm_rm_to_cm(g->g);
    float alpha = g->alpha, beta = g->beta;
    /* column-major: first operand = row-major B, second = row-major A */
    CUBLAS_CHECK(cublasGemmBatchedEx(cuda_blas(),
                                     c.ta ? CUBLAS_OP_T : CUBLAS_OP_N, c.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     c.m, c.n, c.k, &alpha,
                                     (const void *const *)pb, tb, c.lda,
                                     (const void *const *)pa, ta, c.ldb,
                                     &beta, (void *const *)pc, tc, c.ldc,
                                     n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* One warp per query row r = (b*H + h)*T + t, which is also lse's index. */
template <typename T>
__global__ void softmax_fwd_kernel(T *P, float *lse, const float *S, int rows, int Tn)
{
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    int n = r % Tn + 1;
    const float *s = S + (size_t)r * Tn;
    T *p = P + (size_t)r * Tn;
    float mx = -INFINITY, sum = 0;
    for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s[j]);
    mx = warp_max(mx);
    for (int j = lane; j < n; j += 32) sum += expf(s[j] - mx);
    sum = warp_sum(sum);
    float inv = 1.0f / sum;
    for (int j = lane; j < Tn; j += 32) st(p + j, j < n ? expf(s[j] - mx) * inv : 0.0f);
    if (lane == 0) lse[r] = mx + logf(sum);
}

template <typename T>
__global__ void softmax_bwd_kernel(T *P, T *dS, const float *S, const float *dP, const float *lse,
                                   const T *dout, const T *out, int rows, int Tn, int H, int D,
                                   float scale)
{
    int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    int t = r % Tn, bh = r / Tn, b = bh / H, h = bh % H, n = t + 1;
    size_t o = (((size_t)b * Tn + t) * H + h) * D;
    float di = 0;
    for (int i = lane; i < D; i += 32) di += ld(dout[o + i]) * ld(out[o + i]);
    di = warp_sum(di);
    const float *s = S + (size_t)r * Tn, *dp = dP + (size_t)r * Tn;
    T *p = P + (size_t)r * Tn, *ds = dS + (size_t)r * Tn;
    float l = lse[r];
    for (int j = lane; j < Tn; j += 32) {
        float pr = j < n ? expf(s[j] - l) : 0.0f;
        st(p + j, pr);
        st(ds + j, j < n ? pr * (dp[j] - di) * scale : 0.0f);
    }
}

template <typename T>
static void exec_softmax_fwd(void *vctx)
{
    att_ctx<T> *x = (att_ctx<T> *)vctx;
    int rows = x->d.B * x->d.H * x->d.T;
    softmax_fwd_kernel<T><<<grid_for(rows, 8), 256, 0, cuda_stream()>>>(
        (T *)x->buf[ATT_P], x->lse, (const float *)x->buf[ATT_S], rows, x->d.T);
    CUDA_LAUNCHED();
}

template <typename T>
static void exec_softmax_bwd(void *vctx)
{
    att_ctx<T> *x = (att_ctx<T> *)vctx;
    int rows = x->d.B * x->d.H * x->d.T;
    softmax_bwd_kernel<T><<<grid_for(rows, 8), 256, 0, cuda_stream()>>>(
        (T *)x->buf[ATT_P], (T *)x->buf[ATT_DS], (const float *)x->buf[ATT_S],
        (const float *)x->buf[ATT_DP], x->lse, (const T *)x->buf[ATT_DO],
        (const T *)x->buf[ATT_O], rows, x->d.T, x->d.H, x->d.D, x->d.scale);
    CUDA_LAUNCHED();
}

/* Carve the scratch: pointer arrays, then S, dP (float), P, dS (T). */
template <typename T>
static void att_setup(att_ctx<T> *x, float *scratch, float *lse, int B, int Tn, int H, int KV, int D)
{
    att_dims d = { B, Tn, H, KV, D, 1.0f / sqrtf((float)D) };
    x->d = d;
    x->lse = lse;
    for (int i = 0; i < ATT_NBUF; i++) x->buf[i] = NULL;
    size_t n = (size_t)B * H, tt = n * Tn * Tn, pf = (6 * n + 63) / 64 * 64;
    x->ptrs = scratch;
    float *S = scratch + pf;
    x->buf[ATT_S] = S;
    x->buf[ATT_DP] = S + tt;
    x->buf[ATT_P] = S + 2 * tt;
    x->buf[ATT_DS] = S + 3 * tt;
}

template <typename T>
static att_exec att_executor(att_ctx<T> *x)
{
    att_exec e = { exec_gemm<T>, exec_softmax_fwd<T>, exec_softmax_bwd<T>, x };
    return e;
}

template <typename T>
static void attention_fwd(T *out, float *lse, float *scratch, const T *q, const T *k, const T *v,
                          int B, int Tn, int H, int KV, int D)
{
    if (B <= 0 || Tn <= 0) return;
    att_ctx<T> x;
    att_setup(&x, scratch, lse, B, Tn, H, KV, D);
    x.buf[ATT_Q] = (void *)q;
    x.buf[ATT_K] = (void *)k;
    x.buf[ATT_V] = (void *)v;
    x.buf[ATT_O] = out;
    att_exec e = att_executor(&x);
    att_plan_forward(&x.d, &e);
}

template <typename T>
static void attention_bwd(T *dq, T *dk, T *dv, float *scratch, const T *dout, const T *out,
                          const float *lse, const T *q, const T *k, const T *v,
                          int B, int Tn, int H, int KV, int D)
{
    if (B <= 0 || Tn <= 0) return;
    att_ctx<T> x;
    att_setup(&x, scratch, (float *)lse, B, Tn, H, KV, D);
    x.buf[ATT_Q] = (void *)q;
    x.buf[ATT_K] = (void *)k;
    x.buf[ATT_V] = (void *)v;
    x.buf[ATT_O] = (void *)out;
    x.buf[ATT_DO] = (void *)dout;
    x.buf[ATT_DQ] = dq;
    x.buf[ATT_DK] = dk;
    x.buf[ATT_DV] = dv;
    att_exec e = att_executor(&x);
    att_plan_backward(&x.d, &e);
}

extern "C" size_t cuda_attention_scratch_floats(int B, int T, int H)
{
    return att_scratch_floats(B, T, H);
}

extern "C" void cuda_attention_forward(float *out, float *lse, float *scratch, const float *q,
                                       const float *k, const float *v,
                                       int B, int T, int H, int KV, int D)
{
    attention_fwd<float>(out, lse, scratch, q, k, v, B, T, H, KV, D);
}

extern "C" void cuda_attention_backward(float *dq, float *dk, float *dv, float *scratch,
                                        const float *dout, const float *out, const float *lse,
                                        const float *q, const float *k, const float *v,
                                        int B, int T, int H, int KV, int D)
{
    attention_bwd<float>(dq, dk, dv, scratch, dout, out, lse, q, k, v, B, T, H, KV, D);
}

extern "C" void cuda_attention_forward_bf16(hat_bf16 *out, float *lse, float *scratch,
                                            const hat_bf16 *q, const hat_bf16 *k, const hat_bf16 *v,
                                            int B, int T, int H, int KV, int D)
{
    attention_fwd<bf16>((bf16 *)out, lse, scratch, (const bf16 *)q, (const bf16 *)k,
                        (const bf16 *)v, B, T, H, KV, D);
}

extern "C" void cuda_attention_backward_bf16(hat_bf16 *dq, hat_bf16 *dk, hat_bf16 *dv, float *scratch,
                                             const hat_bf16 *dout, const hat_bf16 *out, const float *lse,
                                             const hat_bf16 *q, const hat_bf16 *k, const hat_bf16 *v,
                                             int B, int T, int H, int KV, int D)
{
    attention_bwd<bf16>((bf16 *)dq, (bf16 *)dk, (bf16 *)dv, scratch, (const bf16 *)dout,
                        (const bf16 *)out, lse, (const bf16 *)q, (const bf16 *)k,
                        (const bf16 *)v, B, T, H, KV, D);
}

/* ------------------------------------------------------------ decoding */

/* One block per query head: scores against the n_ctx cached keys into
 * scratch, softmax, then each thread owns output features and walks the
 * cached values in order (coalesced across the block). */
#define DECODE_THREADS 256
template <typename T>
__global__ void decode_kernel(T *out, float *scratch, const T *q, const T *kc, const T *vc,
                              int n_ctx, int H, int KV, int D, float scale)
{
    extern __shared__ float qs[];     /* (D) */
    __shared__ float red[32];
    int h = blockIdx.x, kh = h / (H / KV);
    float *p = scratch + (size_t)h * n_ctx;
    for (int i = threadIdx.x; i < D; i += blockDim.x) qs[i] = ld(q[(size_t)h * D + i]);
    __syncthreads();
    float mx = -INFINITY;
    for (int s = threadIdx.x; s < n_ctx; s += blockDim.x) {
        const T *kr = kc + ((size_t)s * KV + kh) * D;
        float d = 0;
        for (int i = 0; i < D; i++) d += qs[i] * ld(kr[i]);
        p[s] = d * scale;
        mx = fmaxf(mx, p[s]);
    }
    mx = block_max(mx, red);
    float sum = 0;
    for (int s = threadIdx.x; s < n_ctx; s += blockDim.x) {
        float e = expf(p[s] - mx);
        p[s] = e;
        sum += e;
    }
    sum = block_sum(sum, red);
    __syncthreads();                  /* every p[s] written before it is read */
    float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float o = 0;
        for (int s = 0; s < n_ctx; s++) o += p[s] * inv * ld(vc[((size_t)s * KV + kh) * D + i]);
        st(out + (size_t)h * D + i, o);
    }
}

template <typename T>
static void decode(T *out, float *scratch, const T *q, const T *kc, const T *vc,
                   int n_ctx, int H, int KV, int D)
{
    if (n_ctx <= 0) return;
    decode_kernel<T><<<H, DECODE_THREADS, D * sizeof(float), cuda_stream()>>>(
        out, scratch, q, kc, vc, n_ctx, H, KV, D, 1.0f / sqrtf((float)D));
    CUDA_LAUNCHED();
}

extern "C" void cuda_attention_decode(float *out, float *scratch, const float *q,
                                      const float *kc, const float *vc, int n_ctx,
                                      int H, int KV, int D)
{
    decode<float>(out, scratch, q, kc, vc, n_ctx, H, KV, D);
}

extern "C" void cuda_attention_decode_bf16(hat_bf16 *out, float *scratch, const hat_bf16 *q,
                                           const hat_bf16 *kc, const hat_bf16 *vc, int n_ctx,
                                           int H, int KV, int D)
{
    decode<bf16>((bf16 *)out, scratch, (const bf16 *)q, (const bf16 *)kc, (const bf16 *)vc,
                 n_ctx, H, KV, D);
}
