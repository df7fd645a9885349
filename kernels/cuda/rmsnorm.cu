/* rmsnorm.cu — RMSNorm forward and backward on the GPU.
 * y = w * (x * rstd), rstd = 1/sqrt(mean(x^2) + eps), one warp per row
 * (block norms: C = hidden; per-head q/k norms: C = head_dim, N*heads
 * rows).  The weight gradient is a column sum over all rows; it is done
 * in two fixed-order stages (row chunks -> partials -> one sum per
 * column), so results are the same on every run, like the CPU's. */
#include "cuda/common.cuh"

#include <math.h>

template <typename T>
__global__ void rmsnorm_fwd_kernel(T *out, float *rstd, const T *inp, const T *w,
                                   int N, int C, float eps)
{
    int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (n >= N) return;
    const T *x = inp + (size_t)n * C;
    T *y = out + (size_t)n * C;
    float ss = 0;
    for (int i = lane; i < C; i += 32) { float v = ld(x[i]); ss += v * v; }
    ss = warp_sum(ss);
    float r = (float)(1.0 / sqrt((double)ss / C + eps));
    for (int i = lane; i < C; i += 32) st(y + i, ld(w[i]) * (ld(x[i]) * r));  /* in place ok */
    if (rstd && lane == 0) rstd[n] = r;
}

template <typename T>
__global__ void rmsnorm_dx_kernel(T *dinp, const T *dout, const T *inp, const T *w,
                                  const float *rstd, int N, int C)
{
    int n = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (n >= N) return;
    const T *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
    T *dx = dinp + (size_t)n * C;
    float r = rstd[n], dot = 0;
    for (int i = lane; i < C; i += 32) dot += ld(w[i]) * ld(dy[i]) * ld(x[i]);
    dot = warp_sum(dot);
    float k = dot / C * r * r;
    for (int i = lane; i < C; i += 32)
        st(dx + i, ld(dx[i]) + r * (ld(w[i]) * ld(dy[i]) - ld(x[i]) * k));
}

/* Stage 1: block (32 columns x 8 row lanes) sums dy*x*rstd over rows
 * [lo, hi) of chunk blockIdx.y into part[chunk][col]. */
template <typename T>
__global__ void rmsnorm_dw_part_kernel(float *part, const T *dout, const T *inp,
                                       const float *rstd, int N, int C, int rows_per_chunk)
{
    __shared__ float acc[8][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5, c = blockIdx.x * 32 + tx;
    int lo = blockIdx.y * rows_per_chunk, hi = min(N, lo + rows_per_chunk);
    float a = 0;
    if (c < C)
        for (int n = lo + ty; n < hi; n += 8)
            a += ld(dout[(size_t)n * C + c]) * ld(inp[(size_t)n * C + c]) * rstd[n];
    acc[ty][tx] = a;
    __syncthreads();
    if (ty == 0 && c < C) {
        float s = 0;
        for (int j = 0; j < 8; j++) s += acc[j][tx];
        part[(size_t)blockIdx.y * C + c] = s;
    }
}

/* Stage 2: dw[c] += sum over chunks, in chunk order. */
__global__ void rmsnorm_dw_sum_kernel(float *dw, const float *part, int chunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0;
    for (int j = 0; j < chunks; j++) s += part[(size_t)j * C + c];
    dw[c] += s;
}

template <typename T>
static void rmsnorm_fwd(T *out, float *rstd, const T *inp, const T *w, int N, int C, float eps)
{
    if (N <= 0) return;
    rmsnorm_fwd_kernel<T><<<grid_for(N, 8), 256, 0, cuda_stream()>>>(out, rstd, inp, w, N, C, eps);
    CUDA_LAUNCHED();
}

template <typename T>
static void rmsnorm_bwd(T *dinp, float *dw, const T *dout, const T *inp, const T *w,
                        const float *rstd, int N, int C)
{
    if (N <= 0) return;
    rmsnorm_dx_kernel<T><<<grid_for(N, 8), 256, 0, cuda_stream()>>>(dinp, dout, inp, w, rstd, N, C);
    CUDA_LAUNCHED();
    if (!dw) return;
    /* Enough chunks to fill the GPU, each at least 64 rows. */
    int chunks = (N + 63) / 64, cap = 4 * cuda_sm_count() / ((C + 31) / 32) + 1;
    if (chunks > cap) chunks = cap;
    if (chunks > 1024) chunks = 1024;
    if (chunks < 1) chunks = 1;
    int per = (N + chunks - 1) / chunks;
    chunks = (N + per - 1) / per;
    float *part = (float *)cuda_scratch((size_t)chunks * C * sizeof(float));
    dim3 grid((C + 31) / 32, chunks);
    rmsnorm_dw_part_kernel<T><<<grid, 256, 0, cuda_stream()>>>(part, dout, inp, rstd, N, C, per);
    CUDA_LAUNCHED();
    rmsnorm_dw_sum_kernel<<<grid_for(C, 256), 256, 0, cuda_stream()>>>(dw, part, chunks, C);
    CUDA_LAUNCHED();
}

extern "C" void cuda_rmsnorm_forward(float *out, float *rstd, const float *inp,
                                     const float *w, int N, int C, float eps)
{
    rmsnorm_fwd<float>(out, rstd, inp, w, N, C, eps);
}

extern "C" void cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout,
                                      const float *inp, const float *w, const float *rstd,
                                      int N, int C)
{
    rmsnorm_bwd<float>(dinp, dw, dout, inp, w, rstd, N, C);
}

extern "C" void cuda_rmsnorm_forward_bf16(hat_bf16 *out, float *rstd, const hat_bf16 *inp,
                                          const hat_bf16 *w, int N, int C, float eps)
{
    rmsnorm_fwd<bf16>((bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)w, N, C, eps);
}

extern "C" void cuda_rmsnorm_backward_bf16(hat_bf16 *dinp, float *dw, const hat_bf16 *dout,
                                           const hat_bf16 *inp, const hat_bf16 *w,
                                           const float *rstd, int N, int C)
{
    rmsnorm_bwd<bf16>((bf16 *)dinp, dw, (const bf16 *)dout, (const bf16 *)inp,
                      (const bf16 *)w, rstd, N, C);
}
