/* crossentropy.cu — softmax cross-entropy over the vocabulary on the GPU,
 * with the CPU kernels' semantics: forward keeps each row's log-sum-exp,
 * backward is one pass softmax = exp(z - lse) that OVERWRITES dlogits
 * (which may alias logits: each element is read and written by the same
 * thread).  Rows with target < 0 get loss 0, lse 0 and a zero gradient. */
#include "cuda/common.cuh"

#include <math.h>

#define CE_THREADS 512

template <typename T>
__global__ void ce_fwd_kernel(float *losses, float *lse, const T *logits, const int *targets,
                              int V)
{
    __shared__ float sh[32];
    int n = blockIdx.x, t = targets[n];
    if (t < 0) {                       /* uniform per block: no barrier skipped unevenly */
        if (threadIdx.x == 0) { lse[n] = 0; losses[n] = 0; }
        return;
    }
    const T *z = logits + (size_t)n * V;
    float mx = -INFINITY, sum = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, ld(z[i]));
    mx = block_max(mx, sh);
    for (int i = threadIdx.x; i < V; i += blockDim.x) sum += expf(ld(z[i]) - mx);
    sum = block_sum(sum, sh);
    if (threadIdx.x == 0) {
        float l = mx + logf(sum);
        lse[n] = l;
        losses[n] = l - ld(z[t]);
    }
}

template <typename T>
__global__ void ce_bwd_kernel(T *dlogits, const T *logits, const float *lse, const int *targets,
                              int N, int V, float scale)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)N * V) return;
    int n = (int)(i / V), c = (int)(i % V), t = targets[n];
    if (t < 0) { st(dlogits + i, 0.0f); return; }
    float d = scale * expf(ld(logits[i]) - lse[n]);
    if (c == t) d -= scale;
    st(dlogits + i, d);
}

extern "C" void cuda_crossentropy_forward(float *losses, float *lse, const float *logits,
                                          const int *targets, int N, int V)
{
    if (N <= 0) return;
    ce_fwd_kernel<float><<<N, CE_THREADS, 0, cuda_stream()>>>(losses, lse, logits, targets, V);
    CUDA_LAUNCHED();
}

extern "C" void cuda_crossentropy_backward(float *dlogits, const float *logits, const float *lse,
                                           const int *targets, int N, int V, float scale)
{
    size_t n = (size_t)N * V;
    if (!n) return;
    ce_bwd_kernel<float><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(dlogits, logits, lse, targets,
                                                                      N, V, scale);
    CUDA_LAUNCHED();
}

extern "C" void cuda_crossentropy_forward_bf16(float *losses, float *lse, const hat_bf16 *logits,
                                               const int *targets, int N, int V)
{
    if (N <= 0) return;
    ce_fwd_kernel<bf16><<<N, CE_THREADS, 0, cuda_stream()>>>(losses, lse, (const bf16 *)logits,
                                                             targets, V);
    CUDA_LAUNCHED();
}

extern "C" void cuda_crossentropy_backward_bf16(hat_bf16 *dlogits, const hat_bf16 *logits,
                                                const float *lse, const int *targets, int N, int V,
                                                float scale)
{
    size_t n = (size_t)N * V;
    if (!n) return;
    ce_bwd_kernel<bf16><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)dlogits, (const bf16 *)logits, lse, targets, N, V, scale);
    CUDA_LAUNCHED();
}
