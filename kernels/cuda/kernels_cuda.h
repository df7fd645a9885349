/* kernels_cuda.h — the kernel interface of kernels/kernels.h on an NVIDIA
 * GPU.  Declared only in builds with the CUDA back end (HAT_CUDA).
 *
 * Every cuda_X has the name, arguments and semantics of the CPU X in
 * kernels.h (outputs first; forward overwrites; backward ACCUMULATES into
 * gradients), except that every pointer is DEVICE memory (device_malloc)
 * unless a comment says host.  Calls enqueue on the process's one stream
 * (device.h) and return at once unless they return a host value.
 *
 * Two precisions, one source (kernels are templates over the storage):
 *   cuda_X       fp32 storage, fp32 arithmetic (fp32 cuBLAS, no TF32): the
 *                parity path, tested tightly against the CPU kernels;
 *   cuda_X_bf16  bf16 activations and weights (hat_bf16) with fp32
 *                statistics (rstd, lse, losses), fp32 accumulation
 *                everywhere, and fp32 WEIGHT gradients (dw, dwte) so the
 *                optimizer, gradient clipping and the NCCL all-reduce work
 *                on one flat fp32 buffer.  Activation gradients are bf16.
 *                The fp32 master weights live in the optimizer:
 *                cuda_adamw_update_bf16 updates them and refreshes the
 *                bf16 copy in the same pass.
 * Matmuls run on cuBLAS (cublasGemmEx, fp32 compute); attention is
 * batched GEMMs over (batch, head) plus causal row-softmax kernels with
 * the CPU's log-sum-exp layout (kernels/cuda/layout.h). */
#ifndef HAT_KERNELS_CUDA_H
#define HAT_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bit pattern of a bfloat16 (__nv_bfloat16 on the device side). */
typedef uint16_t hat_bf16;

/* Conversions, device to device (round to nearest even). */
void cuda_f32_to_bf16(hat_bf16 *out, const float *in, size_t n);
void cuda_bf16_to_f32(float *out, const hat_bf16 *in, size_t n);
/* x[i] = lo + (hi - lo) * U_i, U_i in [0,1) a hash of (seed, i): the
 * same values on every run and GPU (benchmarks, smoke tests). */
void cuda_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi);
/* Host-side conversions for tests and checkpoint loading. */
hat_bf16 bf16_from_float(float x);
float    bf16_to_float(hat_bf16 x);

/* ---------------------------------------------------------- fp32 path */

void cuda_matmul_forward(float *out, const float *inp, const float *w,
                         int N, int C, int OC, float beta);
void cuda_matmul_backward(float *dinp, float *dw, const float *dout,
                          const float *inp, const float *w, int N, int C, int OC);

void cuda_rmsnorm_forward(float *out, float *rstd, const float *inp,
                          const float *w, int N, int C, float eps);
void cuda_rmsnorm_backward(float *dinp, float *dw, const float *dout,
                           const float *inp, const float *w, const float *rstd,
                           int N, int C);

/* cos_t/sin_t (P, D/2): rope_table's output, uploaded; pos (N) device. */
void cuda_rope_forward(float *x, const int *pos, const float *cos_t,
                       const float *sin_t, int N, int nh, int D);
void cuda_rope_backward(float *dx, const int *pos, const float *cos_t,
                        const float *sin_t, int N, int nh, int D);

/* The GPU's scratch depends on B and H too (it holds the (B*H,T,T)
 * scores: O(T^2) memory, unlike the CPU's tiles). */
size_t cuda_attention_scratch_floats(int B, int T, int H);
void cuda_attention_forward(float *out, float *lse, float *scratch, const float *q,
                            const float *k, const float *v,
                            int B, int T, int H, int KV, int D);
void cuda_attention_backward(float *dq, float *dk, float *dv, float *scratch,
                             const float *dout, const float *out, const float *lse,
                             const float *q, const float *k, const float *v,
                             int B, int T, int H, int KV, int D);
/* scratch: H * n_ctx floats, as on the CPU. */
void cuda_attention_decode(float *out, float *scratch, const float *q,
                           const float *kc, const float *vc, int n_ctx,
                           int H, int KV, int D);

void cuda_swiglu_forward(float *out, const float *gate, const float *up, size_t N);
void cuda_swiglu_backward(float *dgate, float *dup, const float *dout,
                          const float *gate, const float *up, size_t N);

void cuda_embedding_forward(float *out, const int *tokens, const float *wte,
                            int N, int C);
/* Deterministic: tokens are sorted, each row sums its positions in order. */
void cuda_embedding_backward(float *dwte, const float *dout, const int *tokens,
                             int N, int C);

void cuda_crossentropy_forward(float *losses, float *lse, const float *logits,
                               const int *targets, int N, int V);
void cuda_crossentropy_backward(float *dlogits, const float *logits, const float *lse,
                                const int *targets, int N, int V, float scale);

void cuda_add_forward(float *out, const float *a, const float *b, size_t N);

void cuda_adamw_update(float *p, float *m, float *v, const float *g, size_t n,
                       float lr, float beta1, float beta2, float eps, float wd,
                       int t);
/* In double, fixed summation order (deterministic for a given n); the
 * result is copied to the host (synchronises). */
double cuda_sumsq(const float *x, size_t n);
void   cuda_scale_inplace(float *x, size_t n, float s);

/* sample_logits (common/generate.c) on the device, for R rows of logits
 * (R,V) with one set of parameters: temperature 0 = argmax (lowest id on
 * ties); else softmax at the temperature, ids ordered by probability
 * (ties: lowest id), cut to top_k (0 = off) and then to the shortest
 * prefix reaching top_p (1 = off), and the first id whose cumulative
 * probability exceeds u[r] * (kept mass).  u (R, HOST) is the caller's
 * rng_uniform draw per row (ignored when temperature is 0), so the same
 * stream gives the CPU's choice.  ids, logprobs (R, HOST): the id and
 * log softmax(logits)[id] (before temperature).  Synchronises. */
void cuda_sample_logits(int *ids, float *logprobs, const float *logits,
                        const double *u, int R, int V,
                        float temperature, int top_k, float top_p);

/* ---------------------------------------------------------- bf16 path */

void cuda_matmul_forward_bf16(hat_bf16 *out, const hat_bf16 *inp, const hat_bf16 *w,
                              int N, int C, int OC, float beta);
/* dinp (bf16) += dout W;  dw (fp32) += dout^T inp. */
void cuda_matmul_backward_bf16(hat_bf16 *dinp, float *dw, const hat_bf16 *dout,
                               const hat_bf16 *inp, const hat_bf16 *w,
                               int N, int C, int OC);

void cuda_rmsnorm_forward_bf16(hat_bf16 *out, float *rstd, const hat_bf16 *inp,
                               const hat_bf16 *w, int N, int C, float eps);
void cuda_rmsnorm_backward_bf16(hat_bf16 *dinp, float *dw, const hat_bf16 *dout,
                                const hat_bf16 *inp, const hat_bf16 *w,
                                const float *rstd, int N, int C);

void cuda_rope_forward_bf16(hat_bf16 *x, const int *pos, const float *cos_t,
                            const float *sin_t, int N, int nh, int D);
void cuda_rope_backward_bf16(hat_bf16 *dx, const int *pos, const float *cos_t,
                             const float *sin_t, int N, int nh, int D);

void cuda_attention_forward_bf16(hat_bf16 *out, float *lse, float *scratch,
                                 const hat_bf16 *q, const hat_bf16 *k, const hat_bf16 *v,
                                 int B, int T, int H, int KV, int D);
void cuda_attention_backward_bf16(hat_bf16 *dq, hat_bf16 *dk, hat_bf16 *dv, float *scratch,
                                  const hat_bf16 *dout, const hat_bf16 *out, const float *lse,
                                  const hat_bf16 *q, const hat_bf16 *k, const hat_bf16 *v,
                                  int B, int T, int H, int KV, int D);
/* A bf16 KV cache halves the bytes decoding reads. */
void cuda_attention_decode_bf16(hat_bf16 *out, float *scratch, const hat_bf16 *q,
                                const hat_bf16 *kc, const hat_bf16 *vc, int n_ctx,
                                int H, int KV, int D);

void cuda_swiglu_forward_bf16(hat_bf16 *out, const hat_bf16 *gate, const hat_bf16 *up,
                              size_t N);
void cuda_swiglu_backward_bf16(hat_bf16 *dgate, hat_bf16 *dup, const hat_bf16 *dout,
                               const hat_bf16 *gate, const hat_bf16 *up, size_t N);

void cuda_embedding_forward_bf16(hat_bf16 *out, const int *tokens, const hat_bf16 *wte,
                                 int N, int C);
void cuda_embedding_backward_bf16(float *dwte, const hat_bf16 *dout, const int *tokens,
                                  int N, int C);

void cuda_crossentropy_forward_bf16(float *losses, float *lse, const hat_bf16 *logits,
                                    const int *targets, int N, int V);
void cuda_crossentropy_backward_bf16(hat_bf16 *dlogits, const hat_bf16 *logits,
                                     const float *lse, const int *targets, int N, int V,
                                     float scale);

void cuda_add_forward_bf16(hat_bf16 *out, const hat_bf16 *a, const hat_bf16 *b, size_t N);

/* AdamW on the fp32 master p, then p16 = bf16(p) (p16 may be NULL). */
void cuda_adamw_update_bf16(float *p, hat_bf16 *p16, float *m, float *v, const float *g,
                            size_t n, float lr, float beta1, float beta2, float eps,
                            float wd, int t);

/* ---------------------------------------------------------- model glue
 * (model_extra.cu) The MTP head's [a ; b] row concatenation and its
 * inverse: out (N, C1+C2) row n = [a (N,C1) row n ; b (N,C2) row n];
 * split OVERWRITES a and b (it is a copy, not a gradient accumulation). */
void cuda_concat_rows(float *out, const float *a, const float *b, int N, int C1, int C2);
void cuda_split_rows(float *a, float *b, const float *in, int N, int C1, int C2);
void cuda_concat_rows_bf16(hat_bf16 *out, const hat_bf16 *a, const hat_bf16 *b,
                           int N, int C1, int C2);
void cuda_split_rows_bf16(hat_bf16 *a, hat_bf16 *b, const hat_bf16 *in, int N, int C1, int C2);

#ifdef __cplusplus
}
#endif
#endif
