/* common.cuh — what every .cu file of the CUDA back end shares: error
 * checks with file:line, the process's stream and cuBLAS handle, a
 * grow-only scratch buffer, float <-> bf16 loads and stores, and warp /
 * block reductions in a fixed order (results do not depend on timing).
 *
 * Kernels are templates over the storage type (float or __nv_bfloat16);
 * arithmetic is always float (double where the CPU kernel uses double
 * and the cost is small), so the fp32 instantiation is the parity path
 * and the bf16 one the fast path, from one source. */
#ifndef HAT_CUDA_COMMON_CUH
#define HAT_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "cuda/device.h"
#include "cuda/kernels_cuda.h"
#include "cuda/layout.h"

typedef __nv_bfloat16 bf16;

/* Fatal error reporting (device.cu). */
extern "C" void cuda_fatal(const char *file, int line, const char *what, const char *msg)
    __attribute__((noreturn));

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) cuda_fatal(__FILE__, __LINE__, #call, cudaGetErrorString(e_)); } while (0)
#define CUBLAS_CHECK(call) do { cublasStatus_t s_ = (call); \
    if (s_ != CUBLAS_STATUS_SUCCESS) cuda_fatal(__FILE__, __LINE__, #call, cublasGetStatusString(s_)); } while (0)
/* After a launch: configuration errors show up here, faults later. */
#define CUDA_LAUNCHED() CUDA_CHECK(cudaGetLastError())

/* C = alpha op(A) op(B) + beta C, row-major (layout.h), fp32 compute,
 * on the process stream (matmul.cu). */
void cuda_gemm_rm(gemm_rm g, float alpha, const void *A, cudaDataType_t at,
                  const void *B, cudaDataType_t bt, float beta, void *C, cudaDataType_t ct);

cudaStream_t   cuda_stream(void);
cublasHandle_t cuda_blas(void);
int            cuda_sm_count(void);
/* A device buffer of at least `bytes`, reused by the next call: valid
 * until the next cuda_scratch call.  Only leaf functions use it, and
 * they finish with it before returning (stream order makes reuse safe). */
void          *cuda_scratch(size_t bytes);

/* Data type of a storage type, for cuBLAS. */
template <typename T> struct blas_type;
template <> struct blas_type<float> { static const cudaDataType_t v = CUDA_R_32F; };
template <> struct blas_type<bf16>  { static const cudaDataType_t v = CUDA_R_16BF; };

__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ float ld(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void st(float *p, float x) { *p = x; }
__device__ __forceinline__ void st(bf16 *p, float x) { *p = __float2bfloat16_rn(x); }

/* Sum / max over a warp, same tree every time. */
template <typename A>
__device__ __forceinline__ A warp_sum(A x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
__device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* Block-wide sum/max for blockDim.x a multiple of 32 (<= 1024); every
 * thread gets the result.  `sh` is 32 elements of shared memory. */
template <typename A>
__device__ A block_sum(A x, A *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    x = warp_sum(x);
    __syncthreads();                 /* sh may still be read by a previous call */
    if (lane == 0) sh[w] = x;
    __syncthreads();
    A y = lane < nw ? sh[lane] : (A)0;
    return warp_sum(y);
}
__device__ inline float block_max(float x, float *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    x = warp_max(x);
    __syncthreads();
    if (lane == 0) sh[w] = x;
    __syncthreads();
    float y = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(y);
}

static inline unsigned grid_for(size_t n, int threads)
{
    size_t g = (n + threads - 1) / threads;
    return (unsigned)(g < 1 ? 1 : g);
}

#endif
