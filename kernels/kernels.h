/* kernels.h — the compute interface every back end implements.
 *
 * One free function per operation and direction, llm.c style:
 *   - arguments in one order everywhere: outputs first, then saved
 *     activations / inputs, then weights, then sizes;
 *   - forward functions overwrite their outputs;
 *   - backward functions ACCUMULATE (+=) into every gradient they touch,
 *     so a single zero-grad clears a step and shared tensors (tied
 *     embeddings, grouped-query K/V) just add up.
 * Tensors are row-major float32.  Weight matrices use the Hugging Face
 * layout (out_features, in_features), so y = x W^T.
 * Shape letters: N rows (= B*T tokens), C model width, OC output width,
 * B batch, T sequence, H query heads, KV key/value heads, D head_dim,
 * V vocabulary, I MLP width.
 *
 * kernels/cpu/ implements this with OpenMP and OpenBLAS sgemm; a CUDA
 * back end implements the same names.  Nothing here allocates. */
#ifndef HAT_KERNELS_H
#define HAT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Kernels that call BLAS from inside OpenMP threads call this first: it
 * makes a pthreads OpenBLAS single-threaded (once, for the process) so
 * the two thread pools do not compete for the cores. */
void matmul_init(void);

/* C (M,N) = alpha op(A) op(B) + beta C, row-major as cblas_sgemm: A (M,K)
 * or, ta, stored (K,M), at leading dimension lda; B likewise.  One
 * block, on the calling thread: callers split a product between their
 * OpenMP threads.  gemm_block runs it on oneDNN's matmul where that is in
 * use (kernels/cpu/onednn.c: HAT_GEMM, or a brgemm kernel for this CPU)
 * and beta is 0 or 1, else on OpenBLAS.  onednn_gemm is the oneDNN part:
 * 0 when it ran, -1 when it did not (nothing written).
 * gemm_kernel_name: "openblas", or "onednn " and oneDNN's kernel. */
void gemm_block(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);
/* The same on operands rounded to bf16 (bf16_from_f32), alpha 1, fp32
 * accumulation and output: what the dense layers run under HAT_GEMM=bf16,
 * which gemm_bf16() says is in force.  -1 (nothing written) when it is
 * not, or no plan is kept for the shape. */
int onednn_gemm_bf16(int ta, int tb, int M, int N, int K, const uint16_t *A, int lda,
                     const uint16_t *B, int ldb, float beta, float *C, int ldc);
int gemm_bf16(void);
/* d[0, n) = s[0, n) rounded to bf16, to nearest even (NaN stays NaN). */
void bf16_from_f32(uint16_t *d, const float *s, size_t n);
int onednn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);
int onednn_active(void);
const char *gemm_kernel_name(void);

/* out (N,OC) = inp (N,C) W^T, W (OC,C).  beta=0: overwrite; 1: add. */
void matmul_forward(float *out, const float *inp, const float *w,
                    int N, int C, int OC, float beta);
/* dinp += dout W ; dw += dout^T inp.  Either gradient may be NULL. */
void matmul_backward(float *dinp, float *dw, const float *dout,
                     const float *inp, const float *w, int N, int C, int OC);
/* The same, but dinp = dout W (overwritten, not added to): what zeroing
 * dinp first and then matmul_backward gives, bit for bit, without the
 * separate pass over dinp (sgemm's beta=0 clears each thread's block). */
void matmul_backward_set(float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, int N, int C, int OC);

/* out = w * x / sqrt(mean(x^2) + eps) over each of N rows of C; rstd (N)
 * saved for backward.  out may equal inp (in place). */
void rmsnorm_forward(float *out, float *rstd, const float *inp,
                     const float *w, int N, int C, float eps);
/* dinp = dadd + d(input) (dadd may be dinp: accumulate; NULL: overwrite,
 * the bits of clearing dinp first); dw += d(w). */
void rmsnorm_backward(float *dinp, const float *dadd, float *dw, const float *dout,
                      const float *inp, const float *w, const float *rstd,
                      int N, int C);

/* RoPE tables: cos/sin (P, D/2) for positions 0..P-1,
 * inv_freq[j] = theta^(-2j/D) (angles in double, then float). */
void rope_table(float *cos_t, float *sin_t, int P, int D, double theta);
/* In place rotation of x (N, nh, D) by position pos[n] (Hugging Face
 * rotate-half: pairs (j, j+D/2)).  Backward rotates by the negative
 * angle (the map is orthogonal) — dx is rotated in place too. */
void rope_forward(float *x, const int *pos, const float *cos_t,
                  const float *sin_t, int N, int nh, int D);
void rope_backward(float *dx, const int *pos, const float *cos_t,
                   const float *sin_t, int N, int nh, int D);

/* Causal grouped-query attention over B sequences of T tokens.
 * q (B,T,H,D), k/v (B,T,KV,D), out (B,T,H,D); query head h reads kv head
 * h / (H/KV); scale = D^-0.5.  lse (B,H,T) gets each query row's
 * log-sum-exp of scaled scores, all backward needs besides the inputs
 * (the probabilities are recomputed from it, flash-attention style).
 * scratch: attention_scratch_floats(T) floats (per-thread tiles; the
 * size depends on omp_get_max_threads() at the time of the call). */
size_t attention_scratch_floats(int T);
void attention_forward(float *out, float *lse, float *scratch, const float *q,
                       const float *k, const float *v,
                       int B, int T, int H, int KV, int D);
/* dq/dk/dv accumulate.  out and lse are what forward produced. */
void attention_backward(float *dq, float *dk, float *dv, float *scratch,
                        const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v,
                        int B, int T, int H, int KV, int D);
/* Reference versions (plain loops, for tests): att (B,H,T,T) holds the
 * softmax probabilities (row t: only columns <= t are valid); datt is
 * (B,H,T,T) scratch. */
void attention_forward_ref(float *out, float *att, const float *q,
                           const float *k, const float *v,
                           int B, int T, int H, int KV, int D);
void attention_backward_ref(float *dq, float *dk, float *dv, float *datt,
                            const float *dout, const float *att,
                            const float *q, const float *k, const float *v,
                            int B, int T, int H, int KV, int D);

/* One decoding step against a cache: q (H,D) for the token at position
 * n_ctx-1 whose k/v are already stored at kc/vc (S, KV, D) rows
 * 0..n_ctx-1.  out (H,D); scratch (n_ctx) floats per head, i.e.
 * H*n_ctx in total. */
void attention_decode(float *out, float *scratch, const float *q,
                      const float *kc, const float *vc, int n_ctx,
                      int H, int KV, int D);

/* SwiGLU: out = silu(gate) * up, all (N).  backward overwrites dgate and
 * dup (the bits of clearing them first); the _ref and CUDA versions add. */
void swiglu_forward(float *out, const float *gate, const float *up, size_t N);
void swiglu_backward(float *dgate, float *dup, const float *dout,
                     const float *gate, const float *up, size_t N);

/* out (N,C) = wte[tokens[n]]; backward adds rows into dwte (V,C). */
void embedding_forward(float *out, const int *tokens, const float *wte,
                       int N, int C);
void embedding_backward(float *dwte, const float *dout, const int *tokens,
                        int N, int C);

/* Softmax cross-entropy over logits (N,V).  targets[n] < 0 = no loss.
 * Forward: losses[n] = -log p(target) and lse[n] = log-sum-exp of the
 * row (both 0 where ignored).  Backward OVERWRITES dlogits (it may alias
 * logits) with scale * (softmax - onehot) on counted rows, 0 elsewhere,
 * using the saved lse: one pass over the row, no second reduction. */
void crossentropy_forward(float *losses, float *lse, const float *logits,
                          const int *targets, int N, int V);
void crossentropy_backward(float *dlogits, const float *logits, const float *lse,
                           const int *targets, int N, int V, float scale);
/* Reference (double precision, both at once; dlogits may be NULL). */
void crossentropy_forward_backward(float *losses, float *dlogits,
                                   const float *logits, const int *targets,
                                   int N, int V, float scale);

/* out = a + b (N). */
void add_forward(float *out, const float *a, const float *b, size_t N);

/* x[0..n) = 0 and dst[0..n) = src[0..n), split over the threads (fill.c):
 * memset and memcpy for buffers the size of a layer's activations. */
void vzero(float *x, size_t n);
void vcopy(float *dst, const float *src, size_t n);

/* AdamW on n values: m,v moments; decoupled decay wd*lr*p; bias
 * correction with step t (1-based).  Gradients already scaled. */
void adamw_update(float *p, float *m, float *v, const float *g, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd,
                  int t);
/* adamw_update on n_tensors tensors at once (one parallel region): tensor
 * i is numel[i] values at offset[i] of p, m, v and g, decayed by wd if
 * decay[i], else not.  Same result, element for element. */
void adamw_update_tensors(float *p, float *m, float *v, const float *g,
                          const size_t *offset, const size_t *numel, const int *decay,
                          int n_tensors, float lr, float beta1, float beta2, float eps,
                          float wd, int t);

/* Sum of squares of n values, in double, with a fixed summation order
 * (deterministic for a given n regardless of threads). */
double sumsq(const float *x, size_t n);
/* x *= s. */
void scale_inplace(float *x, size_t n, float s);

/* Reference versions of the fast kernels above: plain serial loops,
 * obviously correct, same arguments; kept callable so tests can check
 * each fast kernel against its reference (the llm.c kernel ladder).
 * The attention and cross-entropy references are declared with theirs. */
void matmul_forward_ref(float *out, const float *inp, const float *w,
                        int N, int C, int OC, float beta);
void matmul_backward_ref(float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, int N, int C, int OC);
void rmsnorm_forward_ref(float *out, float *rstd, const float *inp,
                         const float *w, int N, int C, float eps);
void rmsnorm_backward_ref(float *dinp, float *dw, const float *dout,
                          const float *inp, const float *w, const float *rstd,
                          int N, int C);
void swiglu_forward_ref(float *out, const float *gate, const float *up, size_t N);
void swiglu_backward_ref(float *dgate, float *dup, const float *dout,
                         const float *gate, const float *up, size_t N);

/* Row-invariant kernels for the decoding engine (cpu/decode.c): row r of
 * every output depends only on row r of the inputs, bit for bit, whatever
 * N, the tile the row falls in and the thread count (batch invariance,
 * exact KV-cache reuse, exact speculative verification).  Small calls run
 * on one thread without opening a parallel region. */
void matmul_rows(float *out, const float *inp, const float *w, int N, int C, int OC, float beta);
/* On a CPU with AVX-512 (x86-64-v4) matmul_rows and attention_rows run
 * 16-lane tiles that compute the same bits as the 8-lane ones with half
 * the instructions.  decode_avx512(0) keeps the 8-lane tiles sized for
 * AVX2's 16 registers (for tests that compare the two), (1) allows the
 * wide ones again; returns whether the 16-lane tiles were in use. */
int  decode_avx512(int on);
/* The same with bf16 weights packed by bf16_pack_rows (OC rows of C/2
 * words; C a multiple of 16): half the memory traffic, for MTP drafts,
 * which the fp32 model verifies (see generate.c). */
void matmul_rows_bf16(float *out, const float *inp, const uint32_t *w, int N, int C, int OC, float beta);
/* Round fp32 weights (OC, C) to bf16, packed so that each 8-word group
 * holds elements g..g+7 in its low halves and g+8..g+15 in its high. */
void bf16_pack_rows(uint32_t *dst, const float *src, int OC, int C);
/* R query rows q (R,H,D) -> out (R,H,D); row r attends to positions
 * 0..n_ctx[r]-1 (its own k/v included): [0, n_pre[r]) from a prefix
 * shared by many sequences, kp[r]/vp[r] (KV,n_pre[r],D), the rest from
 * its own cache kc[r]/vc[r] (KV,cs,D), indexed by position (rows below
 * n_pre[r] unread).  Caches are kv-head major: a task (one kv head)
 * streams its keys and values as one contiguous run, where position-major
 * rows (S,KV,D) made it read every other 256 bytes, which the prefetchers
 * serve at a third of the bandwidth (2x the attention time here on
 * contexts that come from memory).  n_pre NULL: no prefix.  A row's bits
 * do not depend on where its prefix ends.  scratch:
 * attention_rows_scratch(max_ctx, H, KV) floats. */
typedef struct {
    float *const *kc, *const *vc;        /* (R) own caches */
    const int *n_ctx;                    /* (R) */
    const float *const *kp, *const *vp;  /* (R) shared prefixes, or NULL with n_pre */
    const int *n_pre;                    /* (R) or NULL */
    int cs;                              /* positions a kv head holds in each own cache (>= n_ctx) */
} attn_rows;
size_t attention_rows_scratch(int max_ctx, int H, int KV);
void attention_rows(float *out, float *scratch, const float *q, const attn_rows *a, int R,
                    int H, int KV, int D, int max_ctx);
void rmsnorm_rows(float *out, const float *inp, const float *w, int N, int C, float eps);
void swiglu_rows(float *out, const float *gate, const float *up, int N, int I);
void rope_rows(float *x, const int *pos, const float *cos_t, const float *sin_t, int N, int nh, int D);

#endif
