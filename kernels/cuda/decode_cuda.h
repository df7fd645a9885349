/* decode_cuda.h — the kernels of GPU decoding (kernels/cuda/decode.cu):
 * what common/generate_cuda.c composes into one forward pass over R token
 * rows against per-sequence KV caches, and the CUDA-graph helpers that
 * replay it.  Declared only in builds with the CUDA back end (HAT_CUDA).
 *
 * Conventions (unlike kernels_cuda.h, which mirrors the CPU kernels):
 *   - activations are fp32 whatever the weights (the residual stream, the
 *     normalised rows, q/k/v, attention output, logits); weights and the
 *     KV cache are `dec_type` storage, fp32 (the parity mode) or bf16;
 *     norm weights are always fp32;
 *   - every pointer is device memory; every call enqueues on the process
 *     stream (device.h) and never synchronises, so a sequence of them can
 *     be captured into a CUDA graph;
 *   - row data the host changes between steps (tokens, positions, slots)
 *     is READ FROM DEVICE MEMORY by the kernels, never passed by value, so
 *     a captured graph stays valid for any positions and slot assignment
 *     with the same number of rows.
 * KV cache layout: one buffer per K and V, (slots, L, S, KV, D) with S the
 * engine's max_len; row r of layer l uses slot[r]:
 *     base + slot[r] * slot_stride + layer_off,  slot_stride = L*S*KV*D,
 *     layer_off = l*S*KV*D   (elements). */
#ifndef HAT_DECODE_CUDA_H
#define HAT_DECODE_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DEC_F32 = 0, DEC_BF16 = 1 } dec_type;

/* Rows the GEMV kernels take at once; more rows go through cuBLAS. */
#define DEC_GEMV_MAX_ROWS 8

/* x[r] = wte[tok[r]] (R, C) and rstd[r] = 1/sqrt(mean(x[r]^2) + eps). */
void dec_embed(float *x, float *rstd, const int *tok, const void *wte, dec_type wt,
               int R, int C, float eps);

/* GEMV for R <= DEC_GEMV_MAX_ROWS rows: out (R, OC) = in (R, C) W^T, W
 * (OC, C) row-major in `wt` storage, fp32 accumulation, one warp per one
 * or two output rows, 16-byte weight loads when C % 8 == 0 (any C works).
 * Each output element is the same sequence of operations whatever R, so
 * a row's result does not depend on the other rows.
 *   nw != NULL: the input is normalised on the fly, in = nw * (x * rstd[r])
 *               (the CPU rmsnorm_rows formula; rstd (R) from dec_embed or
 *               a previous dec_gemv's rstd_out);
 *   accumulate: out += (residual connections), else out =;
 *   rstd_out != NULL: after the product, the last block to finish writes
 *               rstd_out[r] = 1/sqrt(mean(out[r]^2) + eps) over the OC
 *               columns (the next rmsnorm's statistic, without a launch);
 *               counter: one zeroed unsigned int, left zeroed. */
void dec_gemv(float *out, const float *x, const void *w, dec_type wt, int R, int C, int OC,
              const float *rstd, const float *nw, int accumulate,
              float *rstd_out, unsigned *counter, float eps);
/* out (R, OC) = silu(in Wg^T) * (in Wu^T), the same input handling. */
void dec_gemv_swiglu(float *out, const float *x, const void *wg, const void *wu, dec_type wt,
                     int R, int C, int OC, const float *rstd, const float *nw);

/* Per row r of qkv (R, (H+2KV)*D: q | k | v): q and k heads RMS-normalised
 * (qn, kn (D) fp32) and rotated (RoPE, cos_t/sin_t (P, D/2) at pos[r]); q
 * written back in place, k and v stored to the cache at position pos[r]. */
void dec_qk_rope_store(float *qkv, const int *pos, const int *slot, void *kc, void *vc,
                       dec_type ct, size_t slot_stride, size_t layer_off,
                       const float *qn, const float *kn, const float *cos_t, const float *sin_t,
                       int R, int H, int KV, int D, float eps);

/* Attention of each row's q (in qkv, row stride (H+2KV)*D) over its own
 * cache positions 0..pos[r] (n_ctx = pos[r]+1, read on the device):
 * out (R, H*D).  GQA: one block per (split, kv head, row) serves the H/KV
 * query heads that share the kv head, so each cached row is read once.
 * nsplit > 1: flash-decoding, the context is cut into nsplit chunks whose
 * partial softmax states (part: dec_attention_part_floats) are merged by
 * the last block of each (row, kv head) (counters: R*KV zeroed unsigned
 * ints, left zeroed).  nsplit == 1: part and counters unused (NULL ok).
 * D must be a multiple of 8 and at most 256; H/KV at most 16. */
size_t dec_attention_part_floats(int R, int H, int D, int nsplit);
void dec_attention(float *out, const float *qkv, const int *pos, const int *slot,
                   const void *kc, const void *vc, dec_type ct, size_t slot_stride,
                   size_t layer_off, int R, int H, int KV, int D, int nsplit,
                   float *part, unsigned *counters);
/* 1 when dec_attention supports these sizes. */
int dec_attention_supported(int H, int KV, int D);

/* ----- the many-row (prefill) path: cuBLAS products over normalised rows */

/* out (R, C) in `ot` storage = nw * (x * rstd[r]) (nw NULL: x). */
void dec_norm_rows(void *out, dec_type ot, const float *x, const float *rstd, const float *nw,
                   int R, int C);
/* rstd[r] = 1/sqrt(mean(x[r]^2) + eps). */
void dec_rstd_rows(float *rstd, const float *x, int R, int C, float eps);
/* out (R, OC) fp32 = beta out + inp W^T on cuBLAS; inp and W in `t`
 * storage (fp32 compute, no TF32). */
void dec_gemm(float *out, const void *inp, const void *w, dec_type t, int R, int C, int OC,
              float beta);
/* out (n) in `ot` storage = silu(gate) * up. */
void dec_swiglu(void *out, dec_type ot, const float *gate, const float *up, size_t n);
/* dst[i] = x[rows[i]] (C wide), rstd_dst[i] = rstd[rows[i]]: rows (n)
 * device. */
void dec_gather_rows(float *dst, float *rstd_dst, const float *x, const float *rstd,
                     const int *rows, int n, int C);

/* ----- per-step host data */

/* Page-locked host memory (fatal on failure), so that a copy from it is
 * truly asynchronous. */
void *dec_host_alloc(size_t bytes);
void  dec_host_free(void *p);
/* Enqueue a host -> device copy on the process stream without waiting:
 * src must stay unchanged until the stream has passed the copy (the
 * next synchronisation). */
void  dec_upload_async(void *dst, const void *src, size_t bytes);

/* ----- CUDA graphs of the process stream */

/* Start capturing the process stream's work (nothing runs until the
 * graph is launched); end returns an executable graph. */
void  dec_graph_begin(void);
void *dec_graph_end(void);
void  dec_graph_launch(void *g);
void  dec_graph_free(void *g);

#ifdef __cplusplus
}
#endif
#endif
