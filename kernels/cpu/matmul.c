/* matmul.c — dense layers on OpenBLAS sgemm (CPU back end).
 * Weights are (OC, C) as in Hugging Face, so forward is inp W^T. */
#include "kernels.h"

#include <cblas.h>

void matmul_forward(float *out, const float *inp, const float *w,
                    int N, int C, int OC, float beta)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C,
                1.0f, inp, C, w, C, beta, out, OC);
}

void matmul_backward(float *dinp, float *dw, const float *dout,
                     const float *inp, const float *w, int N, int C, int OC)
{
    if (dinp)   /* (N,OC) x (OC,C) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC,
                    1.0f, dout, OC, w, C, 1.0f, dinp, C);
    if (dw)     /* (OC,N) x (N,C) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N,
                    1.0f, dout, OC, inp, C, 1.0f, dw, C);
}
