/* opd.c — on-policy distillation: sampling, the reverse-KL rows and the
 * step (see opd.h). */
#include "opd.h"
#include "chat.h"
#include "chat_encode.h"
#include "generate.h"
#include "grpo.h"
#include "ifeval.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kl_names[] = { "sampled", "full", "forward" };

int opd_kl_mode(const char *name)
{
    for (int i = 0; i < (int)(sizeof kl_names / sizeof *kl_names); i++)
        if (!strcmp(name, kl_names[i])) return i;
    return -1;
}

const char *opd_kl_name(int mode) { return kl_names[mode]; }

void opd_config_default(opd_config *c)
{
    memset(c, 0, sizeof *c);
    c->n_prompts = 8;
    c->K = 4;
    c->temperature = 1.0f;
    c->top_p = 1.0f;
    c->max_tokens = 128;
    c->kl = OPD_KL_FULL;
    c->micro_batch = 8;
    c->enable_thinking = CHAT_THINK_UNSET;
    c->replay_seq = 1024;
    c->replay_weight = 1.0f;
}

json_t *opd_config_json(const opd_config *c)
{
    json_t *j = json_pack("{s:i,s:i,s:f,s:i,s:f,s:i,s:s,s:i,s:i}", "prompts", c->n_prompts,
                          "samples", c->K, "temperature", (double)c->temperature, "top_k", c->top_k,
                          "top_p", (double)c->top_p, "max_tokens", c->max_tokens,
                          "kl", opd_kl_name(c->kl), "micro_batch", c->micro_batch,
                          "enable_thinking", c->enable_thinking);
    if (c->teacher_K)         /* absent where 0, as before it existed */
        json_object_set_new(j, "teacher_samples", json_integer(c->teacher_K));
    if (c->replay_batch)      /* absent in runs without replay, as before it existed */
        json_object_set_new(j, "replay", json_pack("{s:i,s:i,s:f}", "batch", c->replay_batch,
                                                   "seq", c->replay_seq, "weight", (double)c->replay_weight));
    return j;
}

int opd_config_parse(opd_config *c, const json_t *j, const char *name)
{
    opd_config_default(c);
    static const char *keys[] = { "prompts", "samples", "temperature", "top_k", "top_p",
                                  "max_tokens", "micro_batch", "enable_thinking" };
    double v[8];
    const char *kl = json_string_value(json_object_get(j, "kl"));
    int bad = !kl || opd_kl_mode(kl) < 0;
    for (int i = 0; i < 8 && !bad; i++) {
        json_t *x = json_object_get(j, keys[i]);
        bad = !json_is_number(x);
        if (!bad) v[i] = json_number_value(x);
    }
    if (bad || v[0] < 1 || v[1] < 1 || v[5] < 1 || v[6] < 1) {
        hat_errat(name, 0, "trainer_state.json: missing or malformed \"opd\" settings");
        return -1;
    }
    c->n_prompts = (int)v[0]; c->K = (int)v[1]; c->temperature = (float)v[2];
    c->top_k = (int)v[3]; c->top_p = (float)v[4]; c->max_tokens = (int)v[5];
    c->micro_batch = (int)v[6]; c->enable_thinking = (int)v[7];
    c->kl = opd_kl_mode(kl);
    const json_t *tk = json_object_get(j, "teacher_samples");
    if (tk && (!json_is_integer(tk) || json_integer_value(tk) < 0 || json_integer_value(tk) > c->K)) {
        hat_errat(name, 0, "trainer_state.json: malformed \"opd\".\"teacher_samples\"");
        return -1;
    }
    c->teacher_K = tk ? (int)json_integer_value(tk) : 0;
    const json_t *r = json_object_get(j, "replay");
    if (r) {
        const json_t *b = json_object_get(r, "batch"), *t = json_object_get(r, "seq"),
                     *w = json_object_get(r, "weight");
        if (!json_is_integer(b) || json_integer_value(b) < 1 || !json_is_integer(t) ||
            json_integer_value(t) < 2 || !json_is_number(w)) {
            hat_errat(name, 0, "trainer_state.json: malformed \"opd\".\"replay\" settings");
            return -1;
        }
        c->replay_batch = (int)json_integer_value(b);
        c->replay_seq = (int)json_integer_value(t);
        c->replay_weight = (float)json_number_value(w);
    }
    return 0;
}

/* ------------------------------------------------------------ KL rows */

/* log softmax of z (V) into out, in double. */
static void log_softmax(const float *z, int V, double *out)
{
    float mx = z[0];
    for (int i = 1; i < V; i++) if (z[i] > mx) mx = z[i];
    double s = 0;
    for (int i = 0; i < V; i++) s += exp((double)z[i] - mx);
    double l = mx + log(s);
    for (int i = 0; i < V; i++) out[i] = z[i] - l;
}

double opd_kl_rows(float *ds, const float *zs, const float *zt, const int *tgt, int N, int V,
                   int mode, float scale)
{
    double total = 0;
    #pragma omp parallel
    {
        double *ls = xmalloc(sizeof(double) * V), *lt = xmalloc(sizeof(double) * V);
        #pragma omp for schedule(static) reduction(+:total)
        for (int n = 0; n < N; n++) {
            const float *a = zs + (size_t)n * V, *b = zt + (size_t)n * V;
            float *d = ds ? ds + (size_t)n * V : NULL;
            if (tgt[n] < 0) { if (d) memset(d, 0, sizeof(float) * V); continue; }
            log_softmax(a, V, ls);
            log_softmax(b, V, lt);
            if (mode == OPD_KL_FORWARD) {
                double kl = 0;
                for (int i = 0; i < V; i++) kl += exp(lt[i]) * (lt[i] - ls[i]);
                total += kl;
                if (d) for (int i = 0; i < V; i++) d[i] = (float)(scale * (exp(ls[i]) - exp(lt[i])));
            } else if (mode == OPD_KL_FULL) {
                double kl = 0;
                for (int i = 0; i < V; i++) kl += exp(ls[i]) * (ls[i] - lt[i]);
                total += kl;
                if (d) for (int i = 0; i < V; i++) d[i] = (float)(scale * exp(ls[i]) * (ls[i] - lt[i] - kl));
            } else {
                int y = tgt[n];
                double est = ls[y] - lt[y], A = -est;
                total += est;
                if (d) {
                    for (int i = 0; i < V; i++) d[i] = (float)(scale * A * exp(ls[i]));
                    d[y] -= (float)(scale * A);
                }
            }
        }
        free(ls);
        free(lt);
    }
    return total;
}

char *opd_check_tokenizers(const char *st, size_t sn, const char *tt, size_t tn,
                           const model *s, const model *t)
{
    if (!tt) return xstrdup("the teacher has no tokenizer.json, so it cannot be checked against "
                            "the student's; teacher and student must share the tokenizer");
    if (!st) return xstrdup("the student has no tokenizer.json");
    json_t *a = json_loadb(st, sn, 0, NULL), *b = json_loadb(tt, tn, 0, NULL);
    int same = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    if (!same) return xstrdup("the teacher's tokenizer.json differs from the student's; teacher and "
                              "student must share the tokenizer");
    if (s->cfg.vocab_size != t->cfg.vocab_size)
        return xasprintf("the teacher's vocab_size %d differs from the student's %d",
                         t->cfg.vocab_size, s->cfg.vocab_size);
    return NULL;
}

/* ------------------------------------------------------------ sampling */

struct opd {
    opd_config       c;
    model           *s, *t;
    const tokenizer *tok;
    const json_t    *prompts;
    tok_ids         *pids;       /* encoded prompt of each record */
    long             n;
    int              stop[2], n_stop;
    gen_engine      *e;
    int              max_len;
    model_cuda      *ds, *dt;    /* on a GPU (opd_use_device): the student's copy
                                    (borrowed) and the teacher's (owned) */
    gen_device       gdev;       /* where the student samples */
    const train_data *replay;    /* domain sequences (opd_set_replay), borrowed */
};

typedef struct {
    int  *ids;
    int   n, n_prompt, stopped;
    long  rec;
} sample;

/* The messages up to and including the first user message. */
static json_t *prompt_messages(const json_t *rec)
{
    const json_t *msgs = json_object_get(rec, "messages");
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_array_append(out, m);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && !strcmp(role, "user")) return out;
    }
    json_decref(out);
    return NULL;
}

int opd_prompt_ids(const tokenizer *t, const json_t *rec, int enable_thinking, tok_ids *ids,
                   char **err)
{
    json_t *msgs = prompt_messages(rec);
    if (!msgs) { *err = xstrdup("no user message"); return -1; }
    int rc = chat_prompt_encode(t, msgs, NULL, enable_thinking, ids, err);
    json_decref(msgs);
    return rc;
}

opd *opd_new(const opd_config *c, model *student, model *teacher, const tokenizer *t,
             const json_t *prompts, char **err)
{
    *err = NULL;
    long n = (long)json_array_size(prompts);
    if (!n) { *err = xstrdup("no prompts"); return NULL; }
    int im_end = tok_token_id(t, "<|im_end|>");
    if (im_end < 0) { *err = xstrdup("the tokenizer has no <|im_end|> token"); return NULL; }
    opd *o = xcalloc(1, sizeof *o);
    o->c = *c;
    o->gdev = (gen_device)GEN_DEVICE_INIT;
    o->s = student;
    o->t = teacher;
    o->tok = t;
    o->prompts = prompts;
    o->n = n;
    o->stop[o->n_stop++] = im_end;
    if (student->cfg.eos_token_id >= 0 && student->cfg.eos_token_id != im_end)
        o->stop[o->n_stop++] = student->cfg.eos_token_id;
    o->pids = xcalloc(n, sizeof *o->pids);
    int longest = 0;
    for (long i = 0; i < n && !*err; i++) {
        char *e = NULL;
        if (opd_prompt_ids(t, json_array_get(prompts, i), c->enable_thinking, &o->pids[i], &e))
            *err = xasprintf("prompt %ld: %s", i + 1, e);
        if ((int)o->pids[i].n > longest) longest = (int)o->pids[i].n;
        free(e);
    }
    int lim = student->cfg.max_position_embeddings < teacher->cfg.max_position_embeddings
              ? student->cfg.max_position_embeddings : teacher->cfg.max_position_embeddings;
    o->max_len = longest + c->max_tokens;
    if (!*err && o->max_len > lim)
        *err = xasprintf("the longest prompt (%d tokens) and --max-tokens %d exceed the context "
                         "of %d", longest, c->max_tokens, lim);
    if (*err) { opd_free(o); return NULL; }
    return o;
}

void opd_free(opd *o)
{
    if (!o) return;
    for (long i = 0; i < o->n; i++) tok_ids_free(&o->pids[i]);
    free(o->pids);
    gen_free(o->e);
    model_cuda_free(o->dt);
    free(o);
}

int opd_use_device(opd *o, train_device *td)
{
    if (!td || !td->cuda) return 0;
    if (!(o->dt = model_cuda_new_frozen(o->t, td->precision))) return -1;
    o->ds = td->mc;
    /* the student samples there too where the GPU engine takes the model
     * (auto: else the CPU); each batch's fresh engine uploads the weights
     * the last step downloaded */
    o->gdev = (gen_device){ HAT_DEVICE_AUTO, td->precision, 0 };
    return 0;
}

int opd_set_replay(opd *o, const train_data *d, char **err)
{
    if (o->ds) {
        *err = xstrdup("--replay trains on the CPU only (use --device cpu)");
        return -1;
    }
    o->replay = d;
    return 0;
}

/* Add w * (mean cross-entropy) of step's replay sequences to the
 * student's gradient; the mean goes into M. */
static void replay_pass(opd *o, const train_state *s, opd_metrics *M)
{
    train_state rs = { .B = o->c.replay_batch, .T = o->c.replay_seq, .accum = 1, .seed = s->seed,
                       .data_pos = s->step * (long)o->c.replay_batch, .bucket = 1 };
    size_t N = (size_t)rs.B * rs.T;
    int *tok = xmalloc(N * sizeof *tok), *tgt = xmalloc(N * sizeof *tgt);
    int Tb = train_fill_batch(o->replay, &rs, tok, tgt);
    model_forward(o->s, tok, tgt, rs.B, Tb);
    long n = o->s->n_targets;
    model_backward(o->s, n ? o->c.replay_weight / n : 0, 0);
    M->replay_loss = n ? o->s->loss_sum / n : 0;
    free(tok);
    free(tgt);
}

/* Record at global position k: epoch k / n in its own permutation. */
static long record_at(const opd *o, uint64_t seed, long k)
{
    long e = k / o->n, *perm = xmalloc(o->n * sizeof *perm);
    for (long i = 0; i < o->n; i++) perm[i] = i;
    rng_t r;
    rng_derive(&r, mix64(seed ^ 0x6f7064ULL), (uint64_t)e);   /* "opd" */
    rng_shuffle(&r, perm, o->n, sizeof *perm);
    long x = perm[k % o->n];
    free(perm);
    return x;
}

/* Completions k0..k1-1 of each record recs[0..n), sampled from m:
 * out[i*K+k], stream (stream0+i)*K+k. */
static void sample_all(opd *o, model *m, int k0, int k1, const long *recs, int n, uint64_t seed,
                       uint64_t stream0, sample *out)
{
    int K = o->c.K, per = k1 - k0, total = n * per, added = 0, done = 0, cap = o->c.n_prompts * o->c.K;
    if (cap > 64) cap = 64;
    if (total <= 0) return;
    gen_params p;
    memset(&p, 0, sizeof p);
    p.temperature = o->c.temperature;
    p.top_k = o->c.top_k;
    p.top_p = o->c.top_p;
    p.max_tokens = o->c.max_tokens;
    p.eos = -1;
    p.stop_ids = o->stop;
    p.n_stop = o->n_stop;
    int *who = xmalloc(sizeof(int) * cap);   /* sample index of each engine slot, -1 = free */
    for (int i = 0; i < cap; i++) who[i] = -1;
    /* a fresh engine per batch: a step's samples then depend only on the
     * weights and the streams, never on what an earlier step left in it,
     * and a resumed run samples exactly what the uninterrupted one did */
    char *why = NULL;
    o->e = gen_open(m, cap, o->max_len, &o->gdev, &why);   /* cpu or auto: never NULL */
    free(why);
    while (done < total) {
        while (added < total) {
            int i = added / per, k = k0 + added % per;
            const tok_ids *pr = &o->pids[recs[i]];
            int slot = gen_add(o->e, pr->v, (int)pr->n, &p, seed, (stream0 + i) * K + k);
            if (slot < 0) break;
            who[slot] = i * K + k;
            added++;
        }
        gen_step(o->e);
        for (int slot = 0; slot < cap; slot++) {
            if (who[slot] < 0) continue;
            int st = gen_status(o->e, slot);
            if (st == GEN_RUNNING) continue;
            int i = who[slot], ng;
            const tok_ids *pr = &o->pids[recs[i / K]];
            const int *g = gen_output(o->e, slot, &ng);
            sample *x = &out[i];
            x->n_prompt = (int)pr->n;
            x->n = (int)pr->n + ng;
            x->ids = xmalloc(sizeof(int) * (x->n > 0 ? x->n : 1));
            memcpy(x->ids, pr->v, sizeof(int) * pr->n);
            memcpy(x->ids + pr->n, g, sizeof(int) * ng);
            x->stopped = st == GEN_STOP;
            x->rec = recs[i / K];
            gen_remove(o->e, slot);
            who[slot] = -1;
            done++;
        }
    }
    free(who);
    gen_free(o->e);
    o->e = NULL;
}

/* A micro-batch: rows of samples first..first+B-1, targets on completions. */
static int fill(const sample *x, int B, int *T_out, int **tok, int **tgt)
{
    int T = 1;
    for (int i = 0; i < B; i++) if (x[i].n - 1 > T) T = x[i].n - 1;
    *tok = xcalloc((size_t)B * T, sizeof(int));
    *tgt = xmalloc((size_t)B * T * sizeof(int));
    int count = 0;
    for (int i = 0; i < B; i++)
        for (int t = 0; t < T; t++) {
            size_t r = (size_t)i * T + t;
            (*tok)[r] = t < x[i].n ? x[i].ids[t] : 0;
            int ok = t + 1 < x[i].n && t + 1 >= x[i].n_prompt;
            (*tgt)[r] = ok ? x[i].ids[t + 1] : -1;
            count += ok;
        }
    *T_out = T;
    return count;
}

/* Sum of KL over the samples' completion tokens; with grads, the student's
 * gradient of scale * that sum is added. */
static double kl_pass(opd *o, sample *x, int total, int mode, int grads, float scale, long *tokens)
{
    double sum = 0;
    int V = o->s->cfg.vocab_size;
    for (int first = 0; first < total; first += o->c.micro_batch) {
        int B = total - first < o->c.micro_batch ? total - first : o->c.micro_batch, T, *tok, *tgt;
        *tokens += fill(x + first, B, &T, &tok, &tgt);
        const float *zt = o->dt ? model_cuda_forward_logits(o->dt, tok, B, T)
                                : model_forward_logits(o->t, tok, B, T);
        float *zs = o->ds ? model_cuda_forward_logits(o->ds, tok, B, T)
                          : model_forward_logits(o->s, tok, B, T);
        sum += opd_kl_rows(grads ? zs : NULL, zs, zt, tgt, B * T, V, mode, scale);
        if (grads && o->ds) model_cuda_backward_dlogits(o->ds, zs);
        else if (grads) model_backward_dlogits(o->s, zs);
        free(tok);
        free(tgt);
    }
    return sum;
}

static long count_completion(const sample *x, int total)
{
    long n = 0;
    for (int i = 0; i < total; i++) n += x[i].n - x[i].n_prompt;
    return n;
}

/* IFEval prompt-level strict pass of each of the student's samples whose
 * record has instructions: *passed of *counted. */
static void ifeval_samples(opd *o, const sample *x, int total, long *passed, long *counted)
{
    for (int i = 0; i < total; i++) {
        if (i % o->c.K >= o->c.K - o->c.teacher_K) continue;   /* the teacher's */
        const json_t *rec = json_array_get(o->prompts, x[i].rec);
        json_t *ids = json_object_get(rec, "instruction_id_list"), *kw = json_object_get(rec, "kwargs");
        if (!json_array_size(ids) || !json_is_array(kw)) continue;
        int nc = x[i].n - x[i].n_prompt - x[i].stopped;
        size_t len;
        char *text = tok_decode_model(o->tok, x[i].ids + x[i].n_prompt, nc > 0 ? nc : 0, TOK_SKIP_SPECIAL, &len);
        ifeval_verdict v;
        char *err = NULL;
        if (ifeval_score(ids, kw, text, &v, &err) == 0) {
            int all = 1;
            for (int k = 0; k < v.n; k++) all &= v.strict[k];
            *passed += all;
            (*counted)++;
            ifeval_verdict_free(&v);
        }
        free(err);
        free(text);
    }
}

static void free_samples(sample *x, int n)
{
    for (int i = 0; i < n; i++) free(x[i].ids);
    free(x);
}

int opd_step(opd *o, train_state *s, float *exp_avg, float *exp_avg_sq, opd_metrics *M, char **err)
{
    *err = NULL;
    memset(M, 0, sizeof *M);
    int n = o->c.n_prompts, total = n * o->c.K;
    long *recs = xmalloc(n * sizeof *recs);
    for (int i = 0; i < n; i++) recs[i] = record_at(o, s->seed, s->data_pos + i);
    sample *x = xcalloc(total, sizeof *x);
    double t0 = hat_now();
    int ks = o->c.K - o->c.teacher_K;   /* the student's completions of a prompt */
    sample_all(o, o->s, 0, ks, recs, n, s->seed, (uint64_t)s->data_pos, x);
    sample_all(o, o->t, ks, o->c.K, recs, n, s->seed, (uint64_t)s->data_pos, x);
    double t1 = hat_now();
    long ctoks = count_completion(x, total), tokens = 0;
    if (o->ds) model_cuda_zero_grad(o->ds);
    else { model_alloc_grads(o->s); model_zero_grad(o->s); }
    float scale = ctoks ? 1.0f / ctoks : 0;
    double sum = kl_pass(o, x, total, o->c.kl, 1, scale, &tokens);
    M->replay_loss = -1;
    if (o->replay) replay_pass(o, s, M);
    M->lr = optim_lr(&s->opt, s->step);
    if (o->ds) {   /* the moments stay on the device; the sampler gets the weights */
        M->grad_norm = model_cuda_grad_clip(o->ds, s->opt.grad_clip);
        model_cuda_adamw_step(o->ds, &s->opt, M->lr, s->step + 1);
        model_cuda_download(o->ds, o->s->params, NULL, NULL, NULL);
    } else {
        M->grad_norm = grad_clip(o->s, s->opt.grad_clip);
        adamw_step(o->s, exp_avg, exp_avg_sq, &s->opt, M->lr, s->step + 1);
    }
    M->t_opt = hat_now() - t1;
    M->t_gen = t1 - t0;
    double mean = tokens ? sum / tokens : 0;
    if (o->c.kl == OPD_KL_FULL) M->kl = mean;
    else if (o->c.kl == OPD_KL_FORWARD) M->kl_forward = mean;
    else M->kl_sampled = mean;
    long passed = 0, counted = 0;
    ifeval_samples(o, x, total, &passed, &counted);
    M->ifeval_pass = counted ? (double)passed / counted : -1;
    M->samples = total;
    for (int i = 0; i < total; i++) M->stopped += x[i].stopped;
    M->gen_tokens = ctoks;
    M->train_tokens = tokens;
    M->completion_len = (double)ctoks / total;
    s->data_pos += n;
    s->step++;
    free_samples(x, total);
    free(recs);
    return 0;
}

double opd_eval_kl(opd *o, uint64_t seed, long first, int n, uint64_t stream0)
{
    int total = n * o->c.K;
    long *recs = xmalloc(n * sizeof *recs), tokens = 0;
    for (int i = 0; i < n; i++) recs[i] = (first + i) % o->n;
    sample *x = xcalloc(total, sizeof *x);
    sample_all(o, o->s, 0, o->c.K, recs, n, seed, stream0, x);
    double sum = kl_pass(o, x, total, OPD_KL_FULL, 0, 0, &tokens);
    free_samples(x, total);
    free(recs);
    return tokens ? sum / tokens : 0;
}

json_t *opd_metrics_json(const opd_metrics *M, long step)
{
    double tt = M->t_gen + M->t_opt;
    json_t *j = json_pack("{s:I,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:{s:f,s:f}}",
        "step", (json_int_t)step, "kl", M->kl, "kl_sampled", M->kl_sampled, "kl_forward", M->kl_forward,
        "completion_len", M->completion_len, "samples", (json_int_t)M->samples,
        "stopped", (json_int_t)M->stopped, "gen_tokens", (json_int_t)M->gen_tokens,
        "grad_norm", M->grad_norm, "lr", (double)M->lr,
        "gen_tokens_per_s", M->t_gen > 0 ? M->gen_tokens / M->t_gen : 0,
        "tokens_per_s", tt > 0 ? M->gen_tokens / tt : 0,
        "time", "generation", M->t_gen, "optimisation", M->t_opt);
    json_object_set_new(j, "ifeval_pass", M->ifeval_pass >= 0 ? json_real(M->ifeval_pass) : json_null());
    json_object_set_new(j, "replay_loss", M->replay_loss >= 0 ? json_real(M->replay_loss) : json_null());
    return j;
}
