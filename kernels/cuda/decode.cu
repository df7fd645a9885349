/* decode.cu — the kernels of GPU decoding (decode_cuda.h).
 *
 * Batch-1 decoding reads every weight once per token and does two flops
 * per weight: it is bound by memory bandwidth, and by launch latency once
 * the weights stream fast.  So:
 *   - the products are GEMVs (one warp per output row or two, 16-byte
 *     non-allocating weight loads, several in flight per lane, fp32
 *     accumulation) instead of cuBLAS GEMMs with N = 1;
 *   - the rmsnorm before a product is folded into it (the input is
 *     normalised as it is read) and the statistic it needs is computed by
 *     the last block of the product that wrote the residual, so a layer is
 *     six launches: QKV, q/k-norm + RoPE + cache store, attention, O
 *     (+ residual), gate/up + SwiGLU, down (+ residual);
 *   - attention is flash-decoding: (split, kv head, row) blocks, each
 *     serving the H/KV query heads of one kv head, merged by the last
 *     block of each (row, kv head);
 *   - everything the host changes per step is read from device memory,
 *     so the whole step can be captured once in a CUDA graph and replayed.
 * Activations are fp32; weights and caches are float or bf16 (templates). */
#include "cuda/common.cuh"
#include "cuda/decode_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "util.h"
}

/* ------------------------------------------------------------ loads */

/* Eight consecutive weights, loaded with one or two 16-byte
 * non-allocating loads (weights are streamed once per token: keep L1 for
 * the activations). */
template <typename T> struct w8;
template <> struct w8<bf16> {
    uint4 v;
    __device__ __forceinline__ void load(const bf16 *p)
    {
        asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    }
    __device__ __forceinline__ void zero() { v = make_uint4(0, 0, 0, 0); }
    __device__ __forceinline__ void get(float *f) const
    {
        f[0] = __uint_as_float(v.x << 16); f[1] = __uint_as_float(v.x & 0xffff0000u);
        f[2] = __uint_as_float(v.y << 16); f[3] = __uint_as_float(v.y & 0xffff0000u);
        f[4] = __uint_as_float(v.z << 16); f[5] = __uint_as_float(v.z & 0xffff0000u);
        f[6] = __uint_as_float(v.w << 16); f[7] = __uint_as_float(v.w & 0xffff0000u);
    }
};
template <> struct w8<float> {
    float4 a, b;
    __device__ __forceinline__ static float4 ld4(const float *p)
    {
        float4 r;
        asm("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];"
            : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w) : "l"(p));
        return r;
    }
    __device__ __forceinline__ void load(const float *p) { a = ld4(p); b = ld4(p + 4); }
    __device__ __forceinline__ void zero() { a = b = make_float4(0, 0, 0, 0); }
    __device__ __forceinline__ void get(float *f) const
    {
        f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
        f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
    }
};

/* N consecutive elements (N = 1, 2, 4, 8) of a cache row as floats; p
 * aligned to N elements. */
template <int N>
__device__ __forceinline__ void ldn(float *o, const float *p)
{
    if constexpr (N >= 4) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            float4 v = *(const float4 *)(p + i);
            o[i] = v.x; o[i + 1] = v.y; o[i + 2] = v.z; o[i + 3] = v.w;
        }
    } else if constexpr (N == 2) {
        float2 v = *(const float2 *)p;
        o[0] = v.x; o[1] = v.y;
    } else {
        o[0] = *p;
    }
}
__device__ __forceinline__ void unpack2(float *o, unsigned u)
{
    o[0] = __uint_as_float(u << 16);
    o[1] = __uint_as_float(u & 0xffff0000u);
}
template <int N>
__device__ __forceinline__ void ldn(float *o, const bf16 *p)
{
    if constexpr (N == 8) {
        uint4 v = *(const uint4 *)p;
        unpack2(o, v.x); unpack2(o + 2, v.y); unpack2(o + 4, v.z); unpack2(o + 6, v.w);
    } else if constexpr (N == 4) {
        uint2 v = *(const uint2 *)p;
        unpack2(o, v.x); unpack2(o + 2, v.y);
    } else if constexpr (N == 2) {
        unpack2(o, *(const unsigned *)p);
    } else {
        o[0] = __bfloat162float(*p);
    }
}

/* The CPU's rmsnorm statistic: (float)(1 / sqrt(ss / n + eps)) in double. */
__device__ __forceinline__ float inv_rms_d(double ss, int n, float eps)
{
    return (float)(1.0 / sqrt(ss / n + (double)eps));
}

/* ------------------------------------------------------------ GEMV */

#define GEMV_WARPS 8
enum { GEMV_STORE = 0, GEMV_ADD = 1, GEMV_SWIGLU = 2 };

/* Rows [0, R) of x (R <= RT: RT is the unrolled register tile), outputs
 * o0 .. o0+NO-1 per warp.  Every lane walks the 8-element chunks lane,
 * lane+32, ... in order and the warp sums lanes in a fixed tree, so an
 * output's bits do not depend on R, RT, NO or the grid. */
template <typename T, int RT, int NO, bool VEC, int MODE>
__global__ void __launch_bounds__(GEMV_WARPS * 32)
gemv_kernel(float *out, const float *__restrict__ x, const T *__restrict__ w,
            const T *__restrict__ w2, int R, int C, int OC, const float *__restrict__ rstd,
            const float *__restrict__ nw, float *rstd_out, unsigned *counter, float eps)
{
    constexpr int NW = MODE == GEMV_SWIGLU ? 2 * NO : NO;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int o0 = (blockIdx.x * GEMV_WARPS + warp) * NO;
    const T *wr[NW];
    bool ok[NW];
#pragma unroll
    for (int n = 0; n < NW; n++) {
        int o = o0 + n % NO;
        ok[n] = o < OC;
        wr[n] = (MODE == GEMV_SWIGLU && n >= NO ? w2 : w) + (size_t)(ok[n] ? o : 0) * C;
    }
    float rs[RT];
#pragma unroll
    for (int r = 0; r < RT; r++) rs[r] = nw && r < R ? rstd[r] : 1.0f;
    float acc[NW][RT];
#pragma unroll
    for (int n = 0; n < NW; n++)
#pragma unroll
        for (int r = 0; r < RT; r++) acc[n][r] = 0.0f;

    if (VEC) {
        constexpr int U = RT <= 2 ? 4 : 2;          /* chunks in flight per lane */
        int nch = C >> 3;
        for (int c0 = 0; c0 < nch; c0 += 32 * U) {
            w8<T> wv[U][NW];
#pragma unroll
            for (int u = 0; u < U; u++) {
                int c = c0 + u * 32 + lane;
#pragma unroll
                for (int n = 0; n < NW; n++) {
                    if (c < nch && ok[n]) wv[u][n].load(wr[n] + (size_t)c * 8);
                    else wv[u][n].zero();
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                int c = c0 + u * 32 + lane;
                if (c >= nch) break;
                float nv[8];
                if (nw) {
                    float4 a = __ldg((const float4 *)(nw + c * 8)), b = __ldg((const float4 *)(nw + c * 8 + 4));
                    nv[0] = a.x; nv[1] = a.y; nv[2] = a.z; nv[3] = a.w;
                    nv[4] = b.x; nv[5] = b.y; nv[6] = b.z; nv[7] = b.w;
                }
                float wf[NW][8];
#pragma unroll
                for (int n = 0; n < NW; n++) wv[u][n].get(wf[n]);
#pragma unroll
                for (int r = 0; r < RT; r++) {
                    if (r >= R) break;
                    const float *xr = x + (size_t)r * C + c * 8;
                    float4 a = __ldg((const float4 *)xr), b = __ldg((const float4 *)(xr + 4));
                    float xv[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
                    if (nw) {
#pragma unroll
                        for (int i = 0; i < 8; i++) xv[i] = nv[i] * (xv[i] * rs[r]);
                    }
#pragma unroll
                    for (int n = 0; n < NW; n++)
#pragma unroll
                        for (int i = 0; i < 8; i++) acc[n][r] = fmaf(wf[n][i], xv[i], acc[n][r]);
                }
            }
        }
    } else {
        for (int k = lane; k < C; k += 32) {
            float wf[NW];
#pragma unroll
            for (int n = 0; n < NW; n++) wf[n] = ok[n] ? ld(wr[n][k]) : 0.0f;
#pragma unroll
            for (int r = 0; r < RT; r++) {
                if (r >= R) break;
                float xv = x[(size_t)r * C + k];
                if (nw) xv = nw[k] * (xv * rs[r]);
#pragma unroll
                for (int n = 0; n < NW; n++) acc[n][r] = fmaf(wf[n], xv, acc[n][r]);
            }
        }
    }
#pragma unroll
    for (int n = 0; n < NW; n++)
#pragma unroll
        for (int r = 0; r < RT; r++) acc[n][r] = warp_sum(acc[n][r]);
    if (lane == 0) {
#pragma unroll
        for (int n = 0; n < NO; n++) {
            if (!ok[n]) continue;
#pragma unroll
            for (int r = 0; r < RT; r++) {
                if (r >= R) break;
                float *y = out + (size_t)r * OC + o0 + n;
                if (MODE == GEMV_STORE) *y = acc[n][r];
                else if (MODE == GEMV_ADD) *y += acc[n][r];
                else {
                    float g = acc[n][r];
                    *y = g / (1.0f + expf(-g)) * acc[n + NO][r];
                }
            }
        }
    }
    if (MODE != GEMV_ADD || !rstd_out) return;
    /* The last block to finish computes the rmsnorm statistic of the rows
     * just written (the classic threadfence reduction). */
    __shared__ bool last;
    __shared__ double sh[32];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int i = threadIdx.x; i < OC; i += blockDim.x) {
            float v = __ldcg(out + (size_t)r * OC + i);
            ss += (double)v * v;
        }
        ss = block_sum(ss, sh);
        if (threadIdx.x == 0) rstd_out[r] = inv_rms_d(ss, OC, eps);
    }
    if (threadIdx.x == 0) *counter = 0;
}

template <typename T, int RT, int MODE>
static void gemv_launch(float *out, const float *x, const T *w, const T *w2, int R, int C, int OC,
                        const float *rstd, const float *nw, float *rstd_out, unsigned *counter,
                        float eps)
{
    bool vec = C % 8 == 0;
    /* two outputs per warp when that still gives two blocks per SM */
    bool two = MODE != GEMV_SWIGLU && OC / (GEMV_WARPS * 2) >= 2 * cuda_sm_count();
    int per = GEMV_WARPS * (two ? 2 : 1);
    dim3 grid((OC + per - 1) / per), block(GEMV_WARPS * 32);
    cudaStream_t s = cuda_stream();
#define GL(NO, V) gemv_kernel<T, RT, NO, V, MODE><<<grid, block, 0, s>>>( \
        out, x, w, w2, R, C, OC, rstd, nw, rstd_out, counter, eps)
    if (two && vec) GL(2, true);
    else if (two) GL(2, false);
    else if (vec) GL(1, true);
    else GL(1, false);
#undef GL
    CUDA_LAUNCHED();
}

template <typename T, int MODE>
static void gemv_rows(float *out, const float *x, const T *w, const T *w2, int R, int C, int OC,
                      const float *rstd, const float *nw, float *rstd_out, unsigned *counter,
                      float eps)
{
    if (R <= 0 || OC <= 0) return;
    if (R > DEC_GEMV_MAX_ROWS) {
        fprintf(stderr, "%s: cuda: dec_gemv: %d rows (at most %d)\n", hat_prog ? hat_prog : "hat",
                R, DEC_GEMV_MAX_ROWS);
        exit(1);
    }
    if (R == 1) gemv_launch<T, 1, MODE>(out, x, w, w2, R, C, OC, rstd, nw, rstd_out, counter, eps);
    else if (R == 2) gemv_launch<T, 2, MODE>(out, x, w, w2, R, C, OC, rstd, nw, rstd_out, counter, eps);
    else if (R <= 4) gemv_launch<T, 4, MODE>(out, x, w, w2, R, C, OC, rstd, nw, rstd_out, counter, eps);
    else gemv_launch<T, 8, MODE>(out, x, w, w2, R, C, OC, rstd, nw, rstd_out, counter, eps);
}

extern "C" void dec_gemv(float *out, const float *x, const void *w, dec_type wt, int R, int C,
                         int OC, const float *rstd, const float *nw, int accumulate,
                         float *rstd_out, unsigned *counter, float eps)
{
    if (wt == DEC_BF16) {
        if (accumulate)
            gemv_rows<bf16, GEMV_ADD>(out, x, (const bf16 *)w, NULL, R, C, OC, rstd, nw, rstd_out,
                                      counter, eps);
        else
            gemv_rows<bf16, GEMV_STORE>(out, x, (const bf16 *)w, NULL, R, C, OC, rstd, nw, NULL,
                                        NULL, eps);
    } else {
        if (accumulate)
            gemv_rows<float, GEMV_ADD>(out, x, (const float *)w, NULL, R, C, OC, rstd, nw, rstd_out,
                                       counter, eps);
        else
            gemv_rows<float, GEMV_STORE>(out, x, (const float *)w, NULL, R, C, OC, rstd, nw, NULL,
                                         NULL, eps);
    }
}

extern "C" void dec_gemv_swiglu(float *out, const float *x, const void *wg, const void *wu,
                                dec_type wt, int R, int C, int OC, const float *rstd,
                                const float *nw)
{
    if (wt == DEC_BF16)
        gemv_rows<bf16, GEMV_SWIGLU>(out, x, (const bf16 *)wg, (const bf16 *)wu, R, C, OC, rstd,
                                     nw, NULL, NULL, 0.0f);
    else
        gemv_rows<float, GEMV_SWIGLU>(out, x, (const float *)wg, (const float *)wu, R, C, OC, rstd,
                                      nw, NULL, NULL, 0.0f);
}

/* ------------------------------------------------------------ rows */

#define ROW_THREADS 256

template <typename T>
__global__ void __launch_bounds__(ROW_THREADS)
embed_kernel(float *x, float *rstd, const int *tok, const T *wte, int C, float eps)
{
    __shared__ double sh[32];
    int r = blockIdx.x;
    const T *e = wte + (size_t)tok[r] * C;
    float *y = x + (size_t)r * C;
    double ss = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float v = ld(e[i]);
        y[i] = v;
        ss += (double)v * v;
    }
    ss = block_sum(ss, sh);
    if (threadIdx.x == 0) rstd[r] = inv_rms_d(ss, C, eps);
}

extern "C" void dec_embed(float *x, float *rstd, const int *tok, const void *wte, dec_type wt,
                          int R, int C, float eps)
{
    if (R <= 0) return;
    if (wt == DEC_BF16)
        embed_kernel<bf16><<<R, ROW_THREADS, 0, cuda_stream()>>>(x, rstd, tok, (const bf16 *)wte, C, eps);
    else
        embed_kernel<float><<<R, ROW_THREADS, 0, cuda_stream()>>>(x, rstd, tok, (const float *)wte, C, eps);
    CUDA_LAUNCHED();
}

__global__ void __launch_bounds__(ROW_THREADS)
rstd_kernel(float *rstd, const float *x, int C, float eps)
{
    __shared__ double sh[32];
    const float *y = x + (size_t)blockIdx.x * C;
    double ss = 0;
    for (int i = threadIdx.x; i < C; i += blockDim.x) ss += (double)y[i] * y[i];
    ss = block_sum(ss, sh);
    if (threadIdx.x == 0) rstd[blockIdx.x] = inv_rms_d(ss, C, eps);
}

extern "C" void dec_rstd_rows(float *rstd, const float *x, int R, int C, float eps)
{
    if (R <= 0) return;
    rstd_kernel<<<R, ROW_THREADS, 0, cuda_stream()>>>(rstd, x, C, eps);
    CUDA_LAUNCHED();
}

/* Rows in grid x (a long prefill has more rows than grid y allows). */
template <typename T>
__global__ void norm_kernel(T *out, const float *x, const float *rstd, const float *nw, int C)
{
    int r = blockIdx.x;
    float rs = rstd ? rstd[r] : 1.0f;
    for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < C; i += gridDim.y * blockDim.x) {
        float v = x[(size_t)r * C + i];
        st(out + (size_t)r * C + i, nw ? nw[i] * (v * rs) : v);
    }
}

extern "C" void dec_norm_rows(void *out, dec_type ot, const float *x, const float *rstd,
                              const float *nw, int R, int C)
{
    if (R <= 0) return;
    unsigned cb = grid_for(C, ROW_THREADS);
    dim3 grid(R, cb < 65535 ? cb : 65535);
    if (ot == DEC_BF16)
        norm_kernel<bf16><<<grid, ROW_THREADS, 0, cuda_stream()>>>((bf16 *)out, x, rstd, nw, C);
    else
        norm_kernel<float><<<grid, ROW_THREADS, 0, cuda_stream()>>>((float *)out, x, rstd, nw, C);
    CUDA_LAUNCHED();
}

template <typename T>
__global__ void swiglu_kernel(T *out, const float *gate, const float *up, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float g = gate[i];
        st(out + i, g / (1.0f + expf(-g)) * up[i]);
    }
}

extern "C" void dec_swiglu(void *out, dec_type ot, const float *gate, const float *up, size_t n)
{
    if (!n) return;
    if (ot == DEC_BF16)
        swiglu_kernel<bf16><<<grid_for(n, 256), 256, 0, cuda_stream()>>>((bf16 *)out, gate, up, n);
    else
        swiglu_kernel<float><<<grid_for(n, 256), 256, 0, cuda_stream()>>>((float *)out, gate, up, n);
    CUDA_LAUNCHED();
}

__global__ void gather_kernel(float *dst, float *rstd_dst, const float *x, const float *rstd,
                              const int *rows, int C)
{
    int i = blockIdx.x, src = rows[i];
    for (int k = threadIdx.x; k < C; k += blockDim.x) dst[(size_t)i * C + k] = x[(size_t)src * C + k];
    if (threadIdx.x == 0 && rstd_dst) rstd_dst[i] = rstd[src];
}

extern "C" void dec_gather_rows(float *dst, float *rstd_dst, const float *x, const float *rstd,
                                const int *rows, int n, int C)
{
    if (n <= 0) return;
    gather_kernel<<<n, ROW_THREADS, 0, cuda_stream()>>>(dst, rstd_dst, x, rstd, rows, C);
    CUDA_LAUNCHED();
}

extern "C" void dec_gemm(float *out, const void *inp, const void *w, dec_type t, int R, int C,
                         int OC, float beta)
{
    if (R <= 0 || OC <= 0) return;
    cudaDataType_t dt = t == DEC_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    gemm_rm g = { 0, 1, R, OC, C, C, C, OC };
    cuda_gemm_rm(g, 1.0f, inp, dt, w, dt, beta, out, CUDA_R_32F);
}

/* ------------------------------------------------------------ q/k norm, RoPE, cache */

#define QK_WARPS 4

/* One warp per head of one row: q heads, then k heads, then v heads. */
template <typename T>
__global__ void __launch_bounds__(QK_WARPS * 32)
qk_rope_kernel(float *qkv, const int *pos, const int *slot, T *kc, T *vc, size_t slot_stride,
               size_t layer_off, const float *qn, const float *kn, const float *cos_t,
               const float *sin_t, int H, int KV, int D, float eps)
{
    int r = blockIdx.x, lane = threadIdx.x & 31;
    int hh = blockIdx.y * QK_WARPS + (threadIdx.x >> 5), NH = H + 2 * KV;
    if (hh >= NH) return;
    int p = pos[r], half = D / 2;
    size_t KD = (size_t)KV * D;
    float *v = qkv + (size_t)r * NH * D + (size_t)hh * D;
    size_t cb = (size_t)slot[r] * slot_stride + layer_off + (size_t)p * KD;
    if (hh >= H + KV) {                                   /* a v head: store */
        T *dst = vc + cb + (size_t)(hh - H - KV) * D;
        for (int i = lane; i < D; i += 32) st(dst + i, v[i]);
        return;
    }
    const float *w = hh < H ? qn : kn;
    double ss = 0;
    for (int i = lane; i < D; i += 32) ss += (double)v[i] * v[i];
    ss = warp_sum(ss);
    float rs = inv_rms_d(ss, D, eps);
    const float *c = cos_t + (size_t)p * half, *s = sin_t + (size_t)p * half;
    T *dst = kc + cb + (size_t)(hh - H) * D;
    for (int j = lane; j < half; j += 32) {
        float a = w[j] * (v[j] * rs), b = w[j + half] * (v[j + half] * rs);
        float y0 = a * c[j] - b * s[j], y1 = b * c[j] + a * s[j];
        if (hh < H) { v[j] = y0; v[j + half] = y1; }
        else { st(dst + j, y0); st(dst + j + half, y1); }
    }
}

extern "C" void dec_qk_rope_store(float *qkv, const int *pos, const int *slot, void *kc, void *vc,
                                  dec_type ct, size_t slot_stride, size_t layer_off,
                                  const float *qn, const float *kn, const float *cos_t,
                                  const float *sin_t, int R, int H, int KV, int D, float eps)
{
    if (R <= 0) return;
    dim3 grid(R, (H + 2 * KV + QK_WARPS - 1) / QK_WARPS);
    if (ct == DEC_BF16)
        qk_rope_kernel<bf16><<<grid, QK_WARPS * 32, 0, cuda_stream()>>>(
            qkv, pos, slot, (bf16 *)kc, (bf16 *)vc, slot_stride, layer_off, qn, kn, cos_t, sin_t,
            H, KV, D, eps);
    else
        qk_rope_kernel<float><<<grid, QK_WARPS * 32, 0, cuda_stream()>>>(
            qkv, pos, slot, (float *)kc, (float *)vc, slot_stride, layer_off, qn, kn, cos_t, sin_t,
            H, KV, D, eps);
    CUDA_LAUNCHED();
}

/* ------------------------------------------------------------ attention */

#define ATT_WARPS 4

static size_t att_smem_bytes(int G, int D)
{
    /* q (G,D); per warp: max and sum (G), output (G,D) */
    return sizeof(float) * ((size_t)G * D + 2 * ATT_WARPS * G + (size_t)ATT_WARPS * G * D);
}

/* Block (row r, kv head kh, split s): rows in grid x, which has room for
 * the longest prefill.  Keys in steps of 32 positions per
 * warp: lane = position for the scores (each lane reads its key row with
 * 16-byte loads and dots it with the G query heads from shared memory),
 * then lane = feature for the values (coalesced rows).  Online softmax
 * per warp, merged across warps, then across splits by the last block. */
template <typename T, int DJ, int GM>
__global__ void __launch_bounds__(ATT_WARPS * 32)
att_kernel(float *out, const float *qkv, const int *pos, const int *slot, const T *kc,
           const T *vc, size_t slot_stride, size_t layer_off, int H, int KV, int D, int nsplit,
           float *part, unsigned *counters, float scale)
{
    extern __shared__ float sm[];
    __shared__ bool last;
    int r = blockIdx.x, kh = blockIdx.y, s = blockIdx.z;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = H / KV;
    int n_ctx = pos[r] + 1;
    size_t KD = (size_t)KV * D, base = (size_t)slot[r] * slot_stride + layer_off;
    const T *K = kc + base + (size_t)kh * D, *V = vc + base + (size_t)kh * D;
    float *qs = sm, *wm = qs + G * D, *wl = wm + ATT_WARPS * G, *wo = wl + ATT_WARPS * G;
    const float *q = qkv + (size_t)r * (H + 2 * KV) * D + (size_t)kh * G * D;
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) qs[i] = q[i];
    __syncthreads();

    int chunk = (n_ctx + nsplit - 1) / nsplit;
    chunk = (chunk + 31) & ~31;
    int p0 = s * chunk, p1 = min(n_ctx, p0 + chunk);
    float m[GM], l[GM], acc[GM][DJ];
#pragma unroll
    for (int g = 0; g < GM; g++) {
        m[g] = -INFINITY;
        l[g] = 0;
#pragma unroll
        for (int j = 0; j < DJ; j++) acc[g][j] = 0;
    }
    bool dl = lane * DJ < D;                     /* this lane owns features lane*DJ.. */
    for (int b = p0 + warp * 32; b < p1; b += ATT_WARPS * 32) {
        int p = b + lane;
        float sc[GM];
#pragma unroll
        for (int g = 0; g < GM; g++) sc[g] = 0;
        if (p < p1) {
            const T *kr = K + (size_t)p * KD;
            for (int d = 0; d < D; d += 8) {
                float kv[8];
                ldn<8>(kv, kr + d);
#pragma unroll
                for (int g = 0; g < GM; g++) {
                    if (g >= G) break;
#pragma unroll
                    for (int i = 0; i < 8; i++) sc[g] = fmaf(qs[g * D + d + i], kv[i], sc[g]);
                }
            }
#pragma unroll
            for (int g = 0; g < GM; g++) sc[g] *= scale;
        } else {
#pragma unroll
            for (int g = 0; g < GM; g++) sc[g] = -INFINITY;
        }
#pragma unroll
        for (int g = 0; g < GM; g++) {
            if (g >= G) break;
            float mn = fmaxf(m[g], warp_max(sc[g]));
            float corr = expf(m[g] - mn);        /* 0 on the first step (m = -inf) */
            float e = expf(sc[g] - mn);          /* 0 past the end */
            l[g] = l[g] * corr + warp_sum(e);
#pragma unroll
            for (int j = 0; j < DJ; j++) acc[g][j] *= corr;
            m[g] = mn;
            sc[g] = e;
        }
        int nv = min(32, p1 - b);
#pragma unroll 4
        for (int j = 0; j < nv; j++) {
            float vv[DJ];
            if (dl) ldn<DJ>(vv, V + (size_t)(b + j) * KD + lane * DJ);
            else {
#pragma unroll
                for (int i = 0; i < DJ; i++) vv[i] = 0;
            }
#pragma unroll
            for (int g = 0; g < GM; g++) {
                if (g >= G) break;
                float pj = __shfl_sync(0xffffffffu, sc[g], j);
#pragma unroll
                for (int i = 0; i < DJ; i++) acc[g][i] = fmaf(pj, vv[i], acc[g][i]);
            }
        }
    }
    /* merge the warps */
#pragma unroll
    for (int g = 0; g < GM; g++) {
        if (g >= G) break;
        if (lane == 0) { wm[warp * G + g] = m[g]; wl[warp * G + g] = l[g]; }
        if (dl)
#pragma unroll
            for (int i = 0; i < DJ; i++) wo[((size_t)warp * G + g) * D + lane * DJ + i] = acc[g][i];
    }
    __syncthreads();
    size_t hb = (size_t)r * H + (size_t)kh * G;              /* first query head of the group */
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
        int g = i / D, d = i % D;
        float M = -INFINITY, L = 0, O = 0;
        for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, wm[w * G + g]);
        if (M != -INFINITY)
            for (int w = 0; w < ATT_WARPS; w++) {
                float e = expf(wm[w * G + g] - M);
                L += wl[w * G + g] * e;
                O += wo[((size_t)w * G + g) * D + d] * e;
            }
        if (nsplit == 1) {
            out[(hb + g) * D + d] = O / L;
        } else {
            float *pp = part + ((hb + g) * nsplit + s) * (D + 2);
            if (d == 0) { pp[0] = M; pp[1] = L; }
            pp[2 + d] = O;
        }
    }
    if (nsplit == 1) return;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&counters[(size_t)r * KV + kh], 1u) == (unsigned)nsplit - 1;
    __syncthreads();
    if (!last) return;
    for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
        int g = i / D, d = i % D;
        const float *pp = part + (hb + g) * nsplit * (D + 2);
        float M = -INFINITY, L = 0, O = 0;
        for (int t = 0; t < nsplit; t++) M = fmaxf(M, __ldcg(pp + (size_t)t * (D + 2)));
        for (int t = 0; t < nsplit; t++) {
            const float *q2 = pp + (size_t)t * (D + 2);
            float e = expf(__ldcg(q2) - M);
            L += __ldcg(q2 + 1) * e;
            O += __ldcg(q2 + 2 + d) * e;
        }
        out[(hb + g) * D + d] = O / L;
    }
    if (threadIdx.x == 0) counters[(size_t)r * KV + kh] = 0;
}

extern "C" size_t dec_attention_part_floats(int R, int H, int D, int nsplit)
{
    return nsplit > 1 ? (size_t)R * H * nsplit * (D + 2) : 0;
}

static int dj_for(int D) { return D <= 32 ? 1 : D <= 64 ? 2 : D <= 128 ? 4 : 8; }
static int gm_for(int G) { return G <= 1 ? 1 : G <= 2 ? 2 : G <= 4 ? 4 : G <= 8 ? 8 : 16; }

template <typename T, int DJ, int GM>
static void att_launch(float *out, const float *qkv, const int *pos, const int *slot, const T *kc,
                       const T *vc, size_t slot_stride, size_t layer_off, int R, int H, int KV,
                       int D, int nsplit, float *part, unsigned *counters)
{
    size_t smem = att_smem_bytes(H / KV, D);
    /* above the default 48 KiB a kernel must opt in (once per instance;
     * dec_attention_supported does it before any graph capture) */
    static size_t opted;
    if (smem > 48 * 1024 && smem > opted) {
        CUDA_CHECK(cudaFuncSetAttribute(att_kernel<T, DJ, GM>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        opted = smem;
    }
    if (!out) return;                           /* preparation only */
    dim3 grid(R, KV, nsplit);
    att_kernel<T, DJ, GM><<<grid, ATT_WARPS * 32, smem, cuda_stream()>>>(
        out, qkv, pos, slot, kc, vc, slot_stride, layer_off, H, KV, D, nsplit, part, counters,
        1.0f / sqrtf((float)D));
    CUDA_LAUNCHED();
}

template <typename T, int DJ>
static void att_dispatch_g(float *out, const float *qkv, const int *pos, const int *slot,
                           const T *kc, const T *vc, size_t ss, size_t lo, int R, int H, int KV,
                           int D, int nsplit, float *part, unsigned *counters)
{
    switch (gm_for(H / KV)) {
    case 1: att_launch<T, DJ, 1>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    case 2: att_launch<T, DJ, 2>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    case 4: att_launch<T, DJ, 4>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    case 8: att_launch<T, DJ, 8>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    default: att_launch<T, DJ, 16>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    }
}

template <typename T>
static void att_dispatch(float *out, const float *qkv, const int *pos, const int *slot,
                         const T *kc, const T *vc, size_t ss, size_t lo, int R, int H, int KV,
                         int D, int nsplit, float *part, unsigned *counters)
{
    switch (dj_for(D)) {
    case 1: att_dispatch_g<T, 1>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    case 2: att_dispatch_g<T, 2>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    case 4: att_dispatch_g<T, 4>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    default: att_dispatch_g<T, 8>(out, qkv, pos, slot, kc, vc, ss, lo, R, H, KV, D, nsplit, part, counters); break;
    }
}

extern "C" int dec_attention_supported(int H, int KV, int D)
{
    if (KV < 1 || H % KV || H / KV > 16 || D < 8 || D % 8 || D > 256) return 0;
    if (device_ready()) {                       /* opt in to the shared memory now */
        att_dispatch<float>(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, H, KV, D, 1, NULL, NULL);
        att_dispatch<bf16>(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, H, KV, D, 1, NULL, NULL);
    }
    return 1;
}

extern "C" void dec_attention(float *out, const float *qkv, const int *pos, const int *slot,
                              const void *kc, const void *vc, dec_type ct, size_t slot_stride,
                              size_t layer_off, int R, int H, int KV, int D, int nsplit,
                              float *part, unsigned *counters)
{
    if (R <= 0) return;
    if (nsplit < 1) nsplit = 1;
    if (ct == DEC_BF16)
        att_dispatch<bf16>(out, qkv, pos, slot, (const bf16 *)kc, (const bf16 *)vc, slot_stride,
                           layer_off, R, H, KV, D, nsplit, part, counters);
    else
        att_dispatch<float>(out, qkv, pos, slot, (const float *)kc, (const float *)vc, slot_stride,
                            layer_off, R, H, KV, D, nsplit, part, counters);
}

/* ------------------------------------------------------------ host data */

extern "C" void *dec_host_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}

extern "C" void dec_host_free(void *p)
{
    if (p) CUDA_CHECK(cudaFreeHost(p));
}

extern "C" void dec_upload_async(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda_stream()));
}

/* ------------------------------------------------------------ graphs */

extern "C" void dec_graph_begin(void)
{
    CUDA_CHECK(cudaStreamBeginCapture(cuda_stream(), cudaStreamCaptureModeThreadLocal));
}

extern "C" void *dec_graph_end(void)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    CUDA_CHECK(cudaStreamEndCapture(cuda_stream(), &g));
    CUDA_CHECK(cudaGraphInstantiate(&x, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return (void *)x;
}

extern "C" void dec_graph_launch(void *g)
{
    CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)g, cuda_stream()));
}

extern "C" void dec_graph_free(void *g)
{
    if (g) CUDA_CHECK(cudaGraphExecDestroy((cudaGraphExec_t)g));
}
