/* generate.c — KV-cache decoding with batched prefill and continuous
 * batching (see generate.h).  Rows of all running sequences go through
 * the same matmuls; attention reads each row's own cache. */
#include "generate.h"
#include "kernels.h"
#include "util.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int        active, status, pending;   /* pending: prompt tokens not yet run */
    int        len;                       /* tokens in the cache */
    int       *toks;                      /* prompt + generated, max_len */
    int        n_prompt, n_out;
    float     *logprobs;
    float     *kc, *vc;                   /* (L, max_len, KV*D) */
    gen_params p;
    rng_t      rng;
    int        last;                      /* row of its last token in this step */
} gen_seq;

struct gen_engine {
    const model *m;
    int   max_seqs, max_len, cap_rows;
    gen_seq *seq;
    /* row buffers, sized for cap_rows */
    int   *tok, *pos, *slot;
    float *x, *ln, *q, *k, *v, *att, *gate, *up, *rstd, *scratch;
    float *logits, *lnrow, *sample_scratch;
    int   *last_rows, *last_slots;           /* (max_seqs) */
};

static void ensure_rows(gen_engine *e, int R)
{
    if (R <= e->cap_rows) return;
    const model_config *c = &e->m->cfg;
    size_t C = c->hidden_size, I = c->intermediate_size, HD = (size_t)c->n_heads * c->head_dim;
    size_t KD = (size_t)c->n_kv_heads * c->head_dim;
    e->cap_rows = R;
#define GROW(p, n) (p = xrealloc(p, (n) * sizeof *p))
    GROW(e->tok, R); GROW(e->pos, R); GROW(e->slot, R);
    GROW(e->x, R * C); GROW(e->ln, R * C); GROW(e->q, R * HD); GROW(e->k, R * KD);
    GROW(e->v, R * KD); GROW(e->att, R * HD); GROW(e->gate, R * I); GROW(e->up, R * I);
    GROW(e->rstd, R * c->n_heads);
#undef GROW
}

gen_engine *gen_new(const model *m, int max_seqs, int max_len)
{
    gen_engine *e = xcalloc(1, sizeof *e);
    const model_config *c = &m->cfg;
    e->m = m;
    e->max_seqs = max_seqs;
    e->max_len = max_len;
    e->seq = xcalloc(max_seqs, sizeof *e->seq);
    size_t cache = (size_t)c->n_layers * max_len * c->n_kv_heads * c->head_dim;
    for (int i = 0; i < max_seqs; i++) {
        e->seq[i].toks = xmalloc(max_len * sizeof(int));
        e->seq[i].logprobs = xmalloc(max_len * sizeof(float));
        e->seq[i].kc = xmalloc(cache * sizeof(float));
        e->seq[i].vc = xmalloc(cache * sizeof(float));
    }
    /* attention scores: one (H, max_len) block per thread */
    e->scratch = xmalloc((size_t)omp_get_max_threads() * c->n_heads * max_len * sizeof(float));
    e->logits = xmalloc((size_t)max_seqs * c->vocab_size * sizeof(float));
    e->lnrow = xmalloc((size_t)max_seqs * c->hidden_size * sizeof(float));
    e->sample_scratch = xmalloc(2 * (size_t)c->vocab_size * sizeof(float));
    e->last_rows = xcalloc(max_seqs, sizeof(int));
    e->last_slots = xcalloc(max_seqs, sizeof(int));
    model_rope_ensure((model *)m, max_len);
    return e;
}

void gen_free(gen_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->max_seqs; i++) {
        free(e->seq[i].toks); free(e->seq[i].logprobs); free(e->seq[i].kc); free(e->seq[i].vc);
    }
    free(e->seq);
    free(e->tok); free(e->pos); free(e->slot); free(e->x); free(e->ln); free(e->q); free(e->k);
    free(e->v); free(e->att); free(e->gate); free(e->up); free(e->rstd); free(e->scratch);
    free(e->logits); free(e->lnrow); free(e->sample_scratch);
    free(e->last_rows); free(e->last_slots);
    free(e);
}

int gen_add(gen_engine *e, const int *prompt, int n, const gen_params *p,
            uint64_t seed, uint64_t stream)
{
    if (n < 1 || n >= e->max_len) return -1;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (s->active) continue;
        s->active = 1;
        s->status = GEN_RUNNING;
        s->pending = n;
        s->len = 0;
        s->n_prompt = n;
        s->n_out = 0;
        memcpy(s->toks, prompt, n * sizeof(int));
        s->p = *p;
        rng_derive(&s->rng, seed, stream);
        if (p->max_tokens <= 0) s->status = GEN_LENGTH;
        return i;
    }
    return -1;
}

void gen_remove(gen_engine *e, int slot) { e->seq[slot].active = 0; }
int gen_status(const gen_engine *e, int slot) { return e->seq[slot].status; }

const int *gen_output(const gen_engine *e, int slot, int *n)
{
    *n = e->seq[slot].n_out;
    return e->seq[slot].toks + e->seq[slot].n_prompt;
}

const float *gen_logprobs(const gen_engine *e, int slot) { return e->seq[slot].logprobs; }

/* Forward all rows (tok/pos/slot filled); leaves final hidden rows in x. */
static void forward_rows(gen_engine *e, int R)
{
    const model *m = e->m;
    const model_config *c = &m->cfg;
    int C = c->hidden_size, I = c->intermediate_size, H = c->n_heads, KV = c->n_kv_heads;
    int D = c->head_dim, HD = H * D, KD = KV * D, L = c->n_layers;
    float eps = (float)c->rms_norm_eps;
    embedding_forward(e->x, e->tok, m->w.wte, R, C);
    for (int l = 0; l < L; l++) {
        const block_weights *w = &m->w.layers[l];
        rmsnorm_forward(e->ln, e->rstd, e->x, w->in_norm, R, C, eps);
        matmul_forward(e->q, e->ln, w->wq, R, C, HD, 0);
        matmul_forward(e->k, e->ln, w->wk, R, C, KD, 0);
        matmul_forward(e->v, e->ln, w->wv, R, C, KD, 0);
        rmsnorm_forward(e->q, e->rstd, e->q, w->q_norm, R * H, D, eps);
        rmsnorm_forward(e->k, e->rstd, e->k, w->k_norm, R * KV, D, eps);
        rope_forward(e->q, e->pos, m->rope_cos, m->rope_sin, R, H, D);
        rope_forward(e->k, e->pos, m->rope_cos, m->rope_sin, R, KV, D);
        for (int r = 0; r < R; r++) {      /* store k/v first: rows of a prefill see each other */
            gen_seq *s = &e->seq[e->slot[r]];
            size_t at = ((size_t)l * e->max_len + e->pos[r]) * KD;
            memcpy(s->kc + at, e->k + (size_t)r * KD, KD * sizeof(float));
            memcpy(s->vc + at, e->v + (size_t)r * KD, KD * sizeof(float));
        }
        #pragma omp parallel for schedule(dynamic) if (R > 1)
        for (int r = 0; r < R; r++) {
            gen_seq *s = &e->seq[e->slot[r]];
            size_t base = (size_t)l * e->max_len * KD;
            float *scratch = e->scratch + (size_t)omp_get_thread_num() * H * e->max_len;
            attention_decode(e->att + (size_t)r * HD, scratch, e->q + (size_t)r * HD,
                             s->kc + base, s->vc + base, e->pos[r] + 1, H, KV, D);
        }
        matmul_forward(e->x, e->att, w->wo, R, HD, C, 1.0f);
        rmsnorm_forward(e->ln, e->rstd, e->x, w->post_norm, R, C, eps);
        matmul_forward(e->gate, e->ln, w->wgate, R, C, I, 0);
        matmul_forward(e->up, e->ln, w->wup, R, C, I, 0);
        swiglu_forward(e->gate, e->gate, e->up, (size_t)R * I);
        matmul_forward(e->x, e->gate, w->wdown, R, I, C, 1.0f);
    }
}

/* Logits of the given rows (one per sequence) into e->logits. */
static void head_rows(gen_engine *e, const int *rows, int n)
{
    const model *m = e->m;
    int C = m->cfg.hidden_size;
    for (int i = 0; i < n; i++)
        memcpy(e->lnrow + (size_t)i * C, e->x + (size_t)rows[i] * C, C * sizeof(float));
    rmsnorm_forward(e->lnrow, e->rstd, e->lnrow, m->w.norm, n, C, (float)m->cfg.rms_norm_eps);
    matmul_forward(e->logits, e->lnrow, m->w.lm_head, n, C, m->cfg.vocab_size, 0);
}

/* Gather rows for every running sequence; returns R. */
static int gather(gen_engine *e)
{
    int R = 0;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (!s->active || s->status != GEN_RUNNING) continue;
        int n = s->pending ? s->pending : 1;
        ensure_rows(e, R + n);
        for (int j = 0; j < n; j++) {
            e->tok[R + j] = s->toks[s->len + j];
            e->pos[R + j] = s->len + j;
            e->slot[R + j] = i;
        }
        R += n;
        s->last = R - 1;
    }
    return R;
}

static int is_stop(const gen_params *p, int id)
{
    if (id == p->eos) return 1;
    for (int i = 0; i < p->n_stop; i++)
        if (p->stop_ids[i] == id) return 1;
    return 0;
}

int gen_step(gen_engine *e)
{
    int R = gather(e);
    if (!R) return 0;
    forward_rows(e, R);
    int *rows = e->last_rows, *slots = e->last_slots, n = 0;
    for (int i = 0; i < e->max_seqs; i++) {
        gen_seq *s = &e->seq[i];
        if (!s->active || s->status != GEN_RUNNING) continue;
        rows[n] = s->last;
        slots[n++] = i;
        s->len += s->pending ? s->pending : 1;
        s->pending = 0;
    }
    head_rows(e, rows, n);
    int running = 0, V = e->m->cfg.vocab_size;
    for (int i = 0; i < n; i++) {
        gen_seq *s = &e->seq[slots[i]];
        float lp;
        int id = sample_logits(e->logits + (size_t)i * V, V, &s->p, &s->rng, &lp, e->sample_scratch);
        s->toks[s->len] = id;
        s->logprobs[s->n_out++] = lp;
        if (is_stop(&s->p, id)) s->status = GEN_STOP;
        else if (s->n_out >= s->p.max_tokens || s->len + 1 >= e->max_len) s->status = GEN_LENGTH;
        else running++;
    }
    return running;
}

void gen_prefill_logits(gen_engine *e, int slot, float *out)
{
    gen_seq *s = &e->seq[slot];
    int R = 0;
    ensure_rows(e, s->pending);
    for (int j = 0; j < s->pending; j++, R++) {
        e->tok[R] = s->toks[s->len + j];
        e->pos[R] = s->len + j;
        e->slot[R] = slot;
    }
    forward_rows(e, R);
    int last = R - 1;
    head_rows(e, &last, 1);
    memcpy(out, e->logits, e->m->cfg.vocab_size * sizeof(float));
    s->len += s->pending;
    s->pending = 0;
    s->toks[s->len] = 0;
}

/* ------------------------------------------------------------ sampling */

static int by_prob_desc(const void *a, const void *b, void *vals)
{
    const float *pv = vals;
    float x = pv[*(const int *)a], y = pv[*(const int *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int *)a - *(const int *)b;     /* lowest id first on ties */
}

int sample_logits(const float *z, int V, const gen_params *p, rng_t *r, float *logprob, float *scratch)
{
    float mx = z[0];
    int arg = 0;
    for (int i = 1; i < V; i++) if (z[i] > mx) { mx = z[i]; arg = i; }
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)z[i] - mx);
    double lse = mx + log(sum);
    int id = arg;
    if (p->temperature > 0) {
        float *pr = scratch;
        int *idx = (int *)(scratch + V);
        double s = 0;
        for (int i = 0; i < V; i++) { pr[i] = (float)exp(((double)z[i] - mx) / p->temperature); s += pr[i]; }
        for (int i = 0; i < V; i++) { pr[i] = (float)(pr[i] / s); idx[i] = i; }
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
