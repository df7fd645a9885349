/* elementwise.cu — the cheap, memory-bound kernels: RoPE, SwiGLU, the
 * residual add, embedding lookup, AdamW, and the gradient-clipping pair
 * (sum of squares, scale).  One thread per element (per rotated pair for
 * RoPE); the same float formulas as kernels/cpu/, so the fp32 path
 * agrees to rounding.  sumsq reduces in a fixed tree (fixed grid, fixed
 * order), in double like the CPU, so it is deterministic for a given n. */
#include "cuda/common.cuh"

#include <math.h>

/* ------------------------------------------------------------ RoPE */

template <typename T>
__global__ void rope_kernel(T *x, const int *pos, const float *cos_t, const float *sin_t,
                            int N, int nh, int D, float sign)
{
    int half = D / 2;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, total = (size_t)N * nh * half;
    if (i >= total) return;
    int j = (int)(i % half);
    size_t nhh = i / half;                  /* n * nh + h */
    int n = (int)(nhh / nh);
    const float c = cos_t[(size_t)pos[n] * half + j], s = sign * sin_t[(size_t)pos[n] * half + j];
    T *v = x + nhh * D;
    float a = ld(v[j]), b = ld(v[j + half]);
    st(v + j, a * c - b * s);
    st(v + j + half, b * c + a * s);
}

template <typename T>
static void rope(T *x, const int *pos, const float *cos_t, const float *sin_t,
                 int N, int nh, int D, float sign)
{
    size_t total = (size_t)N * nh * (D / 2);
    if (total == 0) return;
    rope_kernel<T><<<grid_for(total, 256), 256, 0, cuda_stream()>>>(x, pos, cos_t, sin_t, N, nh, D, sign);
    CUDA_LAUNCHED();
}

extern "C" void cuda_rope_forward(float *x, const int *pos, const float *cos_t,
                                  const float *sin_t, int N, int nh, int D)
{
    rope<float>(x, pos, cos_t, sin_t, N, nh, D, 1.0f);
}

extern "C" void cuda_rope_backward(float *dx, const int *pos, const float *cos_t,
                                   const float *sin_t, int N, int nh, int D)
{
    rope<float>(dx, pos, cos_t, sin_t, N, nh, D, -1.0f);
}

extern "C" void cuda_rope_forward_bf16(hat_bf16 *x, const int *pos, const float *cos_t,
                                       const float *sin_t, int N, int nh, int D)
{
    rope<bf16>((bf16 *)x, pos, cos_t, sin_t, N, nh, D, 1.0f);
}

extern "C" void cuda_rope_backward_bf16(hat_bf16 *dx, const int *pos, const float *cos_t,
                                        const float *sin_t, int N, int nh, int D)
{
    rope<bf16>((bf16 *)dx, pos, cos_t, sin_t, N, nh, D, -1.0f);
}

/* ------------------------------------------------------------ SwiGLU, add */

template <typename T>
__global__ void swiglu_fwd_kernel(T *out, const T *gate, const T *up, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = ld(gate[i]);
    st(out + i, g / (1.0f + expf(-g)) * ld(up[i]));
}

template <typename T>
__global__ void swiglu_bwd_kernel(T *dgate, T *dup, const T *dout, const T *gate, const T *up,
                                  size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = ld(gate[i]), sg = 1.0f / (1.0f + expf(-g)), dy = ld(dout[i]);
    st(dgate + i, ld(dgate[i]) + dy * ld(up[i]) * sg * (1.0f + g * (1.0f - sg)));
    st(dup + i, ld(dup[i]) + dy * g * sg);
}

template <typename T>
__global__ void add_kernel(T *out, const T *a, const T *b, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) st(out + i, ld(a[i]) + ld(b[i]));
}

extern "C" void cuda_swiglu_forward(float *out, const float *gate, const float *up, size_t N)
{
    if (!N) return;
    swiglu_fwd_kernel<float><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(out, gate, up, N);
    CUDA_LAUNCHED();
}

extern "C" void cuda_swiglu_backward(float *dgate, float *dup, const float *dout,
                                     const float *gate, const float *up, size_t N)
{
    if (!N) return;
    swiglu_bwd_kernel<float><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(dgate, dup, dout, gate, up, N);
    CUDA_LAUNCHED();
}

extern "C" void cuda_swiglu_forward_bf16(hat_bf16 *out, const hat_bf16 *gate, const hat_bf16 *up,
                                         size_t N)
{
    if (!N) return;
    swiglu_fwd_kernel<bf16><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)out, (const bf16 *)gate, (const bf16 *)up, N);
    CUDA_LAUNCHED();
}

extern "C" void cuda_swiglu_backward_bf16(hat_bf16 *dgate, hat_bf16 *dup, const hat_bf16 *dout,
                                          const hat_bf16 *gate, const hat_bf16 *up, size_t N)
{
    if (!N) return;
    swiglu_bwd_kernel<bf16><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)dgate, (bf16 *)dup, (const bf16 *)dout, (const bf16 *)gate, (const bf16 *)up, N);
    CUDA_LAUNCHED();
}

extern "C" void cuda_add_forward(float *out, const float *a, const float *b, size_t N)
{
    if (!N) return;
    add_kernel<float><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(out, a, b, N);
    CUDA_LAUNCHED();
}

extern "C" void cuda_add_forward_bf16(hat_bf16 *out, const hat_bf16 *a, const hat_bf16 *b, size_t N)
{
    if (!N) return;
    add_kernel<bf16><<<grid_for(N, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)out, (const bf16 *)a, (const bf16 *)b, N);
    CUDA_LAUNCHED();
}

/* ------------------------------------------------------------ embedding */

template <typename T>
__global__ void embedding_fwd_kernel(T *out, const int *tokens, const T *wte, int N, int C)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C) return;
    size_t n = i / C, c = i % C;
    out[i] = wte[(size_t)tokens[n] * C + c];
}

extern "C" void cuda_embedding_forward(float *out, const int *tokens, const float *wte,
                                       int N, int C)
{
    size_t n = (size_t)N * C;
    if (!n) return;
    embedding_fwd_kernel<float><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(out, tokens, wte, N, C);
    CUDA_LAUNCHED();
}

extern "C" void cuda_embedding_forward_bf16(hat_bf16 *out, const int *tokens, const hat_bf16 *wte,
                                            int N, int C)
{
    size_t n = (size_t)N * C;
    if (!n) return;
    embedding_fwd_kernel<bf16><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)out, tokens, (const bf16 *)wte, N, C);
    CUDA_LAUNCHED();
}

/* ------------------------------------------------------------ AdamW */

template <typename T>
__global__ void adamw_kernel(float *p, T *p16, float *m, float *v, const float *g, size_t n,
                             float lr, float beta1, float beta2, float eps, float wd,
                             float bc1, float bc2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gi = g[i], mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    float mh = mi / bc1, vh = vi / bc2, pi = p[i];
    pi -= lr * (mh / (sqrtf(vh) + eps) + wd * pi);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi;
    if (p16) st(p16 + i, pi);
}

extern "C" void cuda_adamw_update(float *p, float *m, float *v, const float *g, size_t n,
                                  float lr, float beta1, float beta2, float eps, float wd, int t)
{
    if (!n) return;
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    adamw_kernel<float><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(
        p, (float *)NULL, m, v, g, n, lr, beta1, beta2, eps, wd, bc1, bc2);
    CUDA_LAUNCHED();
}

extern "C" void cuda_adamw_update_bf16(float *p, hat_bf16 *p16, float *m, float *v, const float *g,
                                       size_t n, float lr, float beta1, float beta2, float eps,
                                       float wd, int t)
{
    if (!n) return;
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    adamw_kernel<bf16><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(
        p, (bf16 *)p16, m, v, g, n, lr, beta1, beta2, eps, wd, bc1, bc2);
    CUDA_LAUNCHED();
}

/* ------------------------------------------------------------ fill */

__global__ void fill_uniform_kernel(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);   /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x[i] = lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
}

extern "C" void cuda_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    if (!n) return;
    fill_uniform_kernel<<<grid_for(n, 256), 256, 0, cuda_stream()>>>(x, n, seed, lo, hi);
    CUDA_LAUNCHED();
}

/* ------------------------------------------------------------ clipping */

#define SUMSQ_BLOCKS 1024
#define SUMSQ_THREADS 256

__global__ void sumsq_part_kernel(double *part, const float *x, size_t n)
{
    __shared__ double sh[32];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void sumsq_final_kernel(double *out, const double *part, int nparts)
{
    __shared__ double sh[32];
    double s = 0;
    for (int i = threadIdx.x; i < nparts; i += blockDim.x) s += part[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

extern "C" double cuda_sumsq(const float *x, size_t n)
{
    double *part = (double *)cuda_scratch((SUMSQ_BLOCKS + 1) * sizeof(double)), r = 0;
    sumsq_part_kernel<<<SUMSQ_BLOCKS, SUMSQ_THREADS, 0, cuda_stream()>>>(part, x, n);
    CUDA_LAUNCHED();
    sumsq_final_kernel<<<1, SUMSQ_THREADS, 0, cuda_stream()>>>(part + SUMSQ_BLOCKS, part, SUMSQ_BLOCKS);
    CUDA_LAUNCHED();
    device_download(&r, part + SUMSQ_BLOCKS, sizeof r);
    return r;
}

__global__ void scale_kernel(float *x, size_t n, float s)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

extern "C" void cuda_scale_inplace(float *x, size_t n, float s)
{
    if (!n) return;
    scale_kernel<<<grid_for(n, 256), 256, 0, cuda_stream()>>>(x, n, s);
    CUDA_LAUNCHED();
}
