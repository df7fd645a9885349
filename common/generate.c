/* generate.c — KV-cache decoding with batched prefill, continuous
 * batching, cache reuse across turns and prompts, and MTP speculative
 * decoding (see generate.h).  Rows of all running sequences go through
 * the same row-invariant kernels; attention reads each row's own cache.
 *
 * A sequence's tokens: toks[0, len) have K/V in the cache, toks[len, ntok)
 * are queued for the next step (at least one: the last sampled token, or
 * a prompt), draft[0, nd) are MTP drafts for positions ntok, ntok+1, ...
 * The MTP block's cache holds positions [0, mlen); position s needs the
 * main model's final hidden state at s and the token at s+1, so it is
 * filled right after the step that cached s, while those states are
 * still in the row buffers. */
#include "generate.h"
#include "generate_cuda.h"
#include "kernels.h"
#include "model_cuda.h"
#include "util.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* A shared prompt prefix (gen_add_shared): the K/V of its n tokens,
 * computed once and read by every sequence that starts with them.  Keyed
 * by the token ids (hash, then compared in full); refs counts the slots
 * whose cache starts with it (removed ones included, whose cache stays
 * readable for reuse); freed when the last lets go. */
typedef struct gen_prefix {
    int        n, refs;
    uint64_t   hash;
    int       *toks;                      /* (n) */
    float     *kc, *vc;                   /* (L, KV, n, D) */
    struct gen_prefix *next;
} gen_prefix;

typedef struct {
    int        active, status;
    int        len, ntok, mlen;
    int       *toks;                      /* (max_len) */
    int        n_prompt, n_out;           /* output = toks[n_prompt, n_prompt + n_out) */
    float     *logprobs;                  /* (max_len) */
    float     *kc, *vc;                   /* (L, KV, max_len, D); rows below pre->n unused */
    gen_prefix *pre;                      /* positions [0, pre->n) live there, or NULL */
    float     *mkc, *mvc;                 /* (KV, max_len, D) MTP block; NULL without MTP */
    int        nd, draft[GEN_MTP_MAX];
    float     *dq;                        /* (GEN_MTP_MAX, V) draft distributions (sampling) */
    gen_params p;
    rng_t      rng;
    int        len0, row0, lrow0;         /* this step: len before, first row, first logits row */
    int        mrow;                      /* MTP row whose output feeds the next chained draft */
    int        wait;                      /* slot whose queued prefix this one copies once computed, or -1 */
} gen_seq;

struct gen_engine {
    const model *m;
    int   max_seqs, max_len, cap_rows, cap_logits, has_mtp, prefix_reuse;
    int   step_prefill;                     /* this step carries prompt rows */
    /* MTP drafts run on a bf16 copy of the MTP module and the LM head:
     * a draft is only a proposal the fp32 model verifies, and drafting
     * reads half the bytes (see draft_weights) */
    uint32_t *dw;                           /* packed bf16, NULL = fp32 drafts */
    const uint32_t *dfc, *dhead;            /* mtp.fc, lm_head in dw */
    const uint32_t *dblk[7];                /* mtp block: wq wk wv wo wgate wup wdown */
    unsigned long dw_version;
    gen_seq *seq;
    gen_prefix *prefixes;                   /* live shared prefixes */
    gen_stats st;
    /* row buffers, sized for cap_rows (main and MTP passes share them) */
    int   *tok, *pos, *slot, *nctx, *npre;
    int    cs;                              /* positions a kv head holds in the rows' caches kcp/vcp */
    float **kcp, **vcp;
    const float **kpp, **vpp;               /* rows' shared prefixes (npre rows) */
    float *x, *ln, *q, *k, *v, *att, *gate, *up;
    float *mh, *mcat, *mx;                  /* MTP: hidden in, [emb ; hidden], block residual */
    float *att_scratch;
    float *logits, *lnrow;                  /* (cap_logits, V) (cap_logits, C) */
    float *pdist, *sample_scratch;          /* (V) (2V) */
    /* GPU back end (gen_new_cuda): the forward pass and sampling run
     * there; the host keeps only the row indices */
    gen_cuda *gpu;
    int   *lseq;                            /* (max_seqs) sequence of each logits row */
    int   *lrow;                            /* (max_seqs) its row in the forward pass */
    int   *ids;                             /* (max_seqs) sampled ids */
    float *lps;                             /* (max_seqs) their log-probs */
    double *u;                              /* (max_seqs) their uniform draws */
};

static void ensure_rows(gen_engine *e, int R)
{
    if (R <= e->cap_rows) return;
    const model_config *c = &e->m->cfg;
    size_t C = c->hidden_size, I = c->intermediate_size, HD = (size_t)c->n_heads * c->head_dim;
    size_t KD = (size_t)c->n_kv_heads * c->head_dim;
    R = R > 2 * e->cap_rows ? R : 2 * e->cap_rows;
    e->cap_rows = R;
#define GROW(p, n) (p = xrealloc(p, (n) * sizeof *p))
    GROW(e->tok, R); GROW(e->pos, R); GROW(e->slot, R); GROW(e->nctx, R);
    if (e->gpu) return;                      /* the rows' data lives on the device */
    GROW(e->kcp, R); GROW(e->vcp, R); GROW(e->kpp, R); GROW(e->vpp, R); GROW(e->npre, R);
    GROW(e->x, R * C); GROW(e->ln, R * C); GROW(e->q, R * HD); GROW(e->k, R * KD);
    GROW(e->v, R * KD); GROW(e->att, R * HD); GROW(e->gate, R * I); GROW(e->up, R * I);
    if (e->has_mtp) { GROW(e->mh, R * C); GROW(e->mcat, R * 2 * C); GROW(e->mx, R * C); }
#undef GROW
}

static void ensure_logits(gen_engine *e, int n)
{
    if (n <= e->cap_logits) return;
    const model_config *c = &e->m->cfg;
    e->cap_logits = n;
    e->logits = xrealloc(e->logits, (size_t)n * c->vocab_size * sizeof(float));
    e->lnrow = xrealloc(e->lnrow, (size_t)n * c->hidden_size * sizeof(float));
}

/* gpu: the GPU back end that computes (no host caches, no MTP), or NULL. */
static gen_engine *engine_new(const model *m, int max_seqs, int max_len, gen_cuda *gpu)
{
    gen_engine *e = xcalloc(1, sizeof *e);
    const model_config *c = &m->cfg;
    e->m = m;
    e->max_seqs = max_seqs;
    e->max_len = max_len;
    e->gpu = gpu;
    e->has_mtp = !gpu && c->n_mtp > 0 && m->w.mtp_fc;
    e->prefix_reuse = 1;
    e->seq = xcalloc(max_seqs, sizeof *e->seq);
    size_t KD = (size_t)c->n_kv_heads * c->head_dim, cache = (size_t)c->n_layers * max_len * KD;
    for (int i = 0; i < max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        s->toks = xmalloc(max_len * sizeof(int));
        s->logprobs = xmalloc(max_len * sizeof(float));
        if (gpu) continue;
        s->kc = xmalloc(cache * sizeof(float));
        s->vc = xmalloc(cache * sizeof(float));
        if (e->has_mtp) {
            s->mkc = xmalloc(max_len * KD * sizeof(float));
            s->mvc = xmalloc(max_len * KD * sizeof(float));
            s->dq = xmalloc((size_t)GEN_MTP_MAX * c->vocab_size * sizeof(float));
        }
    }
    if (gpu) {
        e->lseq = xmalloc(max_seqs * sizeof(int));
        e->lrow = xmalloc(max_seqs * sizeof(int));
        e->ids = xmalloc(max_seqs * sizeof(int));
        e->lps = xmalloc(max_seqs * sizeof(float));
        e->u = xmalloc(max_seqs * sizeof(double));
        return e;
    }
    e->att_scratch = xmalloc(attention_rows_scratch(max_len, c->n_heads, c->n_kv_heads) * sizeof(float));
    e->pdist = xmalloc((size_t)c->vocab_size * sizeof(float));
    e->sample_scratch = xmalloc(2 * (size_t)c->vocab_size * sizeof(float));
    ensure_logits(e, max_seqs);
    model_rope_ensure((model *)m, max_len);
    return e;
}

gen_engine *gen_new(const model *m, int max_seqs, int max_len)
{
    return engine_new(m, max_seqs, max_len, NULL);
}

gen_engine *gen_new_cuda(const model *m, int max_seqs, int max_len, int precision,
                         const char **why)
{
    gen_cuda *g = gen_cuda_new(m, max_seqs, max_len, precision, why);
    return g ? engine_new(m, max_seqs, max_len, g) : NULL;
}

int gen_on_gpu(const gen_engine *e) { return e->gpu != NULL; }
const char *gen_device_name(const gen_engine *e) { return e->gpu ? "cuda" : "cpu"; }

/* ------------------------------------------------------------ the device */

_Static_assert((int)GEN_CUDA_FP32 == (int)MC_FP32 && (int)GEN_CUDA_BF16 == (int)MC_BF16,
               "one --precision value serves the decoder and the trainers");

hat_device gen_device_arg(const cli_spec *spec, const char *arg)
{
    hat_device d = device_parse(arg);
    if (d == HAT_DEVICE_INVALID)
        cli_usage_error(spec, "--device: must be cpu, cuda or auto (not \"%s\")", arg);
    return d;
}

int gen_precision_arg(const cli_spec *spec, const char *arg)
{
    int p = model_cuda_precision_parse(arg);
    if (p < 0) cli_usage_error(spec, "--precision: must be bf16 or fp32 (not \"%s\")", arg);
    return p;
}

int gen_device_check(const gen_device *d, char **err)
{
    *err = NULL;
    if (!d || d->device != HAT_DEVICE_CUDA) return 0;     /* cpu; auto never fails */
    if (d->mtp) {
        *err = xstrdup("--mtp is not supported with --device cuda (no speculative decoding on the GPU)");
        return EXIT_USAGE;
    }
    const char *why = NULL;
    if (device_resolve(HAT_DEVICE_CUDA, &why) == HAT_DEVICE_INVALID) {
        *err = xasprintf("--device cuda: %s", why);
        return EXIT_FAIL;
    }
    return 0;
}

gen_engine *gen_open(const model *m, int max_seqs, int max_len, const gen_device *d, char **err)
{
    *err = NULL;
    if (gen_device_check(d, err)) return NULL;
    hat_device want = d ? d->device : HAT_DEVICE_CPU;
    if (want == HAT_DEVICE_AUTO && (d->mtp || device_resolve(want, NULL) != HAT_DEVICE_CUDA))
        want = HAT_DEVICE_CPU;
    if (want == HAT_DEVICE_CPU) return gen_new(m, max_seqs, max_len);
    const char *why = NULL;
    gen_engine *e = gen_new_cuda(m, max_seqs, max_len, d->precision, &why);
    if (e) return e;
    if (d->device == HAT_DEVICE_AUTO) return gen_new(m, max_seqs, max_len);   /* a shape it does not take */
    *err = xasprintf("--device cuda: %s", why ? why : "the GPU engine cannot be built");
    return NULL;
}

void gen_free(gen_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        free(s->toks); free(s->logprobs); free(s->kc); free(s->vc);
        free(s->mkc); free(s->mvc); free(s->dq);
    }
    free(e->seq);
    while (e->prefixes) {
        gen_prefix *x = e->prefixes;
        e->prefixes = x->next;
        free(x->toks); free(x->kc); free(x->vc); free(x);
    }
    free(e->tok); free(e->pos); free(e->slot); free(e->nctx); free(e->kcp); free(e->vcp);
    free(e->kpp); free(e->vpp); free(e->npre);
    free(e->x); free(e->ln); free(e->q); free(e->k); free(e->v); free(e->att); free(e->gate);
    free(e->up); free(e->mh); free(e->mcat); free(e->mx); free(e->att_scratch);
    free(e->logits); free(e->lnrow); free(e->pdist); free(e->sample_scratch);
    free(e->dw);
    gen_cuda_free(e->gpu);
    free(e->lseq); free(e->lrow); free(e->ids); free(e->lps); free(e->u);
    free(e);
}

/* ------------------------------------------------------------ sequences */

void gen_set_prefix_reuse(gen_engine *e, int on) { e->prefix_reuse = on; }
gen_stats gen_get_stats(const gen_engine *e) { return e->st; }
void gen_remove(gen_engine *e, int slot) { e->seq[slot].active = 0; e->seq[slot].nd = 0; }
int gen_status(const gen_engine *e, int slot) { return e->seq[slot].status; }

const int *gen_output(const gen_engine *e, int slot, int *n)
{
    *n = e->seq[slot].n_out;
    return e->seq[slot].toks + e->seq[slot].n_prompt;
}

const float *gen_logprobs(const gen_engine *e, int slot) { return e->seq[slot].logprobs; }

const int *gen_context(const gen_engine *e, int slot, int *n)
{
    *n = e->seq[slot].ntok;
    return e->seq[slot].toks;
}

/* New parameters and RNG for the tokens queued in s. */
static void start(gen_seq *s, const gen_params *p, uint64_t seed, uint64_t stream)
{
    s->active = 1;
    s->status = p->max_tokens > 0 ? GEN_RUNNING : GEN_LENGTH;
    s->n_prompt = s->ntok;
    s->n_out = 0;
    s->nd = 0;
    s->p = *p;
    s->wait = -1;
    if (s->p.mtp_k > GEN_MTP_MAX) s->p.mtp_k = GEN_MTP_MAX;
    rng_derive(&s->rng, seed, stream);
}

/* Cached tokens of slot i that prefix ids[0, n-1): at least one token of
 * a prompt stays queued, for its logits. */
static int common_prefix(const gen_seq *s, const int *ids, int n)
{
    int k = 0, lim = s->len < n - 1 ? s->len : n - 1;
    while (k < lim && s->toks[k] == ids[k]) k++;
    return k;
}

/* ---- shared prefixes */

static void prefix_release(gen_engine *e, gen_seq *s)
{
    gen_prefix *x = s->pre;
    s->pre = NULL;
    if (!x || --x->refs) return;
    for (gen_prefix **pp = &e->prefixes; *pp; pp = &(*pp)->next)
        if (*pp == x) { *pp = x->next; break; }
    free(x->toks); free(x->kc); free(x->vc); free(x);
}

static void prefix_attach(gen_engine *e, gen_seq *s, gen_prefix *x)
{
    if (s->pre == x) return;
    x->refs++;                               /* first: x may be what s lets go of */
    prefix_release(e, s);
    s->pre = x;
}

static uint64_t ids_hash(const int *ids, int n)
{
    uint64_t h = 1469598103934665603ull;     /* FNV-1a over the ids' bytes */
    const unsigned char *b = (const unsigned char *)ids;
    for (size_t i = 0; i < (size_t)n * sizeof(int); i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static gen_prefix *prefix_find(const gen_engine *e, const int *ids, int n, uint64_t h)
{
    for (gen_prefix *x = e->prefixes; x; x = x->next)
        if (x->n == n && x->hash == h && !memcmp(x->toks, ids, n * sizeof(int))) return x;
    return NULL;
}

static void forward_main(gen_engine *e, int R, const gen_prefix *build);

/* A new prefix of ids[0, n), its K/V computed now in one pass (refs 0:
 * the caller attaches it). */
static gen_prefix *prefix_new(gen_engine *e, const int *ids, int n, uint64_t h)
{
    const model_config *c = &e->m->cfg;
    size_t size = (size_t)c->n_layers * n * c->n_kv_heads * c->head_dim;
    gen_prefix *x = xcalloc(1, sizeof *x);
    x->n = n;
    x->hash = h;
    x->toks = xmalloc(n * sizeof(int));
    memcpy(x->toks, ids, n * sizeof(int));
    x->kc = xmalloc(size * sizeof(float));
    x->vc = xmalloc(size * sizeof(float));
    double t0 = hat_now();
    ensure_rows(e, n);
    for (int r = 0; r < n; r++) { e->tok[r] = ids[r]; e->pos[r] = r; e->slot[r] = -1; }
    forward_main(e, n, x);
    e->st.rows += n;                         /* (not a gen_step: steps unchanged) */
    e->st.prefill_s += hat_now() - t0;
    x->next = e->prefixes;
    e->prefixes = x;
    return x;
}

/* Copy K/V rows [from, n) between caches of nl blocks (layers) of
 * (KV, db or sb positions, D). */
static void copy_rows(const model_config *c, int nl, float *dk, float *dv, int db, const float *sk,
                      const float *sv, int sb, int from, int n)
{
    size_t D = c->head_dim;
    if (n <= from) return;
    for (int l = 0; l < nl * c->n_kv_heads; l++) {
        size_t a = ((size_t)l * db + from) * D, b = ((size_t)l * sb + from) * D;
        memcpy(dk + a, sk + b, (n - from) * D * sizeof(float));
        memcpy(dv + a, sv + b, (n - from) * D * sizeof(float));
    }
}

/* s's cache now holds only its first k rows: rows its prefix holds
 * beyond k are copied into its own cache and the prefix let go. */
static void cut_prefix(gen_engine *e, gen_seq *s, int k)
{
    if (!s->pre || s->pre->n <= k) return;
    copy_rows(&e->m->cfg, e->m->cfg.n_layers, s->kc, s->vc, e->max_len, s->pre->kc, s->pre->vc,
              s->pre->n, 0, k);
    prefix_release(e, s);
}

/* Give dst the K/V rows [0, n) (and MTP rows [0, nm)) of src: src's
 * shared prefix, when n covers it, is shared, not copied. */
static void copy_cache(gen_engine *e, gen_seq *dst, gen_seq *src, int n, int nm)
{
    const model_config *c = &e->m->cfg;
    if (e->gpu) {
        gen_cuda_copy_cache(e->gpu, (int)(dst - e->seq), (int)(src - e->seq), n);
        return;
    }
    int from = 0;
    gen_prefix *x = src->pre;
    if (x && x->n <= n) {
        prefix_attach(e, dst, x);
        from = x->n;
    } else {
        if (x) {
            copy_rows(c, c->n_layers, dst->kc, dst->vc, e->max_len, x->kc, x->vc, x->n, 0, n);
            from = n;
        }
        prefix_release(e, dst);              /* src still holds x */
    }
    copy_rows(c, c->n_layers, dst->kc, dst->vc, e->max_len, src->kc, src->vc, e->max_len, from, n);
    copy_rows(c, 1, dst->mkc, dst->mvc, e->max_len, src->mkc, src->mvc, e->max_len, 0, nm);
}

/* Start slot dst's cache from the longest prefix slot src holds (src ==
 * dst: keep its own rows).  MTP row s also depends on token s+1, so rows
 * [0, k-1) of it are shared; with drafting on, both caches restart at the
 * same position so the MTP cache keeps up (see mtp_update). */
static void reuse(gen_engine *e, int dst, int src, int best, int src_mlen)
{
    gen_seq *s = &e->seq[dst];
    gen_seq *o = &e->seq[src];
    int mtp = e->has_mtp && s->p.mtp_k > 0;
    int mkeep = src_mlen < best - 1 ? src_mlen : best - 1;
    if (mkeep < 0) mkeep = 0;
    if (mtp) best = mkeep;
    if (src != dst && best > 0) copy_cache(e, s, o, best, mtp ? best : 0);
    else if (best > 0) cut_prefix(e, s, best);
    else prefix_release(e, s);
    s->len = best;
    s->mlen = mtp ? best : 0;
    e->st.reused += best;
}

int gen_add(gen_engine *e, const int *prompt, int n, const gen_params *p,
            uint64_t seed, uint64_t stream)
{
    if (n < 1 || n >= e->max_len) return -1;
    /* the free slot that already holds the longest prefix, then any slot
     * with a longer one to copy from */
    int dst = -1, keep = -1;
    for (int i = 0; i < e->max_seqs; i++) {
        if (e->seq[i].active) continue;
        int k = e->prefix_reuse ? common_prefix(&e->seq[i], prompt, n) : 0;
        if (k > keep) { dst = i; keep = k; }
    }
    if (dst < 0) return -1;
    gen_seq *s = &e->seq[dst];
    /* the free slot's own cache, or a longer one to copy */
    int src = dst, best = keep;
    for (int i = 0; e->prefix_reuse && i < e->max_seqs; i++) {
        int k = i == dst ? 0 : common_prefix(&e->seq[i], prompt, n);
        if (k > best) { src = i; best = k; }
    }
    int src_mlen = e->seq[src].mlen;
    s->ntok = n;                             /* (toks[0, keep) already hold the prompt's) */
    memcpy(s->toks, prompt, n * sizeof(int));
    start(s, p, seed, stream);
    reuse(e, dst, src, best, src_mlen);
    /* a live sequence queued with a longer shared prefix (prompts added
     * in the same step): wait one step and copy it once computed */
    for (int i = 0; e->prefix_reuse && i < e->max_seqs; i++) {
        gen_seq *o = &e->seq[i];
        if (i == dst || !o->active || o->status != GEN_RUNNING || o->wait >= 0 || o->len) continue;
        int k = 0, lim = o->ntok < n - 1 ? o->ntok : n - 1;
        while (k < lim && o->toks[k] == prompt[k]) k++;
        if (k >= 32 && k > s->len + 32) { s->wait = i; break; }
    }
    return dst;
}

int gen_add_shared(gen_engine *e, const int *prompt, int n, int n_shared, const gen_params *p,
                   uint64_t seed, uint64_t stream)
{
    if (n_shared < 1 || n_shared > n - 1 || e->gpu || !e->prefix_reuse || (e->has_mtp && p->mtp_k > 0))
        return gen_add(e, prompt, n, p, seed, stream);
    if (n >= e->max_len) return -1;
    uint64_t h = ids_hash(prompt, n_shared);
    gen_prefix *x = prefix_find(e, prompt, n_shared, h);
    /* a free slot: one on this prefix already, else one on none, else
     * one whose prefix others hold too (letting go frees nothing needed) */
    int dst = -1, score = -1;
    for (int i = 0; i < e->max_seqs; i++) {
        const gen_seq *o = &e->seq[i];
        if (o->active) continue;
        int sc = x && o->pre == x ? 3 : !o->pre ? 2 : o->pre->refs > 1;
        if (sc > score) { dst = i; score = sc; }
    }
    if (dst < 0) return -1;
    gen_seq *s = &e->seq[dst];
    /* a slot on the same prefix may hold more of this prompt (own rows) */
    int src = dst, best = n_shared;
    for (int i = 0; x && i < e->max_seqs; i++) {
        if (e->seq[i].pre != x) continue;
        int k = common_prefix(&e->seq[i], prompt, n);
        if (k > best) { src = i; best = k; }
    }
    if (x) e->st.reused += n_shared;
    else x = prefix_new(e, prompt, n_shared, h);
    prefix_attach(e, s, x);
    if (src != dst) copy_cache(e, s, &e->seq[src], best, 0);
    e->st.reused += best - n_shared;
    s->ntok = n;
    memcpy(s->toks, prompt, n * sizeof(int));
    start(s, p, seed, stream);
    s->len = best;
    s->mlen = 0;
    return dst;
}

int gen_extend(gen_engine *e, int slot, const int *ids, int n, const gen_params *p,
               uint64_t seed, uint64_t stream)
{
    if (slot < 0 || slot >= e->max_seqs) return -1;
    gen_seq *s = &e->seq[slot];
    if (!s->active || s->status == GEN_RUNNING || n < 0 || s->ntok + n >= e->max_len) return -1;
    if (n) memcpy(s->toks + s->ntok, ids, n * sizeof(int));
    e->st.reused += s->len;
    s->ntok += n;
    if (s->len == s->ntok) s->len--;         /* one queued row gives the next logits */
    if (s->mlen > s->len) s->mlen = s->len;
    start(s, p, seed, stream);
    return 0;
}

/* ------------------------------------------------------------ forward */

/* out = inp @ W^T over R rows, W fp32 or (when h) its packed bf16 copy. */
static void mm(float *out, const float *inp, const float *w, const uint32_t *h,
               int R, int C, int OC, float beta)
{
    if (h) matmul_rows_bf16(out, inp, h, R, C, OC, beta);
    else matmul_rows(out, inp, w, R, C, OC, beta);
}

/* One transformer block over R rows of residual X at positions pos;
 * kcp/vcp[r] point at row r's cache for this block (S, KV*D).  h: bf16
 * copies of wq wk wv wo wgate wup wdown, or NULL. */
static void block_rows(gen_engine *e, const block_weights *w, const uint32_t *const *h,
                       float *X, const int *pos, int R)
{
    static const uint32_t *const none[7];
    if (!h) h = none;
    const model *m = e->m;
    const model_config *c = &m->cfg;
    int C = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads;
    int D = c->head_dim, HD = H * D, KD = KV * D;
    size_t cs = e->cs;
    float eps = (float)c->rms_norm_eps;
    rmsnorm_rows(e->ln, X, w->in_norm, R, C, eps);
    mm(e->q, e->ln, w->wq, h[0], R, C, HD, 0);
    mm(e->k, e->ln, w->wk, h[1], R, C, KD, 0);
    mm(e->v, e->ln, w->wv, h[2], R, C, KD, 0);
    rmsnorm_rows(e->q, e->q, w->q_norm, R * H, D, eps);
    rmsnorm_rows(e->k, e->k, w->k_norm, R * KV, D, eps);
    rope_rows(e->q, pos, m->rope_cos, m->rope_sin, R, H, D);
    rope_rows(e->k, pos, m->rope_cos, m->rope_sin, R, KV, D);
    for (int r = 0; r < R; r++) {      /* store k/v first: rows of a prefill see each other */
        for (int h = 0; h < KV; h++) {
            size_t at = ((size_t)h * cs + pos[r]) * D;
            memcpy(e->kcp[r] + at, e->k + (size_t)r * KD + (size_t)h * D, D * sizeof(float));
            memcpy(e->vcp[r] + at, e->v + (size_t)r * KD + (size_t)h * D, D * sizeof(float));
        }
        e->nctx[r] = pos[r] + 1;
    }
    attn_rows a = { e->kcp, e->vcp, e->nctx, e->kpp, e->vpp, e->npre, e->cs };
    attention_rows(e->att, e->att_scratch, e->q, &a, R, H, KV, D, e->max_len);
    mm(X, e->att, w->wo, h[3], R, HD, C, 1.0f);
    rmsnorm_rows(e->ln, X, w->post_norm, R, C, eps);
    mm(e->gate, e->ln, w->wgate, h[4], R, C, I, 0);
    mm(e->up, e->ln, w->wup, h[5], R, C, I, 0);
    swiglu_rows(e->gate, e->gate, e->up, R, I);
    mm(X, e->gate, w->wdown, h[6], R, I, C, 1.0f);
}

/* The main model over rows tok/pos/slot, or (build) over the rows of a
 * new shared prefix, whose K/V go into it; final hidden rows (before the
 * final norm) left in x. */
static void forward_main(gen_engine *e, int R, const gen_prefix *build)
{
    const model *m = e->m;
    const model_config *c = &m->cfg;
    int C = c->hidden_size;
    size_t KD = (size_t)c->n_kv_heads * c->head_dim;
    for (int r = 0; r < R; r++)
        memcpy(e->x + (size_t)r * C, m->w.wte + (size_t)e->tok[r] * C, C * sizeof(float));
    e->cs = build ? build->n : e->max_len;
    for (int l = 0; l < c->n_layers; l++) {
        for (int r = 0; r < R; r++) {
            e->npre[r] = 0;
            if (build) {
                e->kcp[r] = build->kc + (size_t)l * build->n * KD;
                e->vcp[r] = build->vc + (size_t)l * build->n * KD;
                continue;
            }
            const gen_seq *s = &e->seq[e->slot[r]];
            e->kcp[r] = s->kc + (size_t)l * e->max_len * KD;
            e->vcp[r] = s->vc + (size_t)l * e->max_len * KD;
            if (s->pre) {                    /* (every row of s is past its prefix) */
                e->npre[r] = s->pre->n;
                e->kpp[r] = s->pre->kc + (size_t)l * s->pre->n * KD;
                e->vpp[r] = s->pre->vc + (size_t)l * s->pre->n * KD;
            }
        }
        block_rows(e, &m->w.layers[l], NULL, e->x, e->pos, R);
    }
}

/* The MTP module over rows: token tok[r] (the one after position pos[r]),
 * hidden mh[r]; block output rows (before the final norm) left in mx. */
static void forward_mtp(gen_engine *e, int R)
{
    const model *m = e->m;
    const model_config *c = &m->cfg;
    int C = c->hidden_size;
    float eps = (float)c->rms_norm_eps;
    for (int r = 0; r < R; r++)
        memcpy(e->ln + (size_t)r * C, m->w.wte + (size_t)e->tok[r] * C, C * sizeof(float));
    rmsnorm_rows(e->ln, e->ln, m->w.mtp_enorm, R, C, eps);
    rmsnorm_rows(e->mh, e->mh, m->w.mtp_hnorm, R, C, eps);
    for (int r = 0; r < R; r++) {
        memcpy(e->mcat + (size_t)r * 2 * C, e->ln + (size_t)r * C, C * sizeof(float));
        memcpy(e->mcat + (size_t)r * 2 * C + C, e->mh + (size_t)r * C, C * sizeof(float));
        gen_seq *s = &e->seq[e->slot[r]];
        e->kcp[r] = s->mkc;
        e->vcp[r] = s->mvc;
        e->npre[r] = 0;                      /* drafting sequences share no prefix */
    }
    e->cs = e->max_len;
    mm(e->mx, e->mcat, m->w.mtp_fc, e->dfc, R, 2 * C, C, 0);
    block_rows(e, &m->w.mtp_block, e->dw ? e->dblk : NULL, e->mx, e->pos, R);
}

/* The bf16 copy drafting reads, made (again) when the weights changed.
 * Every matrix's input width must be a multiple of 16 (the packed
 * layout); otherwise drafts stay fp32. */
static void draft_weights(gen_engine *e)
{
    const model *m = e->m;
    const model_config *c = &m->cfg;
    if (e->dw && e->dw_version == m->version) return;
    int C = c->hidden_size, I = c->intermediate_size, HD = c->n_heads * c->head_dim;
    int KD = c->n_kv_heads * c->head_dim, V = c->vocab_size;
    if (C % 16 || I % 16 || HD % 16) return;
    const block_weights *b = &m->w.mtp_block;
    const float *src[9] = { m->w.mtp_fc, b->wq, b->wk, b->wv, b->wo, b->wgate, b->wup, b->wdown,
                            m->w.lm_head };
    int rows[9] = { C, HD, KD, KD, C, I, I, C, V }, cols[9] = { 2 * C, C, C, C, HD, C, C, I, C };
    size_t off[10] = { 0 };
    for (int i = 0; i < 9; i++) off[i + 1] = off[i] + (size_t)rows[i] * cols[i] / 2;
    if (!e->dw) e->dw = xmalloc(off[9] * sizeof(uint32_t));
    for (int i = 0; i < 9; i++) bf16_pack_rows(e->dw + off[i], src[i], rows[i], cols[i]);
    e->dfc = e->dw;
    for (int i = 0; i < 7; i++) e->dblk[i] = e->dw + off[i + 1];
    e->dhead = e->dw + off[8];
    e->dw_version = m->version;
}

/* Logits of n hidden rows already copied into lnrow (h: the LM head's
 * bf16 copy for drafts, or NULL). */
static void head(gen_engine *e, int n, const uint32_t *h)
{
    const model *m = e->m;
    int C = m->cfg.hidden_size;
    rmsnorm_rows(e->lnrow, e->lnrow, m->w.norm, n, C, (float)m->cfg.rms_norm_eps);
    mm(e->logits, e->lnrow, m->w.lm_head, h, n, C, m->cfg.vocab_size, 0);
}

/* ------------------------------------------------------------ sampling */

static double log_sum_exp(const float *z, int V, float *max)
{
    float mx = z[0];
    for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)z[i] - mx);
    *max = mx;
    return mx + log(sum);
}

static int argmax(const float *z, int V)
{
    int a = 0;
    for (int i = 1; i < V; i++) if (z[i] > z[a]) a = i;
    return a;
}

static int by_prob_desc(const void *a, const void *b, void *vals)
{
    const float *pv = vals;
    float x = pv[*(const int *)a], y = pv[*(const int *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int *)a - *(const int *)b;     /* lowest id first on ties */
}

/* Temperature probabilities pr (V) and how many of the ids sorted by
 * descending probability (idx) top-k and top-p keep. */
static int kept_set(const float *z, int V, const gen_params *p, float *pr, int *idx, int sort)
{
    float mx = z[0];
    for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
    double s = 0;
    for (int i = 0; i < V; i++) { pr[i] = (float)exp(((double)z[i] - mx) / p->temperature); s += pr[i]; }
    for (int i = 0; i < V; i++) { pr[i] = (float)(pr[i] / s); idx[i] = i; }
    if (!sort) return V;
    qsort_r(idx, V, sizeof(int), by_prob_desc, pr);
    int keep = V;
    if (p->top_k > 0 && p->top_k < keep) keep = p->top_k;
    if (p->top_p > 0 && p->top_p < 1) {
        double c = 0;
        for (int i = 0; i < keep; i++) {
            c += pr[idx[i]];
            if (c >= p->top_p) { keep = i + 1; break; }
        }
    }
    return keep;
}

int sample_logits(const float *z, int V, const gen_params *p, rng_t *r, float *logprob, float *scratch)
{
    float mx;
    double lse = log_sum_exp(z, V, &mx);
    int id = argmax(z, V);
    if (p->temperature > 0) {
        float *pr = scratch;
        int *idx = (int *)(scratch + V);
        int keep = kept_set(z, V, p, pr, idx, 1);
        double tot = 0;
        for (int i = 0; i < keep; i++) tot += pr[idx[i]];
        double u = rng_uniform(r) * tot, c = 0;
        id = idx[keep - 1];
        for (int i = 0; i < keep; i++) {
            c += pr[idx[i]];
            if (u < c) { id = idx[i]; break; }
        }
    }
    *logprob = (float)(z[id] - lse);
    return id;
}

/* The distribution sample_logits draws from, dense: out (V) sums to 1. */
static void sampling_dist(const float *z, int V, const gen_params *p, float *out, float *scratch)
{
    int *idx = (int *)(scratch + V);
    int sort = (p->top_k > 0 && p->top_k < V) || (p->top_p > 0 && p->top_p < 1);
    int keep = kept_set(z, V, p, out, idx, sort);
    if (keep == V) return;
    double tot = 0;
    for (int i = 0; i < keep; i++) tot += out[idx[i]];
    float *kept = scratch;
    memset(kept, 0, V * sizeof(float));
    for (int i = 0; i < keep; i++) kept[idx[i]] = (float)(out[idx[i]] / tot);
    memcpy(out, kept, V * sizeof(float));
}

/* Inverse CDF over a dense weight vector (sum tot). */
static int draw(const float *w, int V, double tot, rng_t *r)
{
    double u = rng_uniform(r) * tot, c = 0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (w[i] <= 0) continue;
        c += w[i];
        last = i;
        if (u < c) return i;
    }
    return last;
}

/* ------------------------------------------------------------ a step */

static int is_stop(const gen_params *p, int id)
{
    if (id == p->eos) return 1;
    for (int i = 0; i < p->n_stop; i++)
        if (p->stop_ids[i] == id) return 1;
    return 0;
}

/* Append a token to the output; 0 when the sequence has ended. */
static int append(gen_engine *e, gen_seq *s, int id, float lp)
{
    s->toks[s->ntok++] = id;
    s->logprobs[s->n_out++] = lp;
    e->st.generated++;
    if (is_stop(&s->p, id)) s->status = GEN_STOP;
    else if (s->n_out >= s->p.max_tokens || s->ntok >= e->max_len) s->status = GEN_LENGTH;
    return s->status == GEN_RUNNING;
}

/* The main model's verdict on draft j of s from logits z: 1 = accepted,
 * else *id = the token to take instead. */
static int verify(gen_engine *e, gen_seq *s, const float *z, int j, int *id)
{
    int V = e->m->cfg.vocab_size, d = s->draft[j];
    if (s->p.temperature <= 0) {
        *id = argmax(z, V);
        return *id == d;
    }
    float *pd = e->pdist, *q = s->dq + (size_t)j * V;
    sampling_dist(z, V, &s->p, pd, e->sample_scratch);
    if (rng_uniform(&s->rng) * q[d] < pd[d]) return 1;
    double tot = 0;                          /* the residual max(0, p - q) */
    for (int i = 0; i < V; i++) {
        pd[i] = pd[i] > q[i] ? pd[i] - q[i] : 0;
        tot += pd[i];
    }
    if (!(tot > 0)) {                        /* p == q up to rounding: sample p itself */
        sampling_dist(z, V, &s->p, pd, e->sample_scratch);
        tot = 1;
    }
    *id = draw(pd, V, tot, &s->rng);
    return 0;
}

/* After the forward: accept drafts, sample the next token.  z0 holds
 * nd+1 logits rows (the last queued token, then each draft). */
static void accept(gen_engine *e, gen_seq *s, const float *z0)
{
    int V = e->m->cfg.vocab_size;
    s->len = s->ntok;
    if (s->nd) { e->st.drafted += s->nd; e->st.verify_steps++; }
    for (int j = 0;; j++) {
        const float *z = z0 + (size_t)j * V;
        float mx, lp;
        int id = 0;
        if (j < s->nd && verify(e, s, z, j, &id)) {
            id = s->draft[j];
            e->st.accepted++;
            s->len++;                        /* its K/V were written by this pass */
            lp = (float)(z[id] - log_sum_exp(z, V, &mx));
            if (!append(e, s, id, lp)) break;
            continue;
        }
        if (j < s->nd) lp = (float)(z[id] - log_sum_exp(z, V, &mx));
        else if (s->nd && s->p.temperature > 0) {
            sampling_dist(z, V, &s->p, e->pdist, e->sample_scratch);
            id = draw(e->pdist, V, 1.0, &s->rng);
            lp = (float)(z[id] - log_sum_exp(z, V, &mx));
        } else {
            id = sample_logits(z, V, &s->p, &s->rng, &lp, e->sample_scratch);
        }
        append(e, s, id, lp);
        break;
    }
    s->nd = 0;
}

/* How many tokens s may draft for its next step. */
static int draft_room(const gen_engine *e, const gen_seq *s)
{
    int k = s->p.mtp_k;
    if (k > s->p.max_tokens - s->n_out - 1) k = s->p.max_tokens - s->n_out - 1;
    if (k > e->max_len - 1 - s->ntok) k = e->max_len - 1 - s->ntok;
    return s->status == GEN_RUNNING && k > 0 ? k : 0;
}

/* Draft k of s from logits row z. */
static void take_draft(gen_engine *e, gen_seq *s, const float *z, int k)
{
    int V = e->m->cfg.vocab_size;
    if (s->p.temperature <= 0) {
        s->draft[k] = argmax(z, V);
    } else {
        float *q = s->dq + (size_t)k * V;
        sampling_dist(z, V, &s->p, q, e->sample_scratch);
        s->draft[k] = draw(q, V, 1.0, &s->rng);
    }
    s->nd = k + 1;
}

/* Fill the MTP cache for the positions this step cached (their hidden
 * states are still in x), then chain drafts for sequences that may. */
static void mtp_update(gen_engine *e)
{
    const model_config *c = &e->m->cfg;
    int C = c->hidden_size, V = c->vocab_size, R = 0;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (!s->active || s->p.mtp_k <= 0 || s->len0 < 0) continue;
        if (s->mlen != s->len0) continue;          /* no MTP cache: cannot draft */
        /* position s needs token s+1: when the last token is an accepted
         * (cached) draft that ended the sequence, its row waits for an extend */
        int n = (s->len < s->ntok ? s->len : s->ntok - 1) - s->len0;
        if (n <= 0) continue;
        ensure_rows(e, R + n);
        for (int j = 0; j < n; j++) {
            int at = s->len0 + j;
            e->tok[R + j] = s->toks[at + 1];
            e->pos[R + j] = at;
            e->slot[R + j] = i;
            memcpy(e->mh + (size_t)(R + j) * C, e->x + (size_t)(s->row0 + j) * C, C * sizeof(float));
        }
        s->mlen = s->len0 + n;
        R += n;
        s->mrow = R - 1;
    }
    if (!R) return;
    draft_weights(e);
    forward_mtp(e, R);
    for (int k = 0; k < GEN_MTP_MAX; k++) {
        /* logits of each drafting sequence's last MTP row */
        int n = 0;
        for (int i = 0; i < e->max_seqs; i++) {
            gen_seq *s = &e->seq[i];
            if (!s->active || s->len0 < 0 || s->mrow < 0 || s->nd != k || draft_room(e, s) <= k) continue;
            ensure_logits(e, n + 1);
            memcpy(e->lnrow + (size_t)n * C, e->mx + (size_t)s->mrow * C, C * sizeof(float));
            s->lrow0 = n++;
        }
        if (!n) break;
        head(e, n, e->dhead);
        int Rk = 0;
        for (int i = 0; i < e->max_seqs; i++) {
            gen_seq *s = &e->seq[i];
            if (!s->active || s->len0 < 0 || s->mrow < 0 || s->nd != k || draft_room(e, s) <= k) continue;
            take_draft(e, s, e->logits + (size_t)s->lrow0 * V, k);
            if (draft_room(e, s) <= k + 1) { s->mrow = -1; continue; }
            /* chain: MTP position len-1+k+1 from its own output and the draft */
            memcpy(e->mh + (size_t)Rk * C, e->mx + (size_t)s->mrow * C, C * sizeof(float));
            e->tok[Rk] = s->draft[k];
            e->pos[Rk] = s->len + k;
            e->slot[Rk] = i;
            s->mrow = Rk++;
        }
        if (!Rk) break;
        forward_mtp(e, Rk);
    }
}

/* Gather rows for every running sequence: queued tokens, then drafts.
 * Returns R; *nl = logits rows. */
static int gather(gen_engine *e, int *nl)
{
    int R = 0, L = 0;
    e->step_prefill = 0;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        s->len0 = -1;
        s->mrow = -1;
        if (!s->active || s->status != GEN_RUNNING) continue;
        if (s->wait >= 0) {
            gen_seq *o = &e->seq[s->wait];
            if (o->active && o->status == GEN_RUNNING && !o->len) continue;   /* not computed yet */
            int w = s->wait;
            s->wait = -1;
            int k = common_prefix(o, s->toks, s->ntok);
            if (k > s->len) reuse(e, i, w, k, o->mlen);
        }
        int q = s->ntok - s->len, n = q + s->nd;
        if (q > 1) e->step_prefill = 1;
        ensure_rows(e, R + n);
        for (int j = 0; j < n; j++) {
            e->tok[R + j] = j < q ? s->toks[s->len + j] : s->draft[j - q];
            e->pos[R + j] = s->len + j;
            e->slot[R + j] = i;
        }
        s->len0 = s->len;
        s->row0 = R;
        s->lrow0 = L;
        R += n;
        L += s->nd + 1;
    }
    *nl = L;
    return R;
}

static int running_count(const gen_engine *e)
{
    int running = 0;                         /* waiting ones included */
    for (int i = 0; i < e->max_seqs; i++)
        running += e->seq[i].active && e->seq[i].status == GEN_RUNNING;
    return running;
}

static int same_sampling(const gen_params *a, const gen_params *b)
{
    return a->temperature == b->temperature && a->top_k == b->top_k && a->top_p == b->top_p;
}

/* A step on the GPU: the forward pass over the gathered rows, one draw
 * per sequence from its own stream (as sample_logits makes it), sampling
 * on the device for each run of sequences with the same parameters, then
 * the same bookkeeping as accept() without drafts. */
static int gpu_step(gen_engine *e, int R)
{
    int n = 0;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (s->len0 < 0) continue;
        e->lrow[n] = s->row0 + (s->ntok - s->len) - 1;     /* the last queued row */
        e->lseq[n] = i;
        s->lrow0 = n++;
    }
    gen_cuda_forward(e->gpu, e->tok, e->pos, e->slot, R, e->lrow, n);
    e->st.steps++;
    e->st.rows += R;
    for (int k = 0; k < n; k++) {
        gen_seq *s = &e->seq[e->lseq[k]];
        e->u[k] = s->p.temperature > 0 ? rng_uniform(&s->rng) : 0;
    }
    for (int k = 0; k < n;) {
        const gen_params *p = &e->seq[e->lseq[k]].p;
        int j = k + 1;
        while (j < n && same_sampling(p, &e->seq[e->lseq[j]].p)) j++;
        gen_cuda_sample(e->gpu, k, j - k, p, e->u + k, e->ids + k, e->lps + k);
        k = j;
    }
    for (int k = 0; k < n; k++) {
        gen_seq *s = &e->seq[e->lseq[k]];
        s->len = s->ntok;
        append(e, s, e->ids[k], e->lps[k]);
        s->nd = 0;
    }
    return running_count(e);
}

static int step(gen_engine *e)
{
    int nl, R = gather(e, &nl);
    if (!R) return 0;
    if (e->gpu) return gpu_step(e, R);
    forward_main(e, R, NULL);
    e->st.steps++;
    e->st.rows += R;
    int C = e->m->cfg.hidden_size, V = e->m->cfg.vocab_size;
    ensure_logits(e, nl);
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (s->len0 < 0) continue;
        int last = s->row0 + (s->ntok - s->len) - 1;
        memcpy(e->lnrow + (size_t)s->lrow0 * C, e->x + (size_t)last * C, (s->nd + 1) * C * sizeof(float));
    }
    head(e, nl, NULL);
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (s->len0 >= 0) accept(e, s, e->logits + (size_t)s->lrow0 * V);
    }
    if (e->has_mtp) mtp_update(e);
    return running_count(e);
}

int gen_step(gen_engine *e)
{
    double t0 = hat_now();
    long g0 = e->st.generated;
    int running = step(e);
    double dt = hat_now() - t0;
    if (e->step_prefill) e->st.prefill_s += dt;
    else {
        e->st.decode_s += dt;
        e->st.decode_tokens += e->st.generated - g0;
    }
    return running;
}

void gen_prefill_logits(gen_engine *e, int slot, float *out)
{
    gen_seq *s = &e->seq[slot];
    int R = s->ntok - s->len;
    ensure_rows(e, R);
    for (int j = 0; j < R; j++) {
        e->tok[j] = s->toks[s->len + j];
        e->pos[j] = s->len + j;
        e->slot[j] = slot;
    }
    if (e->gpu) {
        int last = R - 1;
        gen_cuda_forward(e->gpu, e->tok, e->pos, e->slot, R, &last, 1);
        gen_cuda_logits(e->gpu, 0, out);
    } else {
        forward_main(e, R, NULL);
        int C = e->m->cfg.hidden_size;
        memcpy(e->lnrow, e->x + (size_t)(R - 1) * C, C * sizeof(float));
        head(e, 1, NULL);
        memcpy(out, e->logits, e->m->cfg.vocab_size * sizeof(float));
    }
    s->len = s->ntok - 1;        /* the last token stays queued: the next step recomputes it */
    if (s->mlen > s->len) s->mlen = s->len;
}
