/* embedding.cu — the scatter-add backward of the token embedding.
 * Repeated tokens add into the same row; atomics would make the sum's
 * order (and so its rounding) vary from run to run.  Instead the
 * positions are sorted by token (a stable radix sort keeps them in
 * position order), and one block per distinct token sums its positions'
 * rows in that order and adds the total once: deterministic, and
 * parallel over distinct tokens and columns. */
#include "cuda/common.cuh"

#include <cub/cub.cuh>

__global__ void iota_kernel(int *v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = i;
}

template <typename T>
__global__ void embedding_bwd_kernel(float *dwte, const T *dout, const int *tok_sorted,
                                     const int *pos_sorted, int N, int C)
{
    int i = blockIdx.x;
    if (i > 0 && tok_sorted[i] == tok_sorted[i - 1]) return;   /* not a run start */
    int tok = tok_sorted[i];
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = 0;
        for (int j = i; j < N && tok_sorted[j] == tok; j++)
            acc += ld(dout[(size_t)pos_sorted[j] * C + c]);
        dwte[(size_t)tok * C + c] += acc;
    }
}

template <typename T>
static void embedding_bwd(float *dwte, const T *dout, const int *tokens, int N, int C)
{
    if (N <= 0 || C <= 0) return;
    size_t temp = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, temp, (const int *)NULL, (int *)NULL,
                                               (const int *)NULL, (int *)NULL, N, 0,
                                               (int)(8 * sizeof(int)), cuda_stream()));
    size_t ints = ((size_t)3 * N + 63) / 64 * 64;
    char *base = (char *)cuda_scratch(ints * sizeof(int) + temp);
    int *tok_sorted = (int *)base, *pos = tok_sorted + N, *pos_sorted = pos + N;
    void *tmp = base + ints * sizeof(int);
    iota_kernel<<<grid_for(N, 256), 256, 0, cuda_stream()>>>(pos, N);
    CUDA_LAUNCHED();
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, temp, tokens, tok_sorted, pos, pos_sorted, N,
                                               0, (int)(8 * sizeof(int)), cuda_stream()));
    embedding_bwd_kernel<T><<<N, C < 256 ? 32 * ((C + 31) / 32) : 256, 0, cuda_stream()>>>(
        dwte, dout, tok_sorted, pos_sorted, N, C);
    CUDA_LAUNCHED();
}

extern "C" void cuda_embedding_backward(float *dwte, const float *dout, const int *tokens,
                                        int N, int C)
{
    embedding_bwd<float>(dwte, dout, tokens, N, C);
}

extern "C" void cuda_embedding_backward_bf16(float *dwte, const hat_bf16 *dout, const int *tokens,
                                             int N, int C)
{
    embedding_bwd<bf16>(dwte, (const bf16 *)dout, tokens, N, C);
}
