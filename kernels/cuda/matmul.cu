/* matmul.cu — dense layers on cuBLAS (cublasGemmEx, fp32 compute).
 * Weights are (OC, C) as in Hugging Face, so forward is inp W^T; all
 * calls are written as row-major products and mapped to cuBLAS's
 * column-major convention by gemm_rm_to_cm (layout.h, tested on the CPU).
 * bf16 path: A and B bf16, C bf16 for activations and fp32 for weight
 * gradients (bf16 x bf16 -> fp32 accumulate in place), compute fp32. */
#include "cuda/common.cuh"
#include "cuda/layout.h"

/* C = alpha op(A) op(B) + beta C, row-major, on the process stream. */
void cuda_gemm_rm(gemm_rm g, float alpha, const void *A, cudaDataType_t at,
                  const void *B, cudaDataType_t bt, float beta, void *C, cudaDataType_t ct)
{
    gemm_cm c = gemm_rm_to_cm(g);
    CUBLAS_CHECK(cublasGemmEx(cuda_blas(),
                              c.ta ? CUBLAS_OP_T : CUBLAS_OP_N, c.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              c.m, c.n, c.k, &alpha,
                              B, bt, c.lda, A, at, c.ldb,
                              &beta, C, ct, c.ldc,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template <typename T>
static void matmul_fwd(T *out, const T *inp, const T *w, int N, int C, int OC, float beta)
{
    if (N <= 0 || OC <= 0) return;
    gemm_rm g = { 0, 1, N, OC, C, C, C, OC };
    cuda_gemm_rm(g, 1.0f, inp, blas_type<T>::v, w, blas_type<T>::v, beta, out, blas_type<T>::v);
}

template <typename T, typename G>
static void matmul_bwd(T *dinp, G *dw, const T *dout, const T *inp, const T *w,
                       int N, int C, int OC)
{
    if (N <= 0) return;
    if (dinp) {   /* dinp (N,C) += dout (N,OC) W (OC,C) */
        gemm_rm g = { 0, 0, N, C, OC, OC, C, C };
        cuda_gemm_rm(g, 1.0f, dout, blas_type<T>::v, w, blas_type<T>::v, 1.0f, dinp, blas_type<T>::v);
    }
    if (dw) {     /* dw (OC,C) += dout^T (OC,N) inp (N,C) */
        gemm_rm g = { 1, 0, OC, C, N, OC, C, C };
        cuda_gemm_rm(g, 1.0f, dout, blas_type<T>::v, inp, blas_type<T>::v, 1.0f, dw, blas_type<G>::v);
    }
}

extern "C" void cuda_matmul_forward(float *out, const float *inp, const float *w,
                                    int N, int C, int OC, float beta)
{
    matmul_fwd<float>(out, inp, w, N, C, OC, beta);
}

extern "C" void cuda_matmul_backward(float *dinp, float *dw, const float *dout,
                                     const float *inp, const float *w, int N, int C, int OC)
{
    matmul_bwd<float, float>(dinp, dw, dout, inp, w, N, C, OC);
}

extern "C" void cuda_matmul_forward_bf16(hat_bf16 *out, const hat_bf16 *inp, const hat_bf16 *w,
                                         int N, int C, int OC, float beta)
{
    matmul_fwd<bf16>((bf16 *)out, (const bf16 *)inp, (const bf16 *)w, N, C, OC, beta);
}

extern "C" void cuda_matmul_backward_bf16(hat_bf16 *dinp, float *dw, const hat_bf16 *dout,
                                          const hat_bf16 *inp, const hat_bf16 *w,
                                          int N, int C, int OC)
{
    matmul_bwd<bf16, float>((bf16 *)dinp, dw, (const bf16 *)dout, (const bf16 *)inp,
                            (const bf16 *)w, N, C, OC);
}
