/* model_extra.cu — the few steps of common/model.c that are not kernels
 * of kernels.h: the multi-token-prediction head's row concatenation
 * [emb ; hidden] and its inverse on the gradient.  (Tied embeddings
 * need nothing: lm_head and wte are one tensor, so their gradients land
 * in one place as on the CPU.)  Pure data movement, so both precisions
 * are bit-exact copies. */
#include "cuda/common.cuh"

template <typename T>
__global__ void concat_rows_kernel(T *out, const T *a, const T *b, int N, int C1, int C2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, W = (size_t)C1 + C2;
    if (i >= (size_t)N * W) return;
    size_t n = i / W, c = i % W;
    out[i] = c < (size_t)C1 ? a[n * C1 + c] : b[n * C2 + (c - C1)];
}

template <typename T>
__global__ void split_rows_kernel(T *a, T *b, const T *in, int N, int C1, int C2)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, W = (size_t)C1 + C2;
    if (i >= (size_t)N * W) return;
    size_t n = i / W, c = i % W;
    if (c < (size_t)C1) a[n * C1 + c] = in[i];
    else b[n * C2 + (c - C1)] = in[i];
}

template <typename T>
static void concat_rows(T *out, const T *a, const T *b, int N, int C1, int C2)
{
    size_t n = (size_t)N * (C1 + C2);
    if (!n) return;
    concat_rows_kernel<T><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(out, a, b, N, C1, C2);
    CUDA_LAUNCHED();
}

template <typename T>
static void split_rows(T *a, T *b, const T *in, int N, int C1, int C2)
{
    size_t n = (size_t)N * (C1 + C2);
    if (!n) return;
    split_rows_kernel<T><<<grid_for(n, 256), 256, 0, cuda_stream()>>>(a, b, in, N, C1, C2);
    CUDA_LAUNCHED();
}

extern "C" void cuda_concat_rows(float *out, const float *a, const float *b, int N, int C1, int C2)
{
    concat_rows<float>(out, a, b, N, C1, C2);
}

extern "C" void cuda_split_rows(float *a, float *b, const float *in, int N, int C1, int C2)
{
    split_rows<float>(a, b, in, N, C1, C2);
}

extern "C" void cuda_concat_rows_bf16(hat_bf16 *out, const hat_bf16 *a, const hat_bf16 *b,
                                      int N, int C1, int C2)
{
    concat_rows<bf16>((bf16 *)out, (const bf16 *)a, (const bf16 *)b, N, C1, C2);
}

extern "C" void cuda_split_rows_bf16(hat_bf16 *a, hat_bf16 *b, const hat_bf16 *in,
                                     int N, int C1, int C2)
{
    split_rows<bf16>((bf16 *)a, (bf16 *)b, (const bf16 *)in, N, C1, C2);
}
