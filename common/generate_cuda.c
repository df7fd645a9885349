/* generate_cuda.c — the decoding engine's GPU back end (generate_cuda.h):
 * weights and KV caches on the device, and a forward pass over token
 * rows composed from the kernels of kernels/cuda/decode.cu. */
#include "generate_cuda.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAT_CUDA
#include "cuda/decode_cuda.h"
#include "cuda/device.h"
#include "cuda/kernels_cuda.h"

typedef struct {
    void  *wqkv, *wo, *wg, *wu, *wd;     /* wqkv: q_proj, k_proj, v_proj rows back to back */
    float *in_norm, *post_norm, *qn, *kn;
} dlayer;

/* Row buffers of one path.  The GEMV path's set is allocated once for
 * DEC_GEMV_MAX_ROWS rows and never moves (graphs point into it); the
 * cuBLAS path's set grows with the rows of a prefill. */
typedef struct {
    int       cap, cap_l;               /* rows, logits rows */
    int      *idx;                      /* device: tok, pos, slot, lrow (cap each) */
    int      *tok, *pos, *slot, *lrow;
    float    *x, *rstd, *qkv, *att, *act, *gate, *up, *xl, *rstdl, *logits;
    void     *in;                       /* typed input of a cuBLAS product */
    float    *part;                     /* attention split states */
    unsigned *cnt;                      /* GEMV counters (2L), then attention counters */
} rowbufs;

struct gen_cuda {
    const model *m;
    dec_type  wt;                       /* weights and caches */
    size_t    es;                       /* bytes per element of wt */
    int       max_seqs, max_len, L, C, I, V, H, KV, D, HD, KD, QS, nsplit;
    float     eps;
    void     *wbuf;                     /* every matrix */
    float    *nbuf;                     /* norms, fp32 */
    size_t    wbytes, read_bytes;
    dlayer   *ly;
    void     *wte, *lm_head;
    float    *norm, *cos_t, *sin_t;
    void     *kc, *vc;
    size_t    slot_stride, layer_stride;   /* elements */
    rowbufs   sb, bb, *last;
    int      *hidx;                     /* host staging of the row indices (pinned) */
    int       hidx_n;
    int       pending;                  /* an upload from hidx may not have run yet */
    void     *graph[DEC_GEMV_MAX_ROWS + 1];
    int       graphs;
    unsigned long version;
    float    *stage;                    /* fp32 upload staging (bf16 mode) */
};

#define ALIGN_EL 128                    /* 256 bytes in bf16 */
#define STAGE_FLOATS ((size_t)1 << 24)  /* 64 MiB staging chunks */

static size_t round_el(size_t n) { return (n + ALIGN_EL - 1) / ALIGN_EL * ALIGN_EL; }

/* ------------------------------------------------------------ weights */

static void *wat(const gen_cuda *g, size_t off) { return (char *)g->wbuf + off * g->es; }

/* n floats of src into the device at element offset off of wbuf. */
static void put(gen_cuda *g, size_t off, const float *src, size_t n)
{
    if (g->wt == DEC_F32) {
        device_upload(wat(g, off), src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i += STAGE_FLOATS) {
        size_t k = n - i < STAGE_FLOATS ? n - i : STAGE_FLOATS;
        device_upload(g->stage, src + i, k * sizeof(float));
        cuda_f32_to_bf16((hat_bf16 *)wat(g, off + i), g->stage, k);
    }
}

/* Lay out (wbuf NULL: only count) and upload every tensor. */
static size_t place(gen_cuda *g, int upload)
{
    const model *m = g->m;
    const model_weights *w = &m->w;
    size_t off = 0, noff = 0, C = g->C, I = g->I, HD = g->HD, KD = g->KD, V = g->V, D = g->D;
    size_t mats = 0;
#define MAT(field, src, n) do { if (upload) { field = wat(g, off); put(g, off, src, n); } \
                                off += round_el(n); } while (0)
#define NORM(field, src, n) do { if (upload) { field = g->nbuf + noff; \
                                 device_upload(field, src, (n) * sizeof(float)); } \
                                 noff += ((n) + 7) / 8 * 8; } while (0)
    for (int l = 0; l < g->L; l++) {
        const block_weights *b = &w->layers[l];
        dlayer *y = &g->ly[l];
        /* q, k, v rows back to back: one product of QS outputs */
        if (upload) {
            y->wqkv = wat(g, off);
            put(g, off, b->wq, HD * C);
            put(g, off + HD * C, b->wk, KD * C);
            put(g, off + (HD + KD) * C, b->wv, KD * C);
        }
        off += round_el((HD + 2 * KD) * C);
        MAT(y->wo, b->wo, C * HD);
        MAT(y->wg, b->wgate, I * C);
        MAT(y->wu, b->wup, I * C);
        MAT(y->wd, b->wdown, C * I);
        NORM(y->in_norm, b->in_norm, C);
        NORM(y->post_norm, b->post_norm, C);
        NORM(y->qn, b->q_norm, D);
        NORM(y->kn, b->k_norm, D);
        mats += (HD + 2 * KD) * C + C * HD + 3 * I * C;
    }
    MAT(g->lm_head, w->lm_head, V * C);
    if (w->lm_head == w->wte) { if (upload) g->wte = g->lm_head; }
    else MAT(g->wte, w->wte, V * C);
    NORM(g->norm, w->norm, C);
#undef MAT
#undef NORM
    mats += V * C;
    g->read_bytes = (mats + C) * g->es;
    if (!upload) {
        g->wbytes = off * g->es;
        return noff;
    }
    g->version = m->version;
    return noff;
}

static void upload_weights(gen_cuda *g)
{
    place(g, 1);
    device_sync();
}

/* ------------------------------------------------------------ buffers */

static void bufs_free(rowbufs *b)
{
    device_free(b->idx); device_free(b->x); device_free(b->rstd); device_free(b->qkv);
    device_free(b->att); device_free(b->act); device_free(b->gate); device_free(b->up);
    device_free(b->xl); device_free(b->rstdl); device_free(b->logits); device_free(b->in);
    device_free(b->part); device_free(b->cnt);
    memset(b, 0, sizeof *b);
}

/* Buffers for R rows and nl logits rows (gemv: the GEMV path's extras). */
static void bufs_alloc(gen_cuda *g, rowbufs *b, int R, int nl, int gemv)
{
    bufs_free(b);
    size_t C = g->C, I = g->I, wide = C;
    if ((size_t)g->HD > wide) wide = g->HD;
    if ((size_t)g->I > wide) wide = g->I;
    b->cap = R;
    b->cap_l = nl;
    b->idx = device_malloc(4 * (size_t)R * sizeof(int));
    b->tok = b->idx;
    b->pos = b->idx + R;
    b->slot = b->idx + 2 * R;
    b->lrow = b->idx + 3 * R;
    b->x = device_malloc((size_t)R * C * sizeof(float));
    b->rstd = device_malloc((size_t)R * sizeof(float));
    b->qkv = device_malloc((size_t)R * g->QS * sizeof(float));
    b->att = device_malloc((size_t)R * g->HD * sizeof(float));
    b->act = device_malloc((size_t)R * I * sizeof(float));
    b->xl = device_malloc((size_t)nl * C * sizeof(float));
    b->rstdl = device_malloc((size_t)nl * sizeof(float));
    b->logits = device_malloc((size_t)nl * g->V * sizeof(float));
    if (gemv) {
        b->part = device_malloc(dec_attention_part_floats(R, g->H, g->D, g->nsplit) * sizeof(float) + 16);
        b->cnt = device_malloc(((size_t)2 * g->L + (size_t)g->L * R * g->KV) * sizeof(unsigned));
    } else {
        b->gate = device_malloc((size_t)R * I * sizeof(float));
        b->up = device_malloc((size_t)R * I * sizeof(float));
        b->in = device_malloc((size_t)R * wide * sizeof(float));
    }
}

/* ------------------------------------------------------------ life */

gen_cuda *gen_cuda_new(const model *m, int max_seqs, int max_len, int precision, const char **why)
{
    const model_config *c = &m->cfg;
    const char *dummy;
    if (!why) why = &dummy;
    *why = NULL;
    if (!device_ready() && (device_available() <= 0 || device_init(-1) != 0)) {
        *why = "no CUDA GPU or driver found";
        return NULL;
    }
    if (!dec_attention_supported(c->n_heads, c->n_kv_heads, c->head_dim)) {
        *why = "the GPU decoder needs head_dim a multiple of 8 up to 256 and at most 16 "
               "query heads per kv head";
        return NULL;
    }
    gen_cuda *g = xcalloc(1, sizeof *g);
    g->m = m;
    g->wt = precision == GEN_CUDA_FP32 ? DEC_F32 : DEC_BF16;
    g->es = g->wt == DEC_F32 ? 4 : 2;
    g->max_seqs = max_seqs;
    g->max_len = max_len;
    g->L = c->n_layers; g->C = c->hidden_size; g->I = c->intermediate_size; g->V = c->vocab_size;
    g->H = c->n_heads; g->KV = c->n_kv_heads; g->D = c->head_dim;
    g->HD = g->H * g->D; g->KD = g->KV * g->D; g->QS = g->HD + 2 * g->KD;
    g->eps = (float)c->rms_norm_eps;
    g->graphs = 1;
    /* flash-decoding splits: about two blocks per SM at batch 1, never a
     * split shorter than 32 positions of the longest context */
    device_info info;
    device_query(&info);
    int ns = (2 * (info.sm_count > 0 ? info.sm_count : 132) + g->KV - 1) / g->KV;
    int most = (max_len + 31) / 32;
    g->nsplit = ns < 1 ? 1 : ns > 64 ? 64 : ns;
    if (g->nsplit > most) g->nsplit = most;
    g->ly = xcalloc(g->L, sizeof *g->ly);

    size_t nnorm = place(g, 0);
    g->wbuf = device_malloc(g->wbytes);
    g->nbuf = device_malloc(nnorm * sizeof(float));
    if (g->wt == DEC_BF16) g->stage = device_malloc(STAGE_FLOATS * sizeof(float));
    upload_weights(g);

    model_rope_ensure((model *)m, max_len);
    size_t rope = (size_t)max_len * (g->D / 2) * sizeof(float);
    g->cos_t = device_malloc(rope);
    g->sin_t = device_malloc(rope);
    device_upload(g->cos_t, m->rope_cos, rope);
    device_upload(g->sin_t, m->rope_sin, rope);

    g->layer_stride = (size_t)max_len * g->KD;
    g->slot_stride = (size_t)g->L * g->layer_stride;
    g->kc = device_malloc((size_t)max_seqs * g->slot_stride * g->es);
    g->vc = device_malloc((size_t)max_seqs * g->slot_stride * g->es);
    bufs_alloc(g, &g->sb, DEC_GEMV_MAX_ROWS, DEC_GEMV_MAX_ROWS, 1);
    return g;
}

void gen_cuda_free(gen_cuda *g)
{
    if (!g) return;
    device_sync();
    for (int r = 0; r <= DEC_GEMV_MAX_ROWS; r++) dec_graph_free(g->graph[r]);
    bufs_free(&g->sb);
    bufs_free(&g->bb);
    device_free(g->wbuf); device_free(g->nbuf); device_free(g->stage);
    device_free(g->cos_t); device_free(g->sin_t); device_free(g->kc); device_free(g->vc);
    free(g->ly);
    dec_host_free(g->hidx);
    free(g);
}

void gen_cuda_set_graphs(gen_cuda *g, int on) { g->graphs = on; }

size_t gen_cuda_weight_bytes(const gen_cuda *g) { return g->read_bytes; }

/* ------------------------------------------------------------ forward */

/* The product out (R, OC) (+)= in W^T of rows already normalised, on
 * cuBLAS: `in` converted to the weight type first in bf16 mode. */
static void big_gemm(gen_cuda *g, rowbufs *b, float *out, const float *in, const void *w,
                     int R, int C, int OC, float beta)
{
    const void *a = in;
    if (g->wt == DEC_BF16) {
        dec_norm_rows(b->in, DEC_BF16, in, NULL, NULL, R, C);
        a = b->in;
    }
    dec_gemm(out, a, w, g->wt, R, C, OC, beta);
}

/* The whole pass over R rows whose indices are in b's device arrays; nl
 * logits rows (ident: rows 0..R-1 themselves). */
static void run(gen_cuda *g, rowbufs *b, int R, int nl, int ident)
{
    int gemv = R <= DEC_GEMV_MAX_ROWS, C = g->C, I = g->I, HD = g->HD;
    float eps = g->eps;
    dec_type wt = g->wt;
    dec_embed(b->x, b->rstd, b->tok, g->wte, wt, R, C, eps);
    for (int l = 0; l < g->L; l++) {
        const dlayer *y = &g->ly[l];
        size_t lo = (size_t)l * g->layer_stride;
        if (gemv) {
            dec_gemv(b->qkv, b->x, y->wqkv, wt, R, C, g->QS, b->rstd, y->in_norm, 0, NULL, NULL, eps);
        } else {
            dec_norm_rows(b->in, wt, b->x, b->rstd, y->in_norm, R, C);
            dec_gemm(b->qkv, b->in, y->wqkv, wt, R, C, g->QS, 0.0f);
        }
        dec_qk_rope_store(b->qkv, b->pos, b->slot, g->kc, g->vc, wt, g->slot_stride, lo, y->qn,
                          y->kn, g->cos_t, g->sin_t, R, g->H, g->KV, g->D, eps);
        dec_attention(b->att, b->qkv, b->pos, b->slot, g->kc, g->vc, wt, g->slot_stride, lo, R,
                      g->H, g->KV, g->D, gemv ? g->nsplit : 1, b->part,
                      gemv ? b->cnt + 2 * g->L + (size_t)l * R * g->KV : NULL);
        if (gemv) {
            dec_gemv(b->x, b->att, y->wo, wt, R, HD, C, NULL, NULL, 1, b->rstd, b->cnt + 2 * l, eps);
            dec_gemv_swiglu(b->act, b->x, y->wg, y->wu, wt, R, C, I, b->rstd, y->post_norm);
            dec_gemv(b->x, b->act, y->wd, wt, R, I, C, NULL, NULL, 1, b->rstd, b->cnt + 2 * l + 1, eps);
        } else {
            big_gemm(g, b, b->x, b->att, y->wo, R, HD, C, 1.0f);
            dec_rstd_rows(b->rstd, b->x, R, C, eps);
            dec_norm_rows(b->in, wt, b->x, b->rstd, y->post_norm, R, C);
            dec_gemm(b->gate, b->in, y->wg, wt, R, C, I, 0.0f);
            dec_gemm(b->up, b->in, y->wu, wt, R, C, I, 0.0f);
            dec_swiglu(b->in, wt, b->gate, b->up, (size_t)R * I);
            dec_gemm(b->x, b->in, y->wd, wt, R, I, C, 1.0f);
            dec_rstd_rows(b->rstd, b->x, R, C, eps);
        }
    }
    const float *hx = b->x, *hr = b->rstd;
    if (!ident) {
        dec_gather_rows(b->xl, b->rstdl, b->x, b->rstd, b->lrow, nl, C);
        hx = b->xl;
        hr = b->rstdl;
    }
    if (nl <= DEC_GEMV_MAX_ROWS) {
        dec_gemv(b->logits, hx, g->lm_head, wt, nl, C, g->V, hr, g->norm, 0, NULL, NULL, eps);
    } else {
        dec_norm_rows(b->in, wt, hx, hr, g->norm, nl, C);
        dec_gemm(b->logits, b->in, g->lm_head, wt, nl, C, g->V, 0.0f);
    }
}

void gen_cuda_forward(gen_cuda *g, const int *tok, const int *pos, const int *slot, int R,
                      const int *lrows, int nl)
{
    if (R <= 0) return;
    if (g->version != g->m->version) upload_weights(g);   /* trained in between */
    rowbufs *b = &g->sb;
    if (R > DEC_GEMV_MAX_ROWS || nl > DEC_GEMV_MAX_ROWS) {
        b = &g->bb;
        if (R > b->cap || nl > b->cap_l) {
            int cr = R > b->cap ? R + R / 2 : b->cap, cl = nl > b->cap_l ? nl + nl / 2 : b->cap_l;
            bufs_alloc(g, b, cr, cl, 0);
        }
    }
    int ident = nl == R;
    for (int i = 0; ident && i < nl; i++) ident = lrows[i] == i;
    /* tok, pos, slot, lrow at the buffer's strides: one upload */
    int cap = b->cap;
    if (g->pending) device_sync();           /* the last upload still reads hidx */
    g->pending = 0;
    if (g->hidx_n < 4 * cap) {               /* pinned: the upload does not wait */
        dec_host_free(g->hidx);
        g->hidx = dec_host_alloc(4 * (size_t)cap * sizeof(int));
        g->hidx_n = 4 * cap;
    }
    memcpy(g->hidx, tok, R * sizeof(int));
    memcpy(g->hidx + cap, pos, R * sizeof(int));
    memcpy(g->hidx + 2 * cap, slot, R * sizeof(int));
    memcpy(g->hidx + 3 * cap, lrows, nl * sizeof(int));
    size_t n = 3 * (size_t)cap + nl;
    dec_upload_async(b->idx, g->hidx, n * sizeof(int));
    g->pending = 1;
    g->last = b;
    if (b == &g->sb && ident && g->graphs) {
        if (!g->graph[R]) {
            dec_graph_begin();
            run(g, b, R, nl, ident);
            g->graph[R] = dec_graph_end();
        }
        dec_graph_launch(g->graph[R]);
    } else {
        run(g, b, R, nl, ident);
    }
}

void gen_cuda_sample(gen_cuda *g, int l0, int n, const gen_params *p, const double *u,
                     int *ids, float *logprobs)
{
    cuda_sample_logits(ids, logprobs, g->last->logits + (size_t)l0 * g->V, u, n, g->V,
                       p->temperature, p->top_k, p->top_p);
    g->pending = 0;                          /* it synchronised */
}

void gen_cuda_logits(gen_cuda *g, int l, float *out)
{
    device_download(out, g->last->logits + (size_t)l * g->V, (size_t)g->V * sizeof(float));
    g->pending = 0;
}

void gen_cuda_copy_cache(gen_cuda *g, int dst, int src, int n)
{
    if (dst == src || n <= 0) return;
    for (int l = 0; l < g->L; l++) {
        size_t a = (size_t)dst * g->slot_stride + (size_t)l * g->layer_stride;
        size_t b = (size_t)src * g->slot_stride + (size_t)l * g->layer_stride;
        size_t bytes = (size_t)n * g->KD * g->es;
        device_copy((char *)g->kc + a * g->es, (char *)g->kc + b * g->es, bytes);
        device_copy((char *)g->vc + a * g->es, (char *)g->vc + b * g->es, bytes);
    }
}

#else  /* a build without the CUDA back end */

gen_cuda *gen_cuda_new(const model *m, int max_seqs, int max_len, int precision, const char **why)
{
    (void)m; (void)max_seqs; (void)max_len; (void)precision;
    if (why) *why = "this build has no CUDA back end (rebuild with make CUDA=1)";
    return NULL;
}
void gen_cuda_free(gen_cuda *g) { (void)g; }
void gen_cuda_set_graphs(gen_cuda *g, int on) { (void)g; (void)on; }
void gen_cuda_forward(gen_cuda *g, const int *tok, const int *pos, const int *slot, int R,
                      const int *lrows, int nl)
{
    (void)g; (void)tok; (void)pos; (void)slot; (void)R; (void)lrows; (void)nl;
    hat_die("gen_cuda_forward: no CUDA back end");
}
void gen_cuda_sample(gen_cuda *g, int l0, int n, const gen_params *p, const double *u,
                     int *ids, float *logprobs)
{
    (void)g; (void)l0; (void)n; (void)p; (void)u; (void)ids; (void)logprobs;
    hat_die("gen_cuda_sample: no CUDA back end");
}
void gen_cuda_logits(gen_cuda *g, int l, float *out)
{
    (void)g; (void)l; (void)out;
    hat_die("gen_cuda_logits: no CUDA back end");
}
void gen_cuda_copy_cache(gen_cuda *g, int dst, int src, int n)
{
    (void)g; (void)dst; (void)src; (void)n;
}
size_t gen_cuda_weight_bytes(const gen_cuda *g) { (void)g; return 0; }

#endif
