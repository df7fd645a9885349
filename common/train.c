/* train.c — data, batching, resumable state and the optimiser step (see train.h). */
#include "train.h"
#include "progress.h"
#include "chat_encode.h"
#include "cuda/device.h"
#include "jsonl.h"
#include "util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ data */

/* A record without "ids" encoded through the one chat encoder: the record
 * gains "ids" and "mask" and is then read like any other. */
static int encode_record(json_t *v, const train_encoder *enc, const char *file, long line)
{
    tok_ids ids = { 0 }, mask = { 0 };
    char *err = NULL;
    if (record_encode(enc->tok, v, enc->harness, &ids, &mask, &err)) {
        hat_errat(file, line, "%s", err);
        free(err);
        return -1;
    }
    json_t *a = json_array(), *b = json_array();
    for (size_t i = 0; i < ids.n; i++) {
        json_array_append_new(a, json_integer(ids.v[i]));
        json_array_append_new(b, json_integer(mask.v[i]));
    }
    json_object_set_new(v, "ids", a);
    json_object_set_new(v, "mask", b);
    tok_ids_free(&ids);
    tok_ids_free(&mask);
    return 0;
}

/* Loss targets of ids[from..n) under mask (none: every token after the first). */
static long targets_from(const json_t *mask, size_t from, size_t n)
{
    long k = 0;
    for (size_t i = from ? from : 1; i < n; i++)
        k += mask ? json_integer_value(json_array_get(mask, i)) == 1 : 1;
    return k;
}

static int parse_seq(train_seq *q, json_t *v, const train_encoder *enc, int vocab, int T,
                     const char *file, long line, long *cut)
{
    if (!json_object_get(v, "ids") && enc && enc->tok) {
        if (encode_record(v, enc, file, line)) return -1;
    } else if (!json_object_get(v, "ids") && (json_object_get(v, "text") || json_object_get(v, "messages"))) {
        hat_errat(file, line, "a text or chat record needs a tokenizer (the checkpoint has none; "
                  "give --tokenizer, or pre-tokenise with tok-encode --chat)");
        return -1;
    }
    json_t *ids = json_object_get(v, "ids"), *mask = json_object_get(v, "mask");
    if (!json_is_array(ids) || json_array_size(ids) < 2) {
        hat_errat(file, line, "need \"ids\": an array of at least 2 token ids");
        return -1;
    }
    if (mask && (!json_is_array(mask) || json_array_size(mask) != json_array_size(ids))) {
        hat_errat(file, line, "\"mask\" must be an array as long as \"ids\" (%zu)", json_array_size(ids));
        return -1;
    }
    size_t n = json_array_size(ids);
    if (n > (size_t)T + 1) { *cut = targets_from(mask, (size_t)T + 1, n); n = (size_t)T + 1; }
    q->n = (int)n;
    q->ids = xmalloc(n * sizeof(int));
    q->mask = xmalloc(n);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(ids, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= vocab) {
            hat_errat(file, line, "ids[%zu]: not a token id in [0, %d)", i, vocab);
            return -1;
        }
        q->ids[i] = (int)json_integer_value(x);
        json_t *mk = mask ? json_array_get(mask, i) : NULL;
        if (mk && !(json_is_integer(mk) && (json_integer_value(mk) == 0 || json_integer_value(mk) == 1))) {
            hat_errat(file, line, "mask[%zu]: must be 0 or 1", i);
            return -1;
        }
        q->mask[i] = mk ? (unsigned char)json_integer_value(mk) : (i > 0);
    }
    return 0;
}

int train_data_load(train_data *d, const char *path, const train_encoder *enc, int vocab,
                    int T, int skip_bad)
{
    memset(d, 0, sizeof *d);
    jsonl_reader *r = jsonl_open(path, skip_bad);
    if (!r) return -1;
    json_t *v;
    int rc, cap = 0;
    long bad = 0;
    while ((rc = jsonl_next(r, &v)) == 1) {
        if (d->n == cap) {
            cap = cap ? 2 * cap : 256;
            d->seq = xrealloc(d->seq, cap * sizeof *d->seq);
        }
        train_seq q = { 0 };
        long cut = 0;
        if (parse_seq(&q, v, enc, vocab, T, jsonl_name(r), jsonl_line(r), &cut)) {
            free(q.ids);
            free(q.mask);
            json_decref(v);
            if (!skip_bad) { rc = -1; break; }
            bad++;
            continue;
        }
        long len = (long)json_array_size(json_object_get(v, "ids"));
        if (len > (long)T + 1) d->n_truncated++;
        if (len > d->longest) d->longest = len;
        d->n_tokens += q.n;
        for (int i = 1; i < q.n; i++) d->n_targets += q.mask[i];
        d->n_targets_cut += cut;
        d->seq[d->n++] = q;
        json_decref(v);
    }
    const char *name = jsonl_name(r);
    if (rc == 0 && d->n == 0) { hat_errat(name, 0, "no training sequences"); rc = -1; }
    /* A run that trains nothing must not look like one that trained: with
     * every target cut the loss is 0 and the checkpoint unchanged. */
    if (rc == 0 && d->n && d->n_targets == 0) {
        if (d->n_targets_cut)
            hat_errat(name, 0, "nothing to train: none of its %ld sequences has a loss target within "
                      "its first %d tokens (%ld targets cut; the longest sequence has %ld tokens, "
                      "--seq %ld keeps them all)", d->n, T + 1, d->n_targets_cut, d->longest, d->longest - 1);
        else
            hat_errat(name, 0, "nothing to train: none of its %ld sequences has a loss target "
                      "(every mask is 0)", d->n);
        rc = -1;
    }
    if (bad) hat_errat(name, 0, "skipped %ld bad lines", bad);
    if (jsonl_close(r) || rc < 0) { train_data_free(d); return -1; }
    return 0;
}

void train_data_free(train_data *d)
{
    for (long i = 0; i < d->n; i++) { free(d->seq[i].ids); free(d->seq[i].mask); }
    free(d->seq);
    memset(d, 0, sizeof *d);
}

/* Sequence index of global position k: epoch k/n in its own permutation.
 * The permutation is rebuilt per call (n is small next to a step's
 * compute), keeping train_data read-only and the order a pure function. */
static long seq_at(const train_data *d, uint64_t seed, long k, long **perm, long *perm_epoch)
{
    long e = k / d->n;
    if (*perm_epoch != e) {
        if (!*perm) *perm = xmalloc(d->n * sizeof(long));
        for (long i = 0; i < d->n; i++) (*perm)[i] = i;
        rng_t r;
        rng_derive(&r, seed, (uint64_t)e);
        rng_shuffle(&r, *perm, d->n, sizeof(long));
        *perm_epoch = e;
    }
    return (*perm)[k % d->n];
}

#define BUCKET_BATCHES 32   /* batches whose sequences are grouped by length */

typedef struct { int len; long at; } len_at;

static int by_len(const void *a, const void *b)
{
    const len_at *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The sequence at global position k.  Without bucketing: the epoch's
 * permutation.  With it: positions come in chunks of BUCKET_BATCHES*B;
 * within a chunk the sequences are sorted by length, cut into batches of
 * B, and the batches visited in an order drawn from (seed, chunk). */
static long seq_for(const train_data *d, const train_state *s, long k, long **perm, long *pe)
{
    if (!s->bucket) return seq_at(d, s->seed, k, perm, pe);
    long B = s->B, chunk = BUCKET_BATCHES * B, c = k / chunk, off = k % chunk;
    len_at *v = xmalloc(chunk * sizeof *v);
    for (long i = 0; i < chunk; i++) {       /* equal lengths keep the shuffled order */
        long q = seq_at(d, s->seed, c * chunk + i, perm, pe);
        v[i] = (len_at){ d->seq[q].n, i };
    }
    qsort(v, chunk, sizeof *v, by_len);
    long order[BUCKET_BATCHES];
    for (int i = 0; i < BUCKET_BATCHES; i++) order[i] = i;
    rng_t r;
    rng_derive(&r, s->seed ^ 0x6275636b6574ULL, (uint64_t)c);   /* "bucket" */
    rng_shuffle(&r, order, BUCKET_BATCHES, sizeof *order);
    long i = v[order[off / B] * B + off % B].at;
    free(v);
    return seq_at(d, s->seed, c * chunk + i, perm, pe);
}

int train_fill_batch(const train_data *d, train_state *s, int *tokens, int *targets)
{
    long *perm = NULL, pe = -1;
    const train_seq *q[s->B];
    int Tb = 1;
    for (int b = 0; b < s->B; b++) {
        q[b] = &d->seq[seq_for(d, s, s->data_pos++, &perm, &pe)];
        if (q[b]->n - 1 > Tb) Tb = q[b]->n - 1;     /* positions that have a target */
    }
    free(perm);
    Tb = s->bucket ? (Tb + 15) / 16 * 16 : s->T;
    if (Tb > s->T) Tb = s->T;
    for (int b = 0; b < s->B; b++)
        for (int t = 0; t < Tb; t++) {
            tokens[b * Tb + t] = t < q[b]->n ? q[b]->ids[t] : 0;
            targets[b * Tb + t] = (t + 1 < q[b]->n && q[b]->mask[t + 1]) ? q[b]->ids[t + 1] : -1;
        }
    return Tb;
}

/* ------------------------------------------------------------ state */

json_t *train_state_json(const train_state *s)
{
    json_t *rng = json_array();
    for (int i = 0; i < 4; i++) {
        char hex[24];
        snprintf(hex, sizeof hex, "%016" PRIx64, s->rng.s[i]);
        json_array_append_new(rng, json_string(hex));
    }
    const optim_config *o = &s->opt;
    char seed[24];   /* a string: JSON integers are signed 64-bit */
    snprintf(seed, sizeof seed, "%" PRIu64, s->seed);
    return json_pack("{s:I,s:I,s:s,s:o,s:i,s:i,s:i,s:b,s:{s:s,s:f,s:f,s:i,s:I,s:f,s:f,s:f,s:f,s:f}}",
        "step", (json_int_t)s->step, "data_pos", (json_int_t)s->data_pos,
        "seed", seed, "rng", rng,
        "batch", s->B, "seq", s->T, "accum", s->accum, "bucket", s->bucket,
        "optim", "schedule", optim_schedule_name(o->schedule), "lr", (double)o->lr,
        "min_lr", (double)o->min_lr, "warmup", o->warmup, "total_steps", (json_int_t)o->total_steps,
        "beta1", (double)o->beta1, "beta2", (double)o->beta2, "eps", (double)o->eps,
        "weight_decay", (double)o->weight_decay, "grad_clip", (double)o->grad_clip);
}

static int num(const json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return 0;
}

int train_state_parse(train_state *s, const json_t *j, const char *name)
{
    json_t *rng = json_object_get(j, "rng"), *o = json_object_get(j, "optim");
    const char *seed = json_string_value(json_object_get(j, "seed"));
    double step, pos, B, T, acc, lr, min_lr, warm, total, b1, b2, eps, wd, clip;
    const char *sched = json_string_value(json_object_get(o, "schedule"));
    if (num(j, "step", &step) || num(j, "data_pos", &pos) || num(j, "batch", &B) ||
        num(j, "seq", &T) || num(j, "accum", &acc) || !seed || !json_is_array(rng) ||
        json_array_size(rng) != 4 || !json_is_object(o) || !sched ||
        optim_schedule_parse(sched) < 0 || num(o, "lr", &lr) || num(o, "min_lr", &min_lr) ||
        num(o, "warmup", &warm) || num(o, "total_steps", &total) || num(o, "beta1", &b1) ||
        num(o, "beta2", &b2) || num(o, "eps", &eps) || num(o, "weight_decay", &wd) ||
        num(o, "grad_clip", &clip)) {
        hat_errat(name, 0, "trainer_state.json: missing or malformed fields");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        const char *h = json_string_value(json_array_get(rng, i));
        if (!h) { hat_errat(name, 0, "trainer_state.json: bad rng state"); return -1; }
        s->rng.s[i] = strtoull(h, NULL, 16);
    }
    s->seed = strtoull(seed, NULL, 10);
    s->step = (long)step;
    s->data_pos = (long)pos;
    s->B = (int)B; s->T = (int)T; s->accum = (int)acc;
    s->bucket = json_is_true(json_object_get(j, "bucket"));
    optim_config *c = &s->opt;
    c->schedule = optim_schedule_parse(sched);
    c->lr = (float)lr; c->min_lr = (float)min_lr; c->warmup = (int)warm;
    c->total_steps = (long)total; c->beta1 = (float)b1; c->beta2 = (float)b2;
    c->eps = (float)eps; c->weight_decay = (float)wd; c->grad_clip = (float)clip;
    return 0;
}

/* ------------------------------------------------------------ step */

/* Targets that the MTP head sees in a micro-batch: targets[t+1], t+1 < T. */
static long count_targets(const int *tgt, int B, int T, long *mtp)
{
    long n = 0, k = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            if (tgt[b * T + t] >= 0) { n++; if (t > 0) k++; }
    *mtp = k;
    return n;
}

/* The step's micro-batches: tokens and targets (A, B*T), their lengths,
 * and the target counts of the whole step (main and MTP). */
typedef struct {
    int  *tok, *tgt, *Tb;
    long  total, total_mtp, processed;
} step_batches;

static void fill_step(const train_data *d, train_state *s, step_batches *b)
{
    int A = s->accum;
    size_t N = (size_t)s->B * s->T;
    b->tok = xmalloc(A * N * sizeof(int));
    b->tgt = xmalloc(A * N * sizeof(int));
    b->Tb = xmalloc(A * sizeof(int));
    b->total = b->total_mtp = b->processed = 0;
    for (int a = 0; a < A; a++) {
        long k;
        b->Tb[a] = train_fill_batch(d, s, b->tok + a * N, b->tgt + a * N);
        b->processed += (long)s->B * b->Tb[a];
        b->total += count_targets(b->tgt + a * N, s->B, b->Tb[a], &k);
        b->total_mtp += k;
    }
}

static void free_step(step_batches *b)
{
    free(b->tok);
    free(b->tgt);
    free(b->Tb);
}

void train_step(model *m, float *exp_avg, float *exp_avg_sq, const train_data *d,
                train_state *s, train_result *r)
{
    int B = s->B, A = s->accum;
    size_t N = (size_t)B * s->T;
    step_batches sb;
    fill_step(d, s, &sb);
    long total = sb.total, total_mtp = sb.total_mtp;
    model_alloc_grads(m);
    model_zero_grad(m);
    float ms = total ? 1.0f / total : 0;
    float ts = total_mtp ? m->cfg.mtp_loss_weight / total_mtp : 0;
    double loss = 0, mtp_loss = 0;
    for (int a = 0; a < A; a++) {
        model_forward(m, sb.tok + a * N, sb.tgt + a * N, B, sb.Tb[a]);
        loss += m->loss_sum;
        mtp_loss += m->mtp_loss_sum;
        model_backward(m, ms, ts);
    }
    r->loss = (total ? loss / total : 0) + (total_mtp ? m->cfg.mtp_loss_weight * mtp_loss / total_mtp : 0);
    r->tokens = total;
    r->processed = sb.processed;
    r->lr = optim_lr(&s->opt, s->step);
    r->grad_norm = grad_clip(m, s->opt.grad_clip);
    adamw_step(m, exp_avg, exp_avg_sq, &s->opt, r->lr, s->step + 1);
    s->step++;
    free_step(&sb);
}

/* ------------------------------------------------------------ device */

int train_device_open(train_device *td, ckpt *k, int device, int precision, int accum)
{
    memset(td, 0, sizeof *td);
    td->world = 1;
    td->precision = precision;
    if (model_cuda_dist_env(&td->rank, &td->world)) return -1;
    const char *why = NULL;
    hat_device r = device_resolve((hat_device)device, &why);
    if (r == HAT_DEVICE_INVALID) {
        hat_warn("--device %s: %s", device_name((hat_device)device), why);
        return -1;
    }
    if (td->world > 1 && accum <= 0) {
        hat_warn("launched as rank %d of %d: this trainer has no data-parallel mode (run one process)",
                 td->rank, td->world);
        return -1;
    }
    if (r == HAT_DEVICE_CPU) {
        if (td->world > 1) {
            hat_warn("launched as rank %d of %d: data-parallel training needs --device cuda",
                     td->rank, td->world);
            return -1;
        }
        return 0;
    }
    if (td->world > 1) {
        if (!(td->dist = model_cuda_dist_open())) return -1;
        if (accum % td->world && td->rank == 0)
            hat_warn("--accum %d is not a multiple of the %d ranks: some get fewer micro-batches",
                     accum, td->world);
    }
    if (!(td->mc = model_cuda_new(k->m, precision))) {
        model_cuda_dist_close(td->dist);
        td->dist = NULL;
        return -1;
    }
    td->cuda = 1;
    model_cuda_upload_moments(td->mc, k->opt_m, k->opt_v);
    return 0;
}

void train_device_close(train_device *td)
{
    model_cuda_free(td->mc);
    model_cuda_dist_close(td->dist);
    memset(td, 0, sizeof *td);
}

void train_device_sync(train_device *td, ckpt *k)
{
    if (td && td->cuda) model_cuda_download(td->mc, k->m->params, NULL, k->opt_m, k->opt_v);
}

const char *train_device_name(const train_device *td)
{
    return td && td->cuda ? "cuda" : "cpu";
}

/* train_step on the GPU: the same micro-batches, scales, clipping and
 * AdamW; with ranks, this rank's share of the micro-batches and one
 * gradient all-reduce (sum: each share is already scaled by the step's
 * global target count). */
static void train_step_cuda(train_device *td, const train_data *d, train_state *s, train_result *r)
{
    model_cuda *mc = td->mc;
    int B = s->B, A = s->accum;
    size_t N = (size_t)B * s->T;
    step_batches sb;
    fill_step(d, s, &sb);
    long total = sb.total, total_mtp = sb.total_mtp;
    double w = mc->m->cfg.mtp_loss_weight;
    model_cuda_zero_grad(mc);
    float ms = total ? 1.0f / total : 0;
    float ts = total_mtp ? w / total_mtp : 0;          /* in double, as train_step */
    double loss = 0, mtp_loss = 0;
    for (int a = 0; a < A; a++) {
        if (a % td->world != td->rank) continue;
        model_cuda_forward(mc, sb.tok + a * N, sb.tgt + a * N, B, sb.Tb[a]);
        loss += mc->loss_sum;
        mtp_loss += mc->mtp_loss_sum;
        model_cuda_backward(mc, ms, ts);
    }
    if (td->dist) {
        model_cuda_allreduce_grads(mc, td->dist, 1.0f);
        loss = model_cuda_dist_sum(td->dist, loss);
        mtp_loss = model_cuda_dist_sum(td->dist, mtp_loss);
    }
    r->loss = (total ? loss / total : 0) + (total_mtp ? w * mtp_loss / total_mtp : 0);
    r->tokens = total;
    r->processed = sb.processed;
    r->lr = optim_lr(&s->opt, s->step);
    r->grad_norm = model_cuda_grad_clip(mc, s->opt.grad_clip);
    model_cuda_adamw_step(mc, &s->opt, r->lr, s->step + 1);
    s->step++;
    free_step(&sb);
}

void train_step_on(train_device *td, ckpt *k, const train_data *d, train_state *s,
                   train_result *r)
{
    if (td && td->cuda) train_step_cuda(td, d, s, r);
    else train_step(k->m, k->opt_m, k->opt_v, d, s, r);
}

int train_save(ckpt *k, const train_state *s, const char *key, json_t *extra, const char *path)
{
    json_decref(k->state);
    k->state = train_state_json(s);
    if (key) json_object_set_new(k->state, key, extra);
    model_release_acts(k->m);
    return ckpt_save(k, path, ST_F32);
}

int train_begin(ckpt *k, train_state *s, int resume, const char *key, uint64_t seed, long steps,
                const char *name)
{
    if (resume) {
        if (!k->state || !k->opt_m || (key && !json_object_get(k->state, key))) {
            hat_errat(name, 0, "--resume: checkpoint has no %s%strainer state (trainer_state.json, "
                      "optimizer.safetensors)", key ? key : "", key ? "-step " : "");
            return -1;
        }
        return train_state_parse(s, k->state, name);
    }
    if (!s->opt.total_steps) s->opt.total_steps = steps;
    s->seed = seed;
    rng_seed(&s->rng, seed);
    free(k->opt_m);
    free(k->opt_v);
    k->opt_m = xcalloc(k->m->n_floats, sizeof(float));
    k->opt_v = xcalloc(k->m->n_floats, sizeof(float));
    return 0;
}

static int save_stage(ckpt *k, const train_state *s, const train_loop *L)
{
    if (L->dev && L->dev->rank != 0) return 0;       /* rank 0 writes for all */
    train_device_sync(L->dev, k);
    return train_save(k, s, L->key, L->key && L->config ? L->config(L->ctx) : NULL, L->output);
}

int train_run(ckpt *k, train_state *s, const train_loop *L)
{
    hat_out *mo = NULL;
    int writer = !L->dev || L->dev->rank == 0;
    if (writer && L->metrics && !(mo = out_open_log(L->metrics))) return -1;
    int rc = 0;
    long start = s->step, end = s->step + L->steps;
    progress *pg = writer ? progress_start(NULL, "steps", L->steps) : NULL;
    while (s->step < end && !rc) {
        json_t *line = NULL;
        char status[256] = "", *err = NULL;
        if (L->step(L->ctx, s, &line, status, sizeof status, &err)) {
            hat_errat(L->name, 0, "%s", err);
            free(err);
            rc = -1;
            break;
        }
        if (mo && line) rc = out_json(mo, line);
        json_decref(line);
        progress_status(pg, "%s", status);
        progress_update(pg, s->step - start, 0);
        if (L->save_every && s->step % L->save_every == 0 && s->step < end) rc = save_stage(k, s, L);
    }
    progress_end(pg);
    if (!rc) rc = save_stage(k, s, L);
    /* after the save: a run that fails, even there, leaves no metrics
     * file it created and wrote nothing to (out_abort) */
    if (mo) { if (rc) out_abort(mo); else rc = out_close(mo); }
    return rc ? -1 : 0;
}
