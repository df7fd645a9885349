/* model_cuda.c — model.c on one GPU (see model_cuda.h).  The functions
 * below follow model.c call for call (same order, same scales, same
 * zeroing of accumulating buffers), with cuda_X or cuda_X_bf16 in place
 * of X, so a difference between the two is a kernel's rounding, never a
 * different computation. */
#include "model_cuda.h"
#include "kernels.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int model_cuda_precision_parse(const char *s)
{
    if (s && !strcmp(s, "fp32")) return MC_FP32;
    if (s && !strcmp(s, "bf16")) return MC_BF16;
    return -1;
}

const char *model_cuda_precision_name(int precision)
{
    return precision == MC_BF16 ? "bf16" : "fp32";
}

#ifdef HAT_CUDA
#include "cuda/device.h"
#include "cuda/dist.h"
#include "cuda/kernels_cuda.h"

/* One block's activations; void * = the activation type (float or bf16). */
typedef struct {
    void  *ln1, *q, *k, *v, *qr, *kr, *atty, *res_mid, *ln2, *gate, *up, *act, *res_out;
    float *ln1_rstd, *q_rstd, *k_rstd, *att_lse, *ln2_rstd;
} dblock;

/* Backward scratch, as model.c's grad_scratch. */
typedef struct {
    void *dres, *dres_mid, *dln, *dact, *dgate, *dup, *datty;
    void *dqr, *dq, *dkr, *dk, *dv;
    void *dh_mtp, *dcat, *dtmp;
} dgrad;

struct mc_priv {
    size_t  es;                 /* bytes per activation element: 4 or 2 */
    size_t  cap;                /* B*T the activations are carved for */
    char   *acts, *scratch;     /* device arenas; scratch on the first backward */
    dblock *la, mtp_la;
    void   *encoded, *lnf, *logits;
    float  *lnf_rstd, *losses, *lse;
    void   *mtp_emb, *mtp_en, *mtp_hn, *mtp_cat, *mtp_x, *mtp_lnf, *mtp_logits;
    float  *mtp_en_rstd, *mtp_hn_rstd, *mtp_lnf_rstd, *mtp_losses, *mtp_lse;
    dgrad   s;
    float  *att_scratch;
    size_t  att_n;
    int    *tokens, *targets, *pos, *mtp_tokens, *mtp_targets;       /* device (cap) */
    int    *h_tokens, *h_targets, *h_pos, *h_mtp_tokens, *h_mtp_targets;  /* host (cap) */
    float  *h_losses;
    float  *rope_cos, *rope_sin;
    int     rope_len;
    float  *logits32, *h_logits;   /* fp32 logits: device staging (bf16 only), host copy */
    size_t  logits32_n, h_logits_n;
};

#define BF(d) ((d)->precision == MC_BF16)

/* The weights a kernel reads: the fp32 tensor itself, or the same offset
 * in the bf16 copy. */
static const void *W(const model_cuda *d, const float *p)
{
    return BF(d) ? (const void *)(d->params16 + (p - d->params)) : (const void *)p;
}

/* ------------------------------------------------------------ kernel dispatch */

static void mm_fwd(const model_cuda *d, void *out, const void *inp, const void *w,
                   int N, int C, int OC, float beta)
{
    if (BF(d)) cuda_matmul_forward_bf16(out, inp, w, N, C, OC, beta);
    else cuda_matmul_forward(out, inp, w, N, C, OC, beta);
}

static void mm_bwd(const model_cuda *d, void *dinp, float *dw, const void *dout, const void *inp,
                   const void *w, int N, int C, int OC)
{
    if (BF(d)) cuda_matmul_backward_bf16(dinp, dw, dout, inp, w, N, C, OC);
    else cuda_matmul_backward(dinp, dw, dout, inp, w, N, C, OC);
}

static void norm_fwd(const model_cuda *d, void *out, float *rstd, const void *inp, const void *w,
                     int N, int C)
{
    float eps = (float)d->m->cfg.rms_norm_eps;
    if (BF(d)) cuda_rmsnorm_forward_bf16(out, rstd, inp, w, N, C, eps);
    else cuda_rmsnorm_forward(out, rstd, inp, w, N, C, eps);
}

static void norm_bwd(const model_cuda *d, void *dinp, float *dw, const void *dout, const void *inp,
                     const void *w, const float *rstd, int N, int C)
{
    if (BF(d)) cuda_rmsnorm_backward_bf16(dinp, dw, dout, inp, w, rstd, N, C);
    else cuda_rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C);
}

static void rope(const model_cuda *d, void *x, int N, int nh, int back)
{
    mc_priv *P = d->priv;
    int D = d->m->cfg.head_dim;
    if (BF(d)) (back ? cuda_rope_backward_bf16 : cuda_rope_forward_bf16)(x, P->pos, P->rope_cos, P->rope_sin, N, nh, D);
    else (back ? cuda_rope_backward : cuda_rope_forward)(x, P->pos, P->rope_cos, P->rope_sin, N, nh, D);
}

static void swiglu_fwd(const model_cuda *d, void *out, const void *gate, const void *up, size_t n)
{
    if (BF(d)) cuda_swiglu_forward_bf16(out, gate, up, n);
    else cuda_swiglu_forward(out, gate, up, n);
}

static void swiglu_bwd(const model_cuda *d, void *dgate, void *dup, const void *dout,
                       const void *gate, const void *up, size_t n)
{
    if (BF(d)) cuda_swiglu_backward_bf16(dgate, dup, dout, gate, up, n);
    else cuda_swiglu_backward(dgate, dup, dout, gate, up, n);
}

static void emb_fwd(const model_cuda *d, void *out, const int *tok, int N)
{
    int C = d->m->cfg.hidden_size;
    if (BF(d)) cuda_embedding_forward_bf16(out, tok, W(d, d->w.wte), N, C);
    else cuda_embedding_forward(out, tok, d->w.wte, N, C);
}

static void emb_bwd(const model_cuda *d, const void *dout, const int *tok, int N)
{
    int C = d->m->cfg.hidden_size;
    if (BF(d)) cuda_embedding_backward_bf16(d->g.wte, dout, tok, N, C);
    else cuda_embedding_backward(d->g.wte, dout, tok, N, C);
}

static void ce_fwd(const model_cuda *d, float *losses, float *lse, const void *logits,
                   const int *tgt, int N, int V)
{
    if (BF(d)) cuda_crossentropy_forward_bf16(losses, lse, logits, tgt, N, V);
    else cuda_crossentropy_forward(losses, lse, logits, tgt, N, V);
}

static void ce_bwd(const model_cuda *d, void *logits, const float *lse, const int *tgt,
                   int N, int V, float scale)
{
    if (BF(d)) cuda_crossentropy_backward_bf16(logits, logits, lse, tgt, N, V, scale);
    else cuda_crossentropy_backward(logits, logits, lse, tgt, N, V, scale);
}

static void zero_a(const model_cuda *d, void *p, size_t n) { device_zero(p, n * d->priv->es); }
static void copy_a(const model_cuda *d, void *dst, const void *src, size_t n)
{
    device_copy(dst, src, n * d->priv->es);
}

/* ------------------------------------------------------------ buffers */

/* Carving with base NULL only sizes (offsets, 256-byte aligned). */
static void *take(char *base, size_t *off, size_t bytes)
{
    void *r = base ? base + *off : NULL;
    *off += (bytes + 255) / 256 * 256;
    return r;
}
#define TA(n) take(base, off, (size_t)(n) * es)
#define TF(n) (float *)take(base, off, (size_t)(n) * sizeof(float))

static void carve_block(dblock *a, char *base, size_t *off, size_t es, const model_config *c, size_t N)
{
    size_t C = c->hidden_size, I = c->intermediate_size;
    size_t HD = (size_t)c->n_heads * c->head_dim, KD = (size_t)c->n_kv_heads * c->head_dim;
    a->ln1 = TA(N * C);     a->ln1_rstd = TF(N);
    a->q = TA(N * HD);      a->k = TA(N * KD);     a->v = TA(N * KD);
    a->q_rstd = TF(N * c->n_heads);  a->k_rstd = TF(N * c->n_kv_heads);
    a->qr = TA(N * HD);     a->kr = TA(N * KD);
    a->att_lse = TF(N * c->n_heads);                 /* (B,H,T) */
    a->atty = TA(N * HD);
    a->res_mid = TA(N * C);
    a->ln2 = TA(N * C);     a->ln2_rstd = TF(N);
    a->gate = TA(N * I);    a->up = TA(N * I);     a->act = TA(N * I);
    a->res_out = TA(N * C);
}

static size_t carve_acts(model_cuda *d, char *base, size_t N)
{
    mc_priv *P = d->priv;
    const model_config *c = &d->m->cfg;
    size_t es = P->es, C = c->hidden_size, V = c->vocab_size, o = 0, *off = &o;
    P->encoded = TA(N * C);
    for (int l = 0; l < c->n_layers; l++) carve_block(&P->la[l], base, off, es, c, N);
    P->lnf = TA(N * C);         P->lnf_rstd = TF(N);
    P->logits = TA(N * V);
    P->losses = TF(N);          P->lse = TF(N);
    if (c->n_mtp) {
        P->mtp_emb = TA(N * C);
        P->mtp_en = TA(N * C);  P->mtp_en_rstd = TF(N);
        P->mtp_hn = TA(N * C);  P->mtp_hn_rstd = TF(N);
        P->mtp_cat = TA(N * 2 * C);
        P->mtp_x = TA(N * C);
        carve_block(&P->mtp_la, base, off, es, c, N);
        P->mtp_lnf = TA(N * C); P->mtp_lnf_rstd = TF(N);
        P->mtp_logits = TA(N * V);
        P->mtp_losses = TF(N);  P->mtp_lse = TF(N);
    }
    return o;
}

static size_t carve_scratch(model_cuda *d, char *base, size_t N)
{
    mc_priv *P = d->priv;
    dgrad *s = &P->s;
    const model_config *c = &d->m->cfg;
    size_t es = P->es, C = c->hidden_size, I = c->intermediate_size, o = 0, *off = &o;
    size_t HD = (size_t)c->n_heads * c->head_dim, KD = (size_t)c->n_kv_heads * c->head_dim;
    s->dres = TA(N * C);  s->dres_mid = TA(N * C);  s->dln = TA(N * C);
    /* MLP and attention gradients are never live together (model.c) */
    size_t shared = o;
    s->dact = TA(N * I);  s->dgate = TA(N * I);     s->dup = TA(N * I);
    size_t mlp_end = o;
    o = shared;
    s->datty = TA(N * HD);
    s->dqr = TA(N * HD);  s->dq = TA(N * HD);
    s->dkr = TA(N * KD);  s->dk = TA(N * KD);       s->dv = TA(N * KD);
    if (o < mlp_end) o = mlp_end;
    s->dh_mtp = TA(c->n_mtp ? N * C : 0);
    s->dcat = TA(c->n_mtp ? N * 2 * C : 0);
    s->dtmp = TA(c->n_mtp ? N * C : 0);
    return o;
}
#undef TA
#undef TF

static void free_acts(model_cuda *d)
{
    mc_priv *P = d->priv;
    device_free(P->acts);
    device_free(P->scratch);
    device_free(P->att_scratch);
    device_free(P->logits32);
    P->acts = P->scratch = NULL;
    P->att_scratch = P->logits32 = NULL;
    P->att_n = P->logits32_n = 0;
    P->cap = 0;
}

static void ensure_rope(model_cuda *d, int T)
{
    mc_priv *P = d->priv;
    if (T <= P->rope_len) return;
    int half = d->m->cfg.head_dim / 2;
    size_t n = (size_t)T * half;
    float *c = xmalloc(n * sizeof(float)), *s = xmalloc(n * sizeof(float));
    rope_table(c, s, T, d->m->cfg.head_dim, d->m->cfg.rope_theta);
    device_free(P->rope_cos);
    device_free(P->rope_sin);
    P->rope_cos = device_malloc(n * sizeof(float));
    P->rope_sin = device_malloc(n * sizeof(float));
    device_upload(P->rope_cos, c, n * sizeof(float));
    device_upload(P->rope_sin, s, n * sizeof(float));
    free(c);
    free(s);
    P->rope_len = T;
}

/* Room for B*T rows (grow-only), the attention scores of (B,T), the
 * RoPE table to T; then the batch's tokens and positions go up. */
static void ensure_acts(model_cuda *d, const int *tokens, int B, int T)
{
    mc_priv *P = d->priv;
    const model_config *c = &d->m->cfg;
    size_t N = (size_t)B * T;
    if (N > P->cap || !P->acts) {
        free_acts(d);
        P->acts = device_malloc(carve_acts(d, NULL, N));
        carve_acts(d, P->acts, N);
        P->cap = N;
        device_free(P->tokens); device_free(P->targets); device_free(P->pos);
        device_free(P->mtp_tokens); device_free(P->mtp_targets);
        free(P->h_tokens); free(P->h_targets); free(P->h_pos);
        free(P->h_mtp_tokens); free(P->h_mtp_targets); free(P->h_losses);
        P->tokens = device_malloc(N * sizeof(int));
        P->targets = device_malloc(N * sizeof(int));
        P->pos = device_malloc(N * sizeof(int));
        P->mtp_tokens = device_malloc(N * sizeof(int));
        P->mtp_targets = device_malloc(N * sizeof(int));
        P->h_tokens = xcalloc(N, sizeof(int));
        P->h_targets = xcalloc(N, sizeof(int));
        P->h_pos = xcalloc(N, sizeof(int));
        P->h_mtp_tokens = xcalloc(N, sizeof(int));
        P->h_mtp_targets = xcalloc(N, sizeof(int));
        P->h_losses = xcalloc(N, sizeof(float));
    }
    size_t an = cuda_attention_scratch_floats(B, T, c->n_heads);
    if (an > P->att_n) {
        device_free(P->att_scratch);
        P->att_scratch = device_malloc(an * sizeof(float));
        P->att_n = an;
    }
    ensure_rope(d, T);
    d->B = B;
    d->T = T;
    for (size_t i = 0; i < N; i++) P->h_pos[i] = (int)(i % T);
    memcpy(P->h_tokens, tokens, N * sizeof(int));
    device_upload(P->pos, P->h_pos, N * sizeof(int));
    device_upload(P->tokens, tokens, N * sizeof(int));
}

/* ------------------------------------------------------------ lifetime */

static model_cuda *create(model *m, int precision, int trainable)
{
    if (device_init(-1) != 0) return NULL;   /* it said why */
    model_cuda *d = xcalloc(1, sizeof *d);
    d->m = m;
    d->precision = precision == MC_BF16 ? MC_BF16 : MC_FP32;
    d->n_floats = m->n_floats;
    d->priv = xcalloc(1, sizeof *d->priv);
    d->priv->es = BF(d) ? sizeof(hat_bf16) : sizeof(float);
    d->priv->la = xcalloc(m->cfg.n_layers, sizeof *d->priv->la);
    size_t bytes = d->n_floats * sizeof(float);
    d->params = device_malloc(bytes);
    if (trainable) {
        d->grads = device_malloc(bytes);
        d->exp_avg = device_malloc(bytes);
        d->exp_avg_sq = device_malloc(bytes);
    }
    if (BF(d)) d->params16 = device_malloc(d->n_floats * sizeof(hat_bf16));
    model_bind(m, &d->w, d->params);
    model_bind(m, &d->g, d->grads);          /* all NULL when frozen */
    model_cuda_upload(d, m->params);
    return d;
}

model_cuda *model_cuda_new(model *m, int precision) { return create(m, precision, 1); }

/* The model is only read (upload); d->m is not const for the trainable
 * case, whose downloads write it. */
model_cuda *model_cuda_new_frozen(const model *m, int precision)
{
    return create((model *)m, precision, 0);
}

static void need_grads(const model_cuda *d, const char *fn)
{
    if (!d->grads) hat_die("model_cuda: %s on a forward-only copy", fn);
}

void model_cuda_free(model_cuda *d)
{
    if (!d) return;
    mc_priv *P = d->priv;
    free_acts(d);
    device_free(P->tokens); device_free(P->targets); device_free(P->pos);
    device_free(P->mtp_tokens); device_free(P->mtp_targets);
    device_free(P->rope_cos); device_free(P->rope_sin);
    free(P->h_tokens); free(P->h_targets); free(P->h_pos);
    free(P->h_mtp_tokens); free(P->h_mtp_targets); free(P->h_losses);
    free(P->h_logits);
    free(P->la);
    free(P);
    device_free(d->params); device_free(d->params16); device_free(d->grads);
    device_free(d->exp_avg); device_free(d->exp_avg_sq);
    free(d->w.layers);
    free(d->g.layers);
    free(d);
}

void model_cuda_release_acts(model_cuda *d)
{
    free_acts(d);
    free(d->priv->h_logits);
    d->priv->h_logits = NULL;
    d->priv->h_logits_n = 0;
}

void model_cuda_upload(model_cuda *d, const float *params)
{
    device_upload(d->params, params, d->n_floats * sizeof(float));
    if (BF(d)) cuda_f32_to_bf16(d->params16, d->params, d->n_floats);
}

void model_cuda_upload_moments(model_cuda *d, const float *exp_avg, const float *exp_avg_sq)
{
    need_grads(d, "model_cuda_upload_moments");
    if (exp_avg) device_upload(d->exp_avg, exp_avg, d->n_floats * sizeof(float));
    if (exp_avg_sq) device_upload(d->exp_avg_sq, exp_avg_sq, d->n_floats * sizeof(float));
}

void model_cuda_download(model_cuda *d, float *params, float *grads, float *exp_avg,
                         float *exp_avg_sq)
{
    size_t bytes = d->n_floats * sizeof(float);
    if (params) device_download(params, d->params, bytes);
    if (grads || exp_avg || exp_avg_sq) need_grads(d, "model_cuda_download");
    if (grads) device_download(grads, d->grads, bytes);
    if (exp_avg) device_download(exp_avg, d->exp_avg, bytes);
    if (exp_avg_sq) device_download(exp_avg_sq, d->exp_avg_sq, bytes);
    if (params && params == d->m->params) d->m->version++;
}

/* ------------------------------------------------------------ forward */

static void block_forward(model_cuda *d, const block_weights *w, dblock *a, const void *x)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    int B = d->B, T = d->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, HD = H * D, KD = KV * D;
    norm_fwd(d, a->ln1, a->ln1_rstd, x, W(d, w->in_norm), N, C);
    mm_fwd(d, a->q, a->ln1, W(d, w->wq), N, C, HD, 0);
    mm_fwd(d, a->k, a->ln1, W(d, w->wk), N, C, KD, 0);
    mm_fwd(d, a->v, a->ln1, W(d, w->wv), N, C, KD, 0);
    norm_fwd(d, a->qr, a->q_rstd, a->q, W(d, w->q_norm), N * H, D);
    norm_fwd(d, a->kr, a->k_rstd, a->k, W(d, w->k_norm), N * KV, D);
    rope(d, a->qr, N, H, 0);
    rope(d, a->kr, N, KV, 0);
    if (BF(d)) cuda_attention_forward_bf16(a->atty, a->att_lse, P->att_scratch, a->qr, a->kr, a->v, B, T, H, KV, D);
    else cuda_attention_forward(a->atty, a->att_lse, P->att_scratch, a->qr, a->kr, a->v, B, T, H, KV, D);
    copy_a(d, a->res_mid, x, (size_t)N * C);
    mm_fwd(d, a->res_mid, a->atty, W(d, w->wo), N, HD, C, 1.0f);
    norm_fwd(d, a->ln2, a->ln2_rstd, a->res_mid, W(d, w->post_norm), N, C);
    mm_fwd(d, a->gate, a->ln2, W(d, w->wgate), N, C, I, 0);
    mm_fwd(d, a->up, a->ln2, W(d, w->wup), N, C, I, 0);
    swiglu_fwd(d, a->act, a->gate, a->up, (size_t)N * I);
    copy_a(d, a->res_out, a->res_mid, (size_t)N * C);
    mm_fwd(d, a->res_out, a->act, W(d, w->wdown), N, I, C, 1.0f);
}

static void trunk_forward(model_cuda *d)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    int N = d->B * d->T, C = c->hidden_size, V = c->vocab_size;
    emb_fwd(d, P->encoded, P->tokens, N);
    const void *x = P->encoded;
    for (int l = 0; l < c->n_layers; l++) {
        block_forward(d, &d->w.layers[l], &P->la[l], x);
        x = P->la[l].res_out;
    }
    norm_fwd(d, P->lnf, P->lnf_rstd, x, W(d, d->w.norm), N, C);
    mm_fwd(d, P->logits, P->lnf, W(d, d->w.lm_head), N, C, V, 0);
}

static void mtp_forward(model_cuda *d, const void *h)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    int B = d->B, T = d->T, N = B * T, C = c->hidden_size, V = c->vocab_size;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int i = b * T + t, last = t + 1 >= T;
            P->h_mtp_tokens[i] = last ? 0 : P->h_tokens[i + 1];
            P->h_mtp_targets[i] = last ? -1 : P->h_targets[i + 1];
        }
    device_upload(P->mtp_tokens, P->h_mtp_tokens, (size_t)N * sizeof(int));
    device_upload(P->mtp_targets, P->h_mtp_targets, (size_t)N * sizeof(int));
    emb_fwd(d, P->mtp_emb, P->mtp_tokens, N);
    norm_fwd(d, P->mtp_en, P->mtp_en_rstd, P->mtp_emb, W(d, d->w.mtp_enorm), N, C);
    norm_fwd(d, P->mtp_hn, P->mtp_hn_rstd, h, W(d, d->w.mtp_hnorm), N, C);
    if (BF(d)) cuda_concat_rows_bf16(P->mtp_cat, P->mtp_en, P->mtp_hn, N, C, C);
    else cuda_concat_rows(P->mtp_cat, P->mtp_en, P->mtp_hn, N, C, C);
    mm_fwd(d, P->mtp_x, P->mtp_cat, W(d, d->w.mtp_fc), N, 2 * C, C, 0);
    block_forward(d, &d->w.mtp_block, &P->mtp_la, P->mtp_x);
    norm_fwd(d, P->mtp_lnf, P->mtp_lnf_rstd, P->mtp_la.res_out, W(d, d->w.norm), N, C);
    mm_fwd(d, P->mtp_logits, P->mtp_lnf, W(d, d->w.lm_head), N, C, V, 0);
    ce_fwd(d, P->mtp_losses, P->mtp_lse, P->mtp_logits, P->mtp_targets, N, V);
    device_download(P->h_losses, P->mtp_losses, (size_t)N * sizeof(float));
    d->mtp_loss_sum = model_sum_losses(P->h_losses, P->h_mtp_targets, N, &d->n_mtp_targets);
}

float model_cuda_forward(model_cuda *d, const int *tokens, const int *targets, int B, int T)
{
    const model_config *c = &d->m->cfg;
    ensure_acts(d, tokens, B, T);
    mc_priv *P = d->priv;
    int N = B * T, V = c->vocab_size;
    memcpy(P->h_targets, targets, (size_t)N * sizeof(int));
    device_upload(P->targets, targets, (size_t)N * sizeof(int));
    trunk_forward(d);
    ce_fwd(d, P->losses, P->lse, P->logits, P->targets, N, V);
    device_download(P->h_losses, P->losses, (size_t)N * sizeof(float));
    d->loss_sum = model_sum_losses(P->h_losses, P->h_targets, N, &d->n_targets);
    double loss = d->n_targets ? d->loss_sum / d->n_targets : 0;
    d->mtp_loss_sum = 0;
    d->n_mtp_targets = 0;
    if (c->n_mtp) {
        mtp_forward(d, P->la[c->n_layers - 1].res_out);
        if (d->n_mtp_targets) loss += c->mtp_loss_weight * d->mtp_loss_sum / d->n_mtp_targets;
    }
    return (float)loss;
}

/* ------------------------------------------------------------ backward */

/* s->dres: on entry d(block output), on exit d(block input x). */
static void block_backward(model_cuda *d, const block_weights *w, block_weights *gw,
                           const dblock *a, const void *x)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    dgrad *s = &P->s;
    int B = d->B, T = d->T, N = B * T, C = c->hidden_size, I = c->intermediate_size;
    int H = c->n_heads, KV = c->n_kv_heads, D = c->head_dim, HD = H * D, KD = KV * D;
    size_t NC = (size_t)N * C, NI = (size_t)N * I;
    /* MLP */
    zero_a(d, s->dact, NI);
    mm_bwd(d, s->dact, gw->wdown, s->dres, a->act, W(d, w->wdown), N, I, C);
    zero_a(d, s->dgate, NI); zero_a(d, s->dup, NI);
    swiglu_bwd(d, s->dgate, s->dup, s->dact, a->gate, a->up, NI);
    zero_a(d, s->dln, NC);
    mm_bwd(d, s->dln, gw->wgate, s->dgate, a->ln2, W(d, w->wgate), N, C, I);
    mm_bwd(d, s->dln, gw->wup, s->dup, a->ln2, W(d, w->wup), N, C, I);
    copy_a(d, s->dres_mid, s->dres, NC);
    norm_bwd(d, s->dres_mid, gw->post_norm, s->dln, a->res_mid, W(d, w->post_norm), a->ln2_rstd, N, C);
    /* attention */
    zero_a(d, s->datty, (size_t)N * HD);
    mm_bwd(d, s->datty, gw->wo, s->dres_mid, a->atty, W(d, w->wo), N, HD, C);
    zero_a(d, s->dqr, (size_t)N * HD); zero_a(d, s->dkr, (size_t)N * KD); zero_a(d, s->dv, (size_t)N * KD);
    if (BF(d))
        cuda_attention_backward_bf16(s->dqr, s->dkr, s->dv, P->att_scratch, s->datty, a->atty, a->att_lse,
                                     a->qr, a->kr, a->v, B, T, H, KV, D);
    else
        cuda_attention_backward(s->dqr, s->dkr, s->dv, P->att_scratch, s->datty, a->atty, a->att_lse,
                                a->qr, a->kr, a->v, B, T, H, KV, D);
    rope(d, s->dqr, N, H, 1);
    rope(d, s->dkr, N, KV, 1);
    zero_a(d, s->dq, (size_t)N * HD); zero_a(d, s->dk, (size_t)N * KD);
    norm_bwd(d, s->dq, gw->q_norm, s->dqr, a->q, W(d, w->q_norm), a->q_rstd, N * H, D);
    norm_bwd(d, s->dk, gw->k_norm, s->dkr, a->k, W(d, w->k_norm), a->k_rstd, N * KV, D);
    zero_a(d, s->dln, NC);
    mm_bwd(d, s->dln, gw->wq, s->dq, a->ln1, W(d, w->wq), N, C, HD);
    mm_bwd(d, s->dln, gw->wk, s->dk, a->ln1, W(d, w->wk), N, C, KD);
    mm_bwd(d, s->dln, gw->wv, s->dv, a->ln1, W(d, w->wv), N, C, KD);
    copy_a(d, s->dres, s->dres_mid, NC);
    norm_bwd(d, s->dres, gw->in_norm, s->dln, x, W(d, w->in_norm), a->ln1_rstd, N, C);
}

/* Leaves d(loss)/d(h) from the MTP branch in s->dh_mtp. */
static void mtp_backward(model_cuda *d, const void *h, float scale)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    dgrad *s = &P->s;
    int N = d->B * d->T, C = c->hidden_size, V = c->vocab_size;
    size_t NC = (size_t)N * C;
    ce_bwd(d, P->mtp_logits, P->mtp_lse, P->mtp_targets, N, V, scale);
    zero_a(d, s->dln, NC);
    mm_bwd(d, s->dln, d->g.lm_head, P->mtp_logits, P->mtp_lnf, W(d, d->w.lm_head), N, C, V);
    zero_a(d, s->dres, NC);
    norm_bwd(d, s->dres, d->g.norm, s->dln, P->mtp_la.res_out, W(d, d->w.norm), P->mtp_lnf_rstd, N, C);
    block_backward(d, &d->w.mtp_block, &d->g.mtp_block, &P->mtp_la, P->mtp_x);
    zero_a(d, s->dcat, NC * 2);
    mm_bwd(d, s->dcat, d->g.mtp_fc, s->dres, P->mtp_cat, W(d, d->w.mtp_fc), N, 2 * C, C);
    /* split [d emb ; d hidden] */
    if (BF(d)) cuda_split_rows_bf16(s->dln, s->dres_mid, s->dcat, N, C, C);
    else cuda_split_rows(s->dln, s->dres_mid, s->dcat, N, C, C);
    zero_a(d, s->dtmp, NC);
    norm_bwd(d, s->dtmp, d->g.mtp_enorm, s->dln, P->mtp_emb, W(d, d->w.mtp_enorm), P->mtp_en_rstd, N, C);
    emb_bwd(d, s->dtmp, P->mtp_tokens, N);
    zero_a(d, s->dh_mtp, NC);
    norm_bwd(d, s->dh_mtp, d->g.mtp_hnorm, s->dres_mid, h, W(d, d->w.mtp_hnorm), P->mtp_hn_rstd, N, C);
}

static void ensure_scratch(model_cuda *d)
{
    mc_priv *P = d->priv;
    if (!P->scratch) P->scratch = device_malloc(carve_scratch(d, NULL, P->cap));
    carve_scratch(d, P->scratch, P->cap);
}

/* From d(loss)/d(logits) in P->logits (and the MTP part in s->dh_mtp when
 * with_mtp) down to the embedding. */
static void trunk_backward(model_cuda *d, int with_mtp)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    dgrad *s = &P->s;
    int N = d->B * d->T, C = c->hidden_size, V = c->vocab_size, L = c->n_layers;
    size_t NC = (size_t)N * C;
    const void *h = P->la[L - 1].res_out;
    zero_a(d, s->dln, NC);
    mm_bwd(d, s->dln, d->g.lm_head, P->logits, P->lnf, W(d, d->w.lm_head), N, C, V);
    if (with_mtp) copy_a(d, s->dres, s->dh_mtp, NC);
    else zero_a(d, s->dres, NC);
    norm_bwd(d, s->dres, d->g.norm, s->dln, h, W(d, d->w.norm), P->lnf_rstd, N, C);
    for (int l = L - 1; l >= 0; l--) {
        const void *x = l ? P->la[l - 1].res_out : P->encoded;
        block_backward(d, &d->w.layers[l], &d->g.layers[l], &P->la[l], x);
    }
    emb_bwd(d, s->dres, P->tokens, N);
}

void model_cuda_backward(model_cuda *d, float main_scale, float mtp_scale)
{
    const model_config *c = &d->m->cfg;
    mc_priv *P = d->priv;
    need_grads(d, "model_cuda_backward");
    ensure_scratch(d);
    int N = d->B * d->T, V = c->vocab_size;
    if (c->n_mtp) mtp_backward(d, P->la[c->n_layers - 1].res_out, mtp_scale);
    ce_bwd(d, P->logits, P->lse, P->targets, N, V, main_scale);
    trunk_backward(d, c->n_mtp != 0);
}

void model_cuda_backward_mean(model_cuda *d)
{
    float ms = d->n_targets ? 1.0f / d->n_targets : 0;
    float ts = d->n_mtp_targets ? d->m->cfg.mtp_loss_weight / d->n_mtp_targets : 0;
    model_cuda_backward(d, ms, ts);
}

/* ------------------------------------------------------------ logits in, gradients out */

static float *ensure_logits32(model_cuda *d, size_t n)
{
    mc_priv *P = d->priv;
    if (n > P->logits32_n) {
        device_free(P->logits32);
        P->logits32 = device_malloc(n * sizeof(float));
        P->logits32_n = n;
    }
    return P->logits32;
}

float *model_cuda_forward_logits(model_cuda *d, const int *tokens, int B, int T)
{
    ensure_acts(d, tokens, B, T);
    mc_priv *P = d->priv;
    size_t N = (size_t)B * T, n = N * d->m->cfg.vocab_size;
    for (size_t i = 0; i < N; i++) P->h_targets[i] = -1;
    trunk_forward(d);
    d->loss_sum = d->mtp_loss_sum = 0;
    d->n_targets = d->n_mtp_targets = 0;
    if (n > P->h_logits_n) {
        free(P->h_logits);
        P->h_logits = xmalloc(n * sizeof(float));
        P->h_logits_n = n;
    }
    if (BF(d)) {
        float *l32 = ensure_logits32(d, n);
        cuda_bf16_to_f32(l32, P->logits, n);
        device_download(P->h_logits, l32, n * sizeof(float));
    } else {
        device_download(P->h_logits, P->logits, n * sizeof(float));
    }
    return P->h_logits;
}

void model_cuda_backward_dlogits(model_cuda *d, const float *dlogits)
{
    mc_priv *P = d->priv;
    size_t n = (size_t)d->B * d->T * d->m->cfg.vocab_size;
    need_grads(d, "model_cuda_backward_dlogits");
    ensure_scratch(d);
    if (BF(d)) {
        float *l32 = ensure_logits32(d, n);
        device_upload(l32, dlogits, n * sizeof(float));
        cuda_f32_to_bf16(P->logits, l32, n);
    } else {
        device_upload(P->logits, dlogits, n * sizeof(float));
    }
    trunk_backward(d, 0);
}

/* ------------------------------------------------------------ optimiser */

void model_cuda_zero_grad(model_cuda *d)
{
    need_grads(d, "model_cuda_zero_grad");
    device_zero(d->grads, d->n_floats * sizeof(float));
}

double model_cuda_grad_norm(model_cuda *d)
{
    need_grads(d, "model_cuda_grad_norm");
    return sqrt(cuda_sumsq(d->grads, d->n_floats));   /* padding is always zero */
}

double model_cuda_grad_clip(model_cuda *d, float max_norm)
{
    double n = model_cuda_grad_norm(d);
    if (max_norm > 0 && n > max_norm)
        cuda_scale_inplace(d->grads, d->n_floats, (float)(max_norm / (n + 1e-6)));
    return n;
}

void model_cuda_adamw_step(model_cuda *d, const optim_config *o, float lr, long t)
{
    const model *m = d->m;
    need_grads(d, "model_cuda_adamw_step");
    for (int i = 0; i < m->n_tensors; i++) {
        const model_tensor *mt = &m->tensors[i];
        size_t off = mt->offset;
        float wd = mt->decay ? o->weight_decay : 0.0f;
        if (BF(d))
            cuda_adamw_update_bf16(d->params + off, d->params16 + off, d->exp_avg + off,
                                   d->exp_avg_sq + off, d->grads + off, mt->numel, lr, o->beta1,
                                   o->beta2, o->eps, wd, (int)t);
        else
            cuda_adamw_update(d->params + off, d->exp_avg + off, d->exp_avg_sq + off,
                              d->grads + off, mt->numel, lr, o->beta1, o->beta2, o->eps, wd, (int)t);
    }
}

/* ------------------------------------------------------------ data parallel */

struct mc_dist { hat_dist d; };

int model_cuda_dist_env(int *rank, int *world)
{
    int local;
    return dist_env(rank, world, &local);
}

mc_dist *model_cuda_dist_open(void)
{
    mc_dist *x = xcalloc(1, sizeof *x);
    if (dist_init(&x->d, NULL)) { free(x); return NULL; }
    return x;
}

void model_cuda_dist_close(mc_dist *x)
{
    if (!x) return;
    dist_free(&x->d);
    free(x);
}

int model_cuda_dist_rank(const mc_dist *x) { return x ? x->d.rank : 0; }
int model_cuda_dist_world(const mc_dist *x) { return x ? x->d.world : 1; }

void model_cuda_allreduce_grads(model_cuda *d, mc_dist *x, float scale)
{
    dist_allreduce_f32(&x->d, d->grads, d->n_floats, scale);
}

double model_cuda_dist_sum(mc_dist *x, double v) { return dist_sum_double(&x->d, v); }

#else  /* no CUDA back end: creation fails with the reason, the rest is unreachable */

model_cuda *model_cuda_new(model *m, int precision)
{
    (void)m; (void)precision;
    hat_warn("cuda: this build has no CUDA back end (rebuild with make CUDA=1)");
    return NULL;
}

model_cuda *model_cuda_new_frozen(const model *m, int precision)
{
    return model_cuda_new((model *)m, precision);
}

void model_cuda_free(model_cuda *d) { (void)d; }

static void no_cuda(void) __attribute__((noreturn));
static void no_cuda(void) { hat_die("model_cuda: this build has no CUDA back end"); }

void   model_cuda_upload(model_cuda *d, const float *p) { (void)d; (void)p; no_cuda(); }
void   model_cuda_upload_moments(model_cuda *d, const float *a, const float *b) { (void)d; (void)a; (void)b; no_cuda(); }
void   model_cuda_download(model_cuda *d, float *p, float *g, float *a, float *b)
{ (void)d; (void)p; (void)g; (void)a; (void)b; no_cuda(); }
float  model_cuda_forward(model_cuda *d, const int *tok, const int *tgt, int B, int T)
{ (void)d; (void)tok; (void)tgt; (void)B; (void)T; no_cuda(); }
void   model_cuda_backward(model_cuda *d, float a, float b) { (void)d; (void)a; (void)b; no_cuda(); }
void   model_cuda_backward_mean(model_cuda *d) { (void)d; no_cuda(); }
float *model_cuda_forward_logits(model_cuda *d, const int *tok, int B, int T)
{ (void)d; (void)tok; (void)B; (void)T; no_cuda(); }
void   model_cuda_backward_dlogits(model_cuda *d, const float *dl) { (void)d; (void)dl; no_cuda(); }
void   model_cuda_zero_grad(model_cuda *d) { (void)d; no_cuda(); }
double model_cuda_grad_norm(model_cuda *d) { (void)d; no_cuda(); }
double model_cuda_grad_clip(model_cuda *d, float mx) { (void)d; (void)mx; no_cuda(); }
void   model_cuda_adamw_step(model_cuda *d, const optim_config *o, float lr, long t)
{ (void)d; (void)o; (void)lr; (void)t; no_cuda(); }
void   model_cuda_release_acts(model_cuda *d) { (void)d; }

/* The launchers' variables (dist.h), read here too so that a
 * data-parallel launch of a build without CUDA stops instead of running
 * N copies of the same CPU job into the same output. */
int model_cuda_dist_env(int *rank, int *world)
{
    static const char *vars[][2] = { { "HAT_RANK", "HAT_WORLD_SIZE" },
                                     { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
                                     { "PMI_RANK", "PMI_SIZE" }, { "SLURM_PROCID", "SLURM_NTASKS" } };
    *rank = 0;
    *world = 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *r = getenv(vars[i][0]), *w = getenv(vars[i][1]);
        if ((!r || !*r) && (!w || !*w)) continue;
        *rank = r ? atoi(r) : 0;
        *world = w ? atoi(w) : 1;
        if (*world < 1 || *rank < 0 || *rank >= *world) {
            hat_warn("dist: %s/%s must be set together, 0 <= rank < size", vars[i][0], vars[i][1]);
            return -1;
        }
        return 0;
    }
    return 0;
}

mc_dist *model_cuda_dist_open(void)
{
    hat_warn("dist: this build has no CUDA back end (rebuild with make CUDA=1)");
    return NULL;
}
void   model_cuda_dist_close(mc_dist *x) { (void)x; }
int    model_cuda_dist_rank(const mc_dist *x) { (void)x; return 0; }
int    model_cuda_dist_world(const mc_dist *x) { (void)x; return 1; }
void   model_cuda_allreduce_grads(model_cuda *d, mc_dist *x, float s) { (void)d; (void)x; (void)s; no_cuda(); }
double model_cuda_dist_sum(mc_dist *x, double v) { (void)x; (void)v; no_cuda(); }

#endif
