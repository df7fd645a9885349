/* grpo.c — advantages, the clipped policy-gradient loss, and the GRPO step
 * over rollouts in the simulator (see grpo.h). */
#include "grpo.h"
#include "kernels.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const grpo_loss_names[] = { "grpo", "bnpo", "dr_grpo", "dapo" };

int grpo_loss_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, grpo_loss_names[i])) return i;
    return -1;
}

/* ------------------------------------------------------------ advantages */

/* Mean and unbiased std of x[0], x[stride], ... (n values). */
static void mean_std(const double *x, int n, int stride, double *mean, double *std)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += x[i * stride];
    *mean = s / n;
    for (int i = 0; i < n; i++) q += (x[i * stride] - *mean) * (x[i * stride] - *mean);
    *std = n > 1 ? sqrt(q / (n - 1)) : 0;
}

int grpo_advantages(const double *r, int n_groups, int G, int std_scale, double *adv)
{
    int zero = 0;
    for (int j = 0; j < n_groups; j++) {
        double mu, sd;
        mean_std(r + (size_t)j * G, G, 1, &mu, &sd);
        zero += sd == 0;
        for (int k = 0; k < G; k++) {
            double a = r[(size_t)j * G + k] - mu;
            adv[(size_t)j * G + k] = std_scale ? a / (sd + 1e-4) : a;
        }
    }
    return zero;
}

void grpo_gdpo_advantages(const double *comp, const double *w, int K, int n_groups, int G,
                          int std_scale, double *adv)
{
    int n = n_groups * G;
    for (int i = 0; i < n; i++) adv[i] = 0;
    double *a = xmalloc(sizeof(double) * G);
    for (int j = 0; j < n_groups; j++)
        for (int k = 0; k < K; k++) {
            double mu, sd;
            mean_std(comp + (size_t)j * G * K + k, G, K, &mu, &sd);
            for (int g = 0; g < G; g++) {
                a[g] = comp[((size_t)j * G + g) * K + k] - mu;
                if (std_scale) a[g] /= sd + 1e-4;
                adv[j * G + g] += w[k] * a[g];
            }
        }
    free(a);
    /* the sum of K normalised terms has a scale that grows with K: the
     * batch-level normalisation brings it back to unit scale */
    double mu, sd;
    mean_std(adv, n, 1, &mu, &sd);
    for (int i = 0; i < n; i++) adv[i] = sd > 0 ? (adv[i] - mu) / (sd + 1e-4) : adv[i] - mu;
}

/* ------------------------------------------------------------ the loss */

double grpo_token_loss(const grpo_loss_cfg *c, int n, const float *lp, const float *old,
                       const float *ref, const int *unit, const double *adv, const double *w,
                       int n_units, float *dlp, grpo_loss_stats *st)
{
    double *slog = NULL;
    int *cnt = NULL;
    if (c->seq_level) {   /* log s_u = mean of (lp - old) over the unit */
        slog = xcalloc(n_units, sizeof *slog);
        cnt = xcalloc(n_units, sizeof *cnt);
        for (int t = 0; t < n; t++)
            if (unit[t] >= 0) { slog[unit[t]] += (double)lp[t] - old[t]; cnt[unit[t]]++; }
        for (int u = 0; u < n_units; u++) if (cnt[u]) slog[u] /= cnt[u];
    }
    double loss = 0;
    for (int t = 0; t < n; t++) {
        dlp[t] = 0;
        int u = unit[t];
        if (u < 0) continue;
        double A = adv[u];
        double r = exp(c->seq_level ? slog[u] : (double)lp[t] - old[t]);
        int lo = r < 1 - c->eps_low && A < 0, hi = r > 1 + c->eps_high && A > 0;
        double rc = r < 1 - c->eps_low ? 1 - c->eps_low : r > 1 + c->eps_high ? 1 + c->eps_high : r;
        double l = -fmin(r * A, rc * A), g = 0;
        /* the unclipped branch carries the gradient; the clipped one is
         * constant in lp.  GSPO: d s_u / d lp_t = s_u / |u|, and each of
         * the |u| tokens of u carries the same term, so the |u| cancels
         * and the per-token form is the same as at token level. */
        if (!(lo || hi)) g = -A * r;
        if (c->beta != 0 && ref) {
            double d = (double)ref[t] - lp[t], k3 = exp(d) - d - 1;
            l += c->beta * k3;
            g += c->beta * (1 - exp(d));
            st->kl += k3;
        }
        loss += w[u] * l;
        dlp[t] = (float)(w[u] * g);
        st->ratio += r;
        st->clipped += lo || hi;
        st->tokens++;
    }
    free(slog);
    free(cnt);
    st->loss += loss;
    return loss;
}

void grpo_unit_weights(int loss_type, int n_units, const int *mb, const int *len, int n_mb,
                       int max_completion, double *w)
{
    long *units = xcalloc(n_mb, sizeof *units), *toks = xcalloc(n_mb, sizeof *toks), all = 0;
    for (int u = 0; u < n_units; u++) { units[mb[u]]++; toks[mb[u]] += len[u]; all += len[u]; }
    for (int u = 0; u < n_units; u++) {
        double A = n_mb, d = 0;
        switch (loss_type) {
        case GRPO_LOSS_GRPO:    d = (double)(len[u] > 0 ? len[u] : 1) * units[mb[u]] * A; break;
        case GRPO_LOSS_BNPO:    d = (double)(toks[mb[u]] > 0 ? toks[mb[u]] : 1) * A; break;
        case GRPO_LOSS_DR_GRPO: d = (double)units[mb[u]] * (max_completion > 0 ? max_completion : 1) * A; break;
        default:                d = all > 0 ? (double)all : 1; break;
        }
        w[u] = 1.0 / d;
    }
    free(units);
    free(toks);
}

/* ------------------------------------------------------------ logits */

void grpo_gather_logprobs(const float *logits, const int *tgt, int B, int V, float *lp, float *lse)
{
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * V;
        float mx = z[0];
        for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
        double s = 0;
        for (int i = 0; i < V; i++) s += exp((double)z[i] - mx);
        double l = mx + log(s);
        lse[b] = (float)l;
        lp[b] = tgt[b] >= 0 ? (float)(z[tgt[b]] - l) : 0;
    }
}

void grpo_dlogits(float *logits, const int *tgt, const float *dlp, const float *lse, int B, int V)
{
    #pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        float *z = logits + (size_t)b * V;
        if (tgt[b] < 0 || dlp[b] == 0) { memset(z, 0, sizeof(float) * V); continue; }
        float g = dlp[b], l = lse[b];
        for (int i = 0; i < V; i++) z[i] = -g * expf(z[i] - l);
        z[tgt[b]] += g;
    }
}

/* ------------------------------------------------------------ config */

void grpo_config_default(grpo_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_groups = 4;
    c->G = 8;
    hsa_opts_default(&c->hsa);
    c->hsa_on = 1;
    rollout_params rp = ROLLOUT_PARAMS_INIT;
    c->rp = rp;
    c->rp.temperature = 1.0f;
    c->rp.max_tokens = 64;
    c->rp.max_turns = 4;
    c->w[JUDGE_ACCURACY] = 0.4; c->w[JUDGE_EFFECTIVENESS] = 0.3;
    c->w[JUDGE_TOOLS] = 0.15;   c->w[JUDGE_SKILLS] = 0.15; c->w[JUDGE_COT] = 0.1;
    c->std_scale = 1;
    c->loss_type = GRPO_LOSS_DAPO;
    c->lc.eps_low = 0.2f;
    c->lc.eps_high = 0.2f;
    c->lc.beta = 0.0f;
    c->epochs = 1;
    c->micro_batch = 4;
}

json_t *grpo_config_json(const grpo_config *c)
{
    json_t *p = json_object(), *w = json_object();
    for (int i = 0; i < HSA_NDIMS; i++) json_object_set_new(p, hsa_dim_names[i], json_real(c->hsa.p[i]));
    for (int i = 0; i < JUDGE_NCOMP; i++) json_object_set_new(w, judge_comp_names[i], json_real(c->w[i]));
    return json_pack("{s:i,s:i,s:b,s:o,s:f,s:f,s:i,s:f,s:i,s:i,s:i,s:i,s:i,s:o,s:b,s:b,s:b,"
                     "s:s,s:s,s:f,s:f,s:f,s:i,s:i}",
        "groups", c->n_groups, "group_size", c->G, "hsa", c->hsa_on, "hsa_p", p,
        "hsa_mix", c->hsa.mix, "temperature", (double)c->rp.temperature, "top_k", c->rp.top_k,
        "top_p", (double)c->rp.top_p, "max_tokens", c->rp.max_tokens, "max_turns", c->rp.max_turns,
        "max_gen_tokens", c->rp.max_gen_tokens, "max_context", c->max_context,
        "rollout_batch", c->rollout_batch, "weights", w, "std_scale", c->std_scale,
        "gdpo", c->gdpo, "split_segments", c->split,
        "loss_type", grpo_loss_names[c->loss_type],
        "importance", c->lc.seq_level ? "sequence" : "token",
        "eps_low", (double)c->lc.eps_low, "eps_high", (double)c->lc.eps_high,
        "beta", (double)c->lc.beta, "epochs", c->epochs, "micro_batch", c->micro_batch);
}

static int jnum(const json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v) && !json_is_boolean(v)) return -1;
    *out = json_is_boolean(v) ? json_is_true(v) : json_number_value(v);
    return 0;
}

int grpo_config_parse(grpo_config *c, const json_t *j, const char *name)
{
    grpo_config_default(c);
    double v[20];
    static const char *keys[] = { "groups", "group_size", "hsa", "hsa_mix", "temperature", "top_k",
        "top_p", "max_tokens", "max_turns", "max_gen_tokens", "max_context", "rollout_batch",
        "std_scale", "gdpo", "split_segments", "eps_low", "eps_high", "beta", "epochs",
        "micro_batch" };
    json_t *p = json_object_get(j, "hsa_p"), *w = json_object_get(j, "weights");
    const char *lt = json_string_value(json_object_get(j, "loss_type"));
    const char *imp = json_string_value(json_object_get(j, "importance"));
    int bad = !json_is_object(j) || !json_is_object(p) || !json_is_object(w) || !lt || !imp ||
              grpo_loss_parse(lt) < 0;
    for (int i = 0; i < 20 && !bad; i++) bad = jnum(j, keys[i], &v[i]) < 0;
    for (int i = 0; i < HSA_NDIMS && !bad; i++) bad = jnum(p, hsa_dim_names[i], &c->hsa.p[i]) < 0;
    for (int i = 0; i < JUDGE_NCOMP && !bad; i++) bad = jnum(w, judge_comp_names[i], &c->w[i]) < 0;
    if (bad || v[0] < 1 || v[1] < 1 || v[18] < 1 || v[19] < 1) {
        hat_errat(name, 0, "trainer_state.json: missing or malformed \"grpo\" settings");
        return -1;
    }
    c->n_groups = (int)v[0]; c->G = (int)v[1]; c->hsa_on = (int)v[2]; c->hsa.mix = v[3];
    c->rp.temperature = (float)v[4]; c->rp.top_k = (int)v[5]; c->rp.top_p = (float)v[6];
    c->rp.max_tokens = (int)v[7]; c->rp.max_turns = (int)v[8]; c->rp.max_gen_tokens = (int)v[9];
    c->max_context = (int)v[10]; c->rollout_batch = (int)v[11];
    c->std_scale = (int)v[12]; c->gdpo = (int)v[13]; c->split = (int)v[14];
    c->lc.eps_low = (float)v[15]; c->lc.eps_high = (float)v[16]; c->lc.beta = (float)v[17];
    c->epochs = (int)v[18]; c->micro_batch = (int)v[19];
    c->loss_type = grpo_loss_parse(lt);
    c->lc.seq_level = !strcmp(imp, "sequence");
    return 0;
}

/* ------------------------------------------------------------ the step */

struct grpo {
    grpo_config      c;
    model           *m;
    model           *ref;
    const tokenizer *t;
    const world     *w;
    judge           *j;
    const json_t    *tasks, *h0;
    const hsa_vocab *vocab;
    hsa_cache       *hc;
    rollout         *r;          /* during play only */
    int              convs, max_len;
    json_t          *judged_h;   /* the judge caches harnesses by address: keep the last alive */
    model_cuda      *d, *dref;   /* on a GPU (grpo_use_device): the policy's copy
                                    (borrowed) and the reference's (owned) */
    gen_device       gdev;       /* where the rollouts decode */
};

/* One finished conversation with its scores and its token units. */
typedef struct {
    rollout_result *x;
    double comp[JUDGE_NCOMP];
    double reward;
    int    cot, scored;
    int    tool_msgs, tool_errs;
} played;

grpo *grpo_new(const grpo_config *c, model *policy, const model *ref, const tokenizer *t,
               const world *w, judge *j, const json_t *tasks, const json_t *harness,
               const hsa_vocab *vocab, char **err)
{
    *err = NULL;
    if (!json_is_array(tasks) || json_array_size(tasks) == 0) {
        *err = xstrdup("no tasks");
        return NULL;
    }
    if (c->lc.beta != 0 && !ref) { *err = xstrdup("beta > 0 needs a reference model"); return NULL; }
    if (ref && ref->cfg.vocab_size != policy->cfg.vocab_size) {
        *err = xasprintf("the reference has %d ids, the policy %d", ref->cfg.vocab_size,
                         policy->cfg.vocab_size);
        return NULL;
    }
    int convs = c->rollout_batch > 0 ? c->rollout_batch : c->n_groups * c->G;
    int max_len = c->max_context > 0 && c->max_context < policy->cfg.max_position_embeddings
                  ? c->max_context : policy->cfg.max_position_embeddings;
    rollout *r = rollout_new(policy, t, w, convs, max_len, err);   /* checks tokenizer and model */
    if (!r) return NULL;
    rollout_free(r);
    grpo *g = xcalloc(1, sizeof *g);
    g->convs = convs;
    g->max_len = max_len;
    g->c = *c;
    g->gdev = (gen_device)GEN_DEVICE_INIT;
    g->m = policy;
    g->ref = (model *)ref;   /* its activations are scratch; its weights are never written */
    g->t = t;
    g->w = w;
    g->j = j;
    g->tasks = tasks;
    g->h0 = harness;
    g->vocab = vocab;
    g->hc = hsa_cache_new();
    return g;
}

void grpo_free(grpo *g)
{
    if (!g) return;
    rollout_free(g->r);
    hsa_cache_free(g->hc);
    json_decref(g->judged_h);
    model_cuda_free(g->dref);
    free(g);
}

int grpo_use_device(grpo *g, train_device *td)
{
    if (!td || !td->cuda) return 0;
    /* the reference is read only for the KL term */
    if (g->c.lc.beta != 0 && !(g->dref = model_cuda_new_frozen(g->ref, td->precision))) return -1;
    g->d = td->mc;
    /* the rollouts decode there too where the GPU engine takes the model
     * (auto: else the CPU, as with MTP drafts); each batch's fresh engine
     * uploads the weights the last step downloaded */
    g->gdev = (gen_device){ HAT_DEVICE_AUTO, td->precision, g->c.rp.mtp_k > 0 };
    return 0;
}

/* Task at global position k: epoch k / n in its own permutation. */
static const json_t *task_at(const grpo *g, uint64_t seed, long k)
{
    long n = (long)json_array_size(g->tasks), e = k / n;
    long *perm = xmalloc(n * sizeof *perm);
    for (long i = 0; i < n; i++) perm[i] = i;
    rng_t r;
    rng_derive(&r, mix64(seed ^ 0x7461736b73ULL), (uint64_t)e);   /* "tasks" */
    rng_shuffle(&r, perm, n, sizeof *perm);
    const json_t *t = json_array_get(g->tasks, perm[k % n]);
    free(perm);
    return t;
}

/* The harness of global group k (new ref). */
static json_t *group_harness(grpo *g, uint64_t seed, long k, char **err)
{
    if (!g->c.hsa_on || !g->vocab) return json_incref((json_t *)g->h0);
    const char *why = NULL;
    json_t *rec = hsa_augment_record(g->hc, g->vocab, &g->c.hsa, NULL, g->h0, seed, (uint64_t)k,
                                     0, &why);
    if (!rec) { *err = xasprintf("hsa: %s", why ? why : "augmentation failed"); return NULL; }
    json_t *h = json_incref(json_object_get(rec, "harness"));
    json_decref(rec);
    return h;
}

/* Tool messages and those the runtime refused (a hook answered the call). */
static void count_tool_msgs(const json_t *msgs, int *n, int *errs)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "tool")) continue;
        (*n)++;
        if (json_object_get(m, "hook")) (*errs)++;
    }
}

/* Play n groups of G (tasks[k], harness[k]) and score them: out[k*G+g]. */
static int play(grpo *g, const json_t **tasks, json_t **harness, int n, uint64_t seed,
                uint64_t group0, played *out, double *t_gen, double *t_score, char **err)
{
    int G = g->c.G, total = n * G, added = 0, got = 0;
    double t0 = hat_now();
    /* a fresh engine per batch: the samples then depend only on the
     * weights and the streams, not on what an earlier batch left in the
     * decoding engine, so a resumed run plays what the uninterrupted one did */
    g->r = rollout_open(g->m, g->t, g->w, g->convs, g->max_len, &g->gdev, err);
    if (!g->r) return -1;
    while (got < total) {
        while (added < total) {
            int k = added / G, s = added % G;
            char *e = NULL;
            if (rollout_add(g->r, tasks[k], harness[k], seed, (group0 + k) * G + s, &g->c.rp,
                            (void *)(intptr_t)(added + 1), &e) < 0) {
                if (e) { *err = e; rollout_free(g->r); g->r = NULL; return -1; }
                break;
            }
            added++;
        }
        rollout_step(g->r);
        for (rollout_result *x; (x = rollout_take(g->r));) {
            int i = (int)(intptr_t)x->user - 1;
            out[i].x = x;
            got++;
        }
    }
    rollout_free(g->r);
    g->r = NULL;
    double t1 = hat_now();
    for (int i = 0; i < total; i++) {
        played *p = &out[i];
        rollout_result *x = p->x;
        count_tool_msgs(x->messages, &p->tool_msgs, &p->tool_errs);
        if (x->finish == ROLLOUT_ERROR) continue;   /* reward 0, no tokens trained */
        if (g->judged_h != x->harness) {
            json_decref(g->judged_h);
            g->judged_h = json_incref(x->harness);
        }
        judge_verdict v;
        if (judge_score(g->j, x->task, x->harness, x->messages, &v) == 0) {
            memcpy(p->comp, v.score, sizeof p->comp);
            p->cot = v.cot_tokens;
            p->scored = 1;
        }
        judge_verdict_clear(&v);
    }
    for (int i = 0; i < total; i++) out[i].reward = grpo_reward(&g->c, out[i].comp);
    *t_gen += t1 - t0;
    *t_score += hat_now() - t1;
    return 0;
}

double grpo_reward(const grpo_config *c, const double *comp)
{
    double r = 0;
    for (int k = 0; k < JUDGE_NCOMP; k++) r += (k == JUDGE_COT ? -1 : 1) * c->w[k] * comp[k];
    return r;
}

double grpo_eval_reward(grpo *g, uint64_t seed, long first, int n, uint64_t stream0)
{
    const json_t **tasks = xmalloc(n * sizeof *tasks);
    json_t **hs = xmalloc(n * sizeof *hs);
    for (int k = 0; k < n; k++) {
        tasks[k] = json_array_get(g->tasks, (first + k) % json_array_size(g->tasks));
        hs[k] = (json_t *)g->h0;
    }
    played *p = xcalloc((size_t)n * g->c.G, sizeof *p);
    double tg = 0, ts = 0, sum = 0;
    char *err = NULL;
    int rc = play(g, tasks, hs, n, seed, stream0, p, &tg, &ts, &err);
    for (int i = 0; i < n * g->c.G; i++) {
        sum += p[i].reward;
        rollout_result_free(p[i].x);
    }
    free(err);
    free(p);
    free(tasks);
    free(hs);
    return rc ? NAN : sum / (n * g->c.G);
}

/* Segment of assistant turn k: 0 = tool call (the message called tools
 * or the runtime answered it as a call), 1 = reply. */
static void turn_segments(const json_t *msgs, int n_turns, int *seg)
{
    int k = 0;
    size_t n = json_array_size(msgs);
    for (size_t i = 0; i < n && k < n_turns; i++) {
        const json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role || strcmp(role, "assistant")) continue;
        const json_t *next = json_array_get(msgs, i + 1);
        const char *nr = next ? json_string_value(json_object_get(next, "role")) : NULL;
        int tool = json_array_size(json_object_get(m, "tool_calls")) > 0 || (nr && !strcmp(nr, "tool"));
        seg[k++] = tool ? 0 : 1;
    }
    while (k < n_turns) seg[k++] = 1;
}

void grpo_token_units(const rollout_result *x, int split, int base, int *unit, int *len)
{
    const rollout_tokens *k = &x->tok;
    int *seg = xmalloc((k->n_turns + 1) * sizeof *seg);
    turn_segments(x->messages, k->n_turns, seg);
    for (int t = 0; t < k->n; t++) unit[t] = -1;
    for (int j = 0; j < k->n_turns; j++) {
        int u = split ? seg[j] : 0;
        for (int t = k->turn_off[j]; t < k->turn_off[j] + k->turn_len[j] && t < k->n; t++)
            if (t > 0 && k->mask[t]) { unit[t] = base + u; len[u]++; }
    }
    free(seg);
}

/* Segment rewards: tools = tool_rationality + skill_selection, reply =
 * accuracy + effectiveness - cot (weighted). */
static double seg_reward(const grpo_config *c, const double *comp, int seg)
{
    if (seg == 0) return c->w[JUDGE_TOOLS] * comp[JUDGE_TOOLS] + c->w[JUDGE_SKILLS] * comp[JUDGE_SKILLS];
    return c->w[JUDGE_ACCURACY] * comp[JUDGE_ACCURACY] + c->w[JUDGE_EFFECTIVENESS] * comp[JUDGE_EFFECTIVENESS] -
           c->w[JUDGE_COT] * comp[JUDGE_COT];
}

/* Per-unit advantages: units 0..n-1 are whole conversations, or with
 * split 2i (tool segment) and 2i+1 (reply segment).  Returns zero-spread
 * groups; *n_grp the number of groups. */
static int unit_advantages(const grpo_config *c, const played *p, int n_groups, double *adv, int *n_grp)
{
    int G = c->G, n = n_groups * G, zero = 0;
    if (c->split) {
        double *r = xmalloc(sizeof(double) * n), *a = xmalloc(sizeof(double) * n);
        for (int seg = 0; seg < 2; seg++) {
            for (int i = 0; i < n; i++) r[i] = seg_reward(c, p[i].comp, seg);
            zero += grpo_advantages(r, n_groups, G, c->std_scale, a);
            for (int i = 0; i < n; i++) adv[2 * i + seg] = a[i];
        }
        free(r);
        free(a);
        *n_grp = 2 * n_groups;
        return zero;
    }
    *n_grp = n_groups;
    if (c->gdpo) {
        double *comp = xmalloc(sizeof(double) * n * JUDGE_NCOMP), w[JUDGE_NCOMP];
        for (int k = 0; k < JUDGE_NCOMP; k++) w[k] = (k == JUDGE_COT ? -1 : 1) * c->w[k];
        for (int i = 0; i < n; i++) memcpy(comp + (size_t)i * JUDGE_NCOMP, p[i].comp, sizeof p[i].comp);
        grpo_gdpo_advantages(comp, w, JUDGE_NCOMP, n_groups, G, c->std_scale, adv);
        free(comp);
        double *r = xmalloc(sizeof(double) * n), *tmp = xmalloc(sizeof(double) * n);
        for (int i = 0; i < n; i++) r[i] = p[i].reward;
        zero = grpo_advantages(r, n_groups, G, 0, tmp);
        free(r);
        free(tmp);
        return zero;
    }
    double *r = xmalloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) r[i] = p[i].reward;
    zero = grpo_advantages(r, n_groups, G, c->std_scale, adv);
    free(r);
    return zero;
}

/* A micro-batch laid out for the forward: B rows of T tokens. */
typedef struct {
    int  B, T, first;     /* conversations first..first+B-1 of the trainable list */
    int *tok, *tgt, *unit;
    float *old, *ref, *lp, *lse, *dlp;
} mbatch;

static void mbatch_fill(mbatch *b, played **cv, int first, int B, int split, int **unit_of)
{
    int T = 1;
    for (int i = 0; i < B; i++) if (cv[first + i]->x->tok.n - 1 > T) T = cv[first + i]->x->tok.n - 1;
    b->B = B; b->T = T; b->first = first;
    size_t N = (size_t)B * T;
    b->tok = xcalloc(N, sizeof(int));
    b->tgt = xmalloc(N * sizeof(int));
    b->unit = xmalloc(N * sizeof(int));
    b->old = xcalloc(N, sizeof(float));
    b->ref = xcalloc(N, sizeof(float));
    b->lp = xcalloc(N, sizeof(float));
    b->lse = xcalloc(N, sizeof(float));
    b->dlp = xcalloc(N, sizeof(float));
    for (size_t i = 0; i < N; i++) b->tgt[i] = b->unit[i] = -1;
    for (int i = 0; i < B; i++) {
        const rollout_tokens *k = &cv[first + i]->x->tok;
        for (int t = 0; t + 1 < k->n; t++) {
            size_t row = (size_t)i * T + t;
            b->tok[row] = k->ids[t];
            int u = unit_of[first + i][t + 1];
            if (k->mask[t + 1] && u >= 0) {
                b->tgt[row] = k->ids[t + 1];
                b->unit[row] = u;
                b->old[row] = k->logprobs[t + 1];
            }
        }
    }
    (void)split;
}

static void mbatch_free(mbatch *b)
{
    free(b->tok); free(b->tgt); free(b->unit); free(b->old); free(b->ref);
    free(b->lp); free(b->lse); free(b->dlp);
}

int grpo_step(grpo *g, train_state *s, float *exp_avg, float *exp_avg_sq, grpo_metrics *M,
              char **err)
{
    const grpo_config *c = &g->c;
    int n = c->n_groups, G = c->G, total = n * G, rc = 0;
    memset(M, 0, sizeof *M);
    *err = NULL;
    /* 1. groups */
    const json_t **tasks = xmalloc(n * sizeof *tasks);
    json_t **hs = xcalloc(n, sizeof *hs);
    for (int k = 0; k < n && !rc; k++) {
        tasks[k] = task_at(g, s->seed, s->data_pos + k);
        if (!(hs[k] = group_harness(g, s->seed, s->data_pos + k, err))) rc = -1;
    }
    played *p = xcalloc(total, sizeof *p);
    /* 2-3. generation and scoring */
    if (!rc) rc = play(g, tasks, hs, n, s->seed, (uint64_t)s->data_pos, p, &M->t_gen, &M->t_score, err);
    double t_opt0 = hat_now();
    /* 4. advantages and units */
    int per = c->split ? 2 : 1, n_units = total * per, n_grp = 0;
    double *adv = xcalloc(n_units, sizeof *adv), *uw = xcalloc(n_units, sizeof *uw);
    int *ulen = xcalloc(n_units, sizeof *ulen), *umb = xcalloc(n_units, sizeof *umb);
    int **unit_of = xcalloc(total, sizeof *unit_of);
    played **cv = xcalloc(total, sizeof *cv);
    int n_cv = 0;
    if (!rc) {
        M->zero_spread = (double)unit_advantages(c, p, n, adv, &n_grp) / n_grp;
        for (int i = 0; i < total; i++) {
            rollout_result *x = p[i].x;
            if (x->finish == ROLLOUT_ERROR || x->tok.n < 2) continue;
            int *uo = xmalloc(x->tok.n * sizeof *uo);
            grpo_token_units(x, c->split, per * i, uo, ulen + per * i);
            unit_of[n_cv] = uo;
            cv[n_cv++] = &p[i];
        }
    }
    /* micro-batches of consecutive conversations */
    int mbs = c->micro_batch, n_mb = (n_cv + mbs - 1) / mbs;
    mbatch *mb = xcalloc(n_mb > 0 ? n_mb : 1, sizeof *mb);
    for (int b = 0; b < n_mb; b++) {
        int first = b * mbs, B = n_cv - first < mbs ? n_cv - first : mbs;
        mbatch_fill(&mb[b], cv, first, B, c->split, unit_of);
        for (int i = 0; i < B; i++) {
            int pi = (int)(cv[first + i] - p);
            for (int q = 0; q < per; q++) umb[pi * per + q] = b;
        }
    }
    int maxc = c->rp.max_gen_tokens > 0 ? c->rp.max_gen_tokens : c->rp.max_tokens * (c->rp.max_turns > 0 ? c->rp.max_turns : ROLLOUT_DEFAULT_TURNS);
    grpo_unit_weights(c->loss_type, n_units, umb, ulen, n_mb > 0 ? n_mb : 1, maxc, uw);
    /* reference log-probs, once per step */
    int V = g->m->cfg.vocab_size;
    if (!rc && c->lc.beta != 0)
        for (int b = 0; b < n_mb; b++) {
            float *lg = g->dref ? model_cuda_forward_logits(g->dref, mb[b].tok, mb[b].B, mb[b].T)
                                : model_forward_logits(g->ref, mb[b].tok, mb[b].B, mb[b].T);
            grpo_gather_logprobs(lg, mb[b].tgt, mb[b].B * mb[b].T, V, mb[b].ref, mb[b].lse);
        }
    /* 5. epochs of optimisation */
    grpo_loss_stats st = { 0 };
    M->lr = optim_lr(&s->opt, s->step);
    for (int e = 0; e < c->epochs && !rc && n_cv > 0; e++) {
        if (g->d) model_cuda_zero_grad(g->d);
        else { model_alloc_grads(g->m); model_zero_grad(g->m); }
        for (int b = 0; b < n_mb; b++) {
            mbatch *q = &mb[b];
            int N = q->B * q->T;
            float *lg = g->d ? model_cuda_forward_logits(g->d, q->tok, q->B, q->T)
                             : model_forward_logits(g->m, q->tok, q->B, q->T);
            grpo_gather_logprobs(lg, q->tgt, N, V, q->lp, q->lse);
            grpo_token_loss(&c->lc, N, q->lp, q->old, c->lc.beta != 0 ? q->ref : NULL, q->unit, adv,
                            uw, n_units, q->dlp, &st);
            grpo_dlogits(lg, q->tgt, q->dlp, q->lse, N, V);
            if (g->d) model_cuda_backward_dlogits(g->d, lg);
            else model_backward_dlogits(g->m, lg);
        }
        long t = s->step * c->epochs + e + 1;
        double gn;
        if (g->d) {   /* moments stay on the device */
            gn = model_cuda_grad_clip(g->d, s->opt.grad_clip);
            model_cuda_adamw_step(g->d, &s->opt, M->lr, t);
        } else {
            gn = grad_clip(g->m, s->opt.grad_clip);
            adamw_step(g->m, exp_avg, exp_avg_sq, &s->opt, M->lr, t);
        }
        if (e == 0) M->grad_norm = gn;
    }
    /* the next step's rollouts sample from the host model */
    if (g->d && !rc && n_cv > 0 && c->epochs > 0) model_cuda_download(g->d, g->m->params, NULL, NULL, NULL);
    M->t_opt = hat_now() - t_opt0;
    /* metrics */
    if (!rc) {
        for (int k = 0; k < JUDGE_NCOMP; k++) {
            double sm = 0, sq = 0;
            for (int i = 0; i < total; i++) sm += p[i].comp[k];
            M->comp_mean[k] = sm / total;
            for (int i = 0; i < total; i++) sq += (p[i].comp[k] - M->comp_mean[k]) * (p[i].comp[k] - M->comp_mean[k]);
            M->comp_std[k] = total > 1 ? sqrt(sq / (total - 1)) : 0;
        }
        double sm = 0, sq = 0;
        long turns = 0, malformed = 0, tools = 0, terr = 0, accepted = 0, cot = 0, calls = 0;
        for (int i = 0; i < total; i++) sm += p[i].reward;
        M->reward_mean = sm / total;
        for (int i = 0; i < total; i++) sq += (p[i].reward - M->reward_mean) * (p[i].reward - M->reward_mean);
        M->reward_std = total > 1 ? sqrt(sq / (total - 1)) : 0;
        for (int i = 0; i < total; i++) {
            rollout_result *x = p[i].x;
            M->gen_tokens += x->gen_tokens;
            turns += x->turns; malformed += x->malformed; accepted += x->accepted;
            tools += p[i].tool_msgs; terr += p[i].tool_errs; cot += p[i].cot;
            calls += json_integer_value(json_object_get(x->meta, "tool_calls"));
        }
        M->conversations = total;
        M->completion_len = (double)M->gen_tokens / total;
        M->cot_len = (double)cot / total;
        M->tool_calls = (double)calls / total;
        M->tool_error_rate = tools ? (double)terr / tools : 0;
        M->malformed_rate = turns ? (double)malformed / turns : 0;
        M->accepted_rate = (double)accepted / total;
        long tok = st.tokens > 0 ? st.tokens : 1;
        M->train_tokens = st.tokens / (c->epochs > 0 ? c->epochs : 1);
        M->kl = st.kl / tok;
        M->clip_frac = (double)st.clipped / tok;
        M->ratio = st.ratio / tok;
        M->loss = st.loss / (c->epochs > 0 ? c->epochs : 1);
        s->data_pos += n;
        s->step++;
    }
    for (int b = 0; b < n_mb; b++) mbatch_free(&mb[b]);
    free(mb);
    for (int i = 0; i < n_cv; i++) free(unit_of[i]);
    free(unit_of); free(cv); free(adv); free(uw); free(ulen); free(umb);
    for (int i = 0; i < total; i++) rollout_result_free(p[i].x);
    free(p);
    for (int k = 0; k < n; k++) json_decref(hs[k]);
    free(hs);
    free(tasks);
    return rc;
}

json_t *grpo_metrics_json(const grpo_metrics *m, long step)
{
    json_t *mean = json_object(), *sd = json_object();
    for (int k = 0; k < JUDGE_NCOMP; k++) {
        json_object_set_new(mean, judge_comp_names[k], json_real(m->comp_mean[k]));
        json_object_set_new(sd, judge_comp_names[k], json_real(m->comp_std[k]));
    }
    double tt = m->t_gen + m->t_score + m->t_opt;
    return json_pack("{s:I,s:f,s:f,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,"
                     "s:I,s:I,s:f,s:f,s:{s:f,s:f,s:f}}",
        "step", (json_int_t)step, "reward", m->reward_mean, "reward_std", m->reward_std,
        "scores", mean, "scores_std", sd, "zero_spread", m->zero_spread, "kl", m->kl,
        "clip_frac", m->clip_frac, "ratio", m->ratio, "loss", m->loss, "grad_norm", m->grad_norm,
        "lr", (double)m->lr, "completion_len", m->completion_len, "cot_len", m->cot_len,
        "tool_calls", m->tool_calls, "tool_error_rate", m->tool_error_rate,
        "malformed_rate", m->malformed_rate, "accepted_rate", m->accepted_rate,
        "gen_tokens", (json_int_t)m->gen_tokens, "train_tokens", (json_int_t)m->train_tokens,
        "gen_tokens_per_s", m->t_gen > 0 ? m->gen_tokens / m->t_gen : 0,
        "tokens_per_s", tt > 0 ? m->gen_tokens / tt : 0,
        "time", "generation", m->t_gen, "scoring", m->t_score, "optimisation", m->t_opt);
}
