/* generate_cuda.h — the GPU back end of the decoding engine (generate.h):
 * the model's weights on the device (bf16, or fp32 for exact parity
 * tests), a KV cache per slot on the device in the same type, and one
 * forward pass over R token rows of any mix of sequences — a prompt's
 * rows (prefill) or one new token per sequence (decode).
 *
 * gen_new_cuda (generate.h) builds an engine on it: the engine keeps its
 * bookkeeping (queued tokens, prefix reuse, extend, stop ids, RNG
 * streams, stats) and hands every step's rows here instead of to the CPU
 * kernels; sampling runs on the device (cuda_sample_logits) with the
 * uniform drawn from the sequence's own stream, as sample_logits does.
 *
 * How a step runs (kernels/cuda/decode.cu):
 *   - R <= DEC_GEMV_MAX_ROWS (decoding up to 8 sequences, short prompts):
 *     GEMV kernels with the rmsnorms folded in, fused q/k-norm + RoPE +
 *     cache store, flash-decoding attention over the cache: six launches
 *     a layer.  When every row needs logits (pure decoding) the whole
 *     step is captured once per R in a CUDA graph and replayed: tokens,
 *     positions and slots live in device memory, so the graph is valid
 *     for any positions and slots;
 *   - more rows (prefill): cuBLAS GEMMs over the normalised rows (bf16
 *     inputs in bf16 mode), the same attention kernel over each row's
 *     cache (which the step's own rows were written to first, so a
 *     prompt's rows see each other causally and any cached prefix).
 * Activations and logits are fp32 in both modes.
 *
 * Differences from the CPU engine: no MTP drafting (the engine ignores
 * mtp_k); batch invariance holds among steps that take the same path
 * (GEMV rows do not depend on the other rows), but a row computed by
 * cuBLAS (a step of more than 8 rows) may differ in the last bits from
 * the same row computed by the GEMV. */
#ifndef HAT_GENERATE_CUDA_H
#define HAT_GENERATE_CUDA_H

#include "generate.h"

#include <stddef.h>

typedef struct gen_cuda gen_cuda;

/* Device state for max_seqs slots of max_len tokens; precision
 * GEN_CUDA_BF16 or GEN_CUDA_FP32 (generate.h).  Initialises the GPU
 * (device_init) if needed.  NULL with *why set when this build has no
 * CUDA back end, there is no GPU, or the model's shape is not supported
 * (head_dim a multiple of 8 up to 256, at most 16 query heads per kv
 * head). */
gen_cuda *gen_cuda_new(const model *m, int max_seqs, int max_len, int precision,
                       const char **why);
void      gen_cuda_free(gen_cuda *g);
/* Replay decoding steps from CUDA graphs (default on). */
void      gen_cuda_set_graphs(gen_cuda *g, int on);

/* One forward pass over R rows (host arrays): token tok[r] at position
 * pos[r] of slot slot[r]; its K/V are stored at that position of the
 * slot's cache, and it attends to positions 0..pos[r] there.  Logits
 * (kept on the device) for the nl rows lrows[0..nl).  Re-uploads the
 * weights first when the model's version changed. */
void gen_cuda_forward(gen_cuda *g, const int *tok, const int *pos, const int *slot, int R,
                      const int *lrows, int nl);
/* sample_logits on logits rows [l0, l0+n) of the last forward, one set of
 * parameters; u (n, host): each row's rng_uniform draw (unused when
 * greedy).  ids, logprobs (n, host).  Synchronises. */
void gen_cuda_sample(gen_cuda *g, int l0, int n, const gen_params *p, const double *u,
                     int *ids, float *logprobs);
/* Copy logits row l of the last forward to out (V, host). */
void gen_cuda_logits(gen_cuda *g, int l, float *out);
/* Cache rows [0, n) of slot src into slot dst. */
void gen_cuda_copy_cache(gen_cuda *g, int dst, int src, int n);
/* Bytes one decoding step reads at least: the weights of every matrix
 * product (the embedding contributes one row). */
size_t gen_cuda_weight_bytes(const gen_cuda *g);

#endif
