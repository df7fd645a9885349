/* serve_sched.c — the scheduler thread of serve, its job queue, harness
 * hot reload and the metrics it keeps (see serve.h for the threading
 * model).  Only the scheduler thread touches the engines, the rollout and
 * the teacher; front-end threads touch a job only under its mutex. */
#include "serve.h"
#include "chat.h"
#include "generate.h"
#include "harness.h"
#include "jsonl.h"
#include "model_cuda.h"
#include "sim.h"
#include "teacher.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct serve {
    serve_config     c;
    metrics         *mx;
    pthread_mutex_t  mu;                 /* queue, counters, flags */
    pthread_cond_t   wake, idle;
    serve_job       *qhead, *qtail;
    int              nqueue, nchat, nagent, draining, stopping;
    int              aborting;           /* the drain timed out: end every job now */
    pthread_t        thr, reloader;      /* the scheduler; harness reloads */
    pthread_mutex_t  hmu;                /* the current harness */
    json_t          *h;
    volatile sig_atomic_t reload_req;
    long long        hsig, hsig_seen;    /* harness files' signature (polling) */
    double           next_poll;
    gen_engine      *e;
    serve_job      **chat;               /* (slots) job per engine slot */
    serve_job      **agent;              /* (slots) agent jobs in flight, NULL = free */
    rollout         *r;
    teacher         *teach;
    sim             *tsim;
    int              im_end, eos;
    long             nreq, reloads, reload_failures;
    uint64_t         stream;
    const char      *device;             /* where the engines decode: "cpu" | "cuda" */
    const char      *precision;          /* their weights and cache: "fp32" | "bf16" */
    size_t           kv_bytes;           /* KV cache of all engines */
};

static void logf_(serve *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(serve *s, const char *fmt, ...)
{
    if (!s->c.log) return;
    va_list ap;
    va_start(ap, fmt);
    flockfile(s->c.log);
    fprintf(s->c.log, "%s: ", hat_prog);
    vfprintf(s->c.log, fmt, ap);
    fputc('\n', s->c.log);
    funlockfile(s->c.log);
    fflush(s->c.log);
    va_end(ap);
}

size_t serve_kv_bytes(const serve_config *c)
{
    if (!c->m) return 0;
    const model_config *k = &c->m->cfg;
    return (size_t)c->slots * c->max_context * k->n_layers * k->n_kv_heads * k->head_dim * 2 * sizeof(float);
}

metrics *serve_metrics(serve *s) { return s->mx; }
const serve_config *serve_get_config(const serve *s) { return &s->c; }
int serve_draining(const serve *s) { return s->draining; }

/* ---- metrics ----------------------------------------------------------------------- */

static void define_metrics(metrics *mx)
{
    double lat[16], tok[12], batch[10];
    metrics_exp_bounds(lat, 16, 0.005, 2);     /* 5 ms .. 164 s */
    metrics_exp_bounds(tok, 12, 1, 2);         /* 1 .. 2048 tokens/s */
    metrics_exp_bounds(batch, 10, 1, 2);       /* 1 .. 512 sequences */
    metrics_define(mx, "hat_requests_total", METRIC_COUNTER, "Requests answered, by endpoint and HTTP status.", NULL, 0);
    metrics_define(mx, "hat_request_errors_total", METRIC_COUNTER, "Requests answered with a status of 400 or more.", NULL, 0);
    metrics_define(mx, "hat_request_duration_seconds", METRIC_HISTOGRAM, "End-to-end request latency.", lat, 16);
    metrics_define(mx, "hat_queue_wait_seconds", METRIC_HISTOGRAM, "Time from submission to the first engine step.", lat, 16);
    metrics_define(mx, "hat_time_to_first_token_seconds", METRIC_HISTOGRAM, "Time from submission to the first generated token.", lat, 16);
    metrics_define(mx, "hat_request_tokens_per_second", METRIC_HISTOGRAM, "Generated tokens per second of each request's run time.", tok, 12);
    metrics_define(mx, "hat_generated_tokens_total", METRIC_COUNTER, "Tokens generated.", NULL, 0);
    metrics_define(mx, "hat_prompt_tokens_total", METRIC_COUNTER, "Prompt tokens of chat requests.", NULL, 0);
    metrics_define(mx, "hat_queue_depth", METRIC_GAUGE, "Jobs waiting for a free sequence.", NULL, 0);
    metrics_define(mx, "hat_running", METRIC_GAUGE, "Jobs in flight, by engine.", NULL, 0);
    metrics_define(mx, "hat_batch_size", METRIC_HISTOGRAM, "Sequences in one engine step.", batch, 10);
    metrics_define(mx, "hat_kv_cache_bytes", METRIC_GAUGE, "KV cache allocated by the engines.", NULL, 0);
    metrics_define(mx, "hat_engine_info", METRIC_GAUGE, "1 for each engine, labelled with the device it "
                   "decodes on and the precision of its weights and KV cache.", NULL, 0);
    metrics_define(mx, "hat_mtp_drafted_tokens_total", METRIC_COUNTER, "MTP draft tokens verified, by engine; "
                   "acceptance = accepted / drafted.", NULL, 0);
    metrics_define(mx, "hat_mtp_accepted_tokens_total", METRIC_COUNTER, "MTP draft tokens accepted.", NULL, 0);
    metrics_define(mx, "hat_mtp_verify_steps_total", METRIC_COUNTER, "Sequence-steps that verified drafts; mean "
                   "accepted length = (accepted + steps) / steps.", NULL, 0);
    metrics_define(mx, "hat_harness_reloads_total", METRIC_COUNTER, "Harness reloads, by result.", NULL, 0);
}

static const char *kind_path(int kind)
{
    return kind == SERVE_CHAT ? "/v1/chat/completions" : kind == SERVE_AGENT ? "/v1/agent"
         : kind == SERVE_HEALTH ? "/health" : kind == SERVE_METRICS ? "/metrics" : "other";
}

void serve_observe(serve *s, int kind, int status, double seconds)
{
    char l[96];
    snprintf(l, sizeof l, "path=\"%s\",code=\"%d\"", kind_path(kind), status);
    metrics_add(s->mx, "hat_requests_total", l, 1);
    if (status >= 400) metrics_add(s->mx, "hat_request_errors_total", l, 1);
    snprintf(l, sizeof l, "path=\"%s\"", kind_path(kind));
    if (seconds >= 0) metrics_observe(s->mx, "hat_request_duration_seconds", l, seconds);
}

/* ---- jobs -------------------------------------------------------------------------- */

static serve_job *job_alloc(serve_request *r)
{
    serve_job *j = xcalloc(1, sizeof *j);
    j->req = *r;
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    sbuf_init(&j->text);
    j->refs = 1;
    j->slot = -1;
    j->status = 0;
    return j;
}

void serve_job_unref(serve_job *j)
{
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    serve_request_clear(&j->req);
    free(j->prompt);
    free(j->prefix);
    json_decref(j->result);
    json_decref(j->script);
    sbuf_free(&j->text);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

serve_job *serve_job_new(serve *s, serve_request *r, int *status, char **err)
{
    *err = NULL;
    *status = 0;
    if (r->kind == SERVE_CHAT) {
        if (!s->c.m || !s->c.t) {
            *status = 503;
            *err = xstrdup("no model is loaded: this server answers /v1/agent only");
            return NULL;
        }
        tok_ids ids = { 0 };
        if ((*status = serve_chat_encode(r, s->c.t, &ids, err))) { tok_ids_free(&ids); return NULL; }
        if ((int)ids.n >= s->c.max_context) {
            *status = 400;
            *err = xasprintf("the prompt is %zu tokens; the context holds %d", ids.n, s->c.max_context);
            tok_ids_free(&ids);
            return NULL;
        }
        serve_job *j = job_alloc(r);
        j->prompt = ids.v;
        j->n_prompt = (int)ids.n;
        j->prefix = serve_forced_prefix(&j->req);
        return j;
    }
    if (!s->c.m && !s->c.policy) {
        *status = 503;
        *err = xstrdup("no model is loaded");
        return NULL;
    }
    return job_alloc(r);
}

int serve_submit(serve *s, serve_job *j)
{
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (s->draining) rc = 503;
    else if (s->nqueue >= s->c.queue_max) rc = 429;
    else {
        j->t_submit = hat_now();
        j->state = JOB_QUEUED;
        j->refs++;                      /* the scheduler's */
        j->next = NULL;
        if (s->qtail) s->qtail->next = j; else s->qhead = j;
        s->qtail = j;
        s->nqueue++;
        s->nreq++;
        metrics_set(s->mx, "hat_queue_depth", "", s->nqueue);
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int serve_wait(serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (j->state != JOB_DONE) pthread_cond_wait(&j->cv, &j->mu);
    int st = j->status;
    pthread_mutex_unlock(&j->mu);
    return st;
}

int serve_wait_for(serve_job *j, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_mutex_lock(&j->mu);
    while (j->state != JOB_DONE && pthread_cond_timedwait(&j->cv, &j->mu, &ts) != ETIMEDOUT) {}
    int done = j->state == JOB_DONE;
    pthread_mutex_unlock(&j->mu);
    return done;
}

void serve_cancel(serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancelled = 1;
    pthread_mutex_unlock(&j->mu);
}

/* Scheduler side: publish the answer, wake the waiter, drop our ref. */
static void job_finish(serve *s, serve_job *j, int status, json_t *result)
{
    double t = hat_now();
    pthread_mutex_lock(&j->mu);
    j->status = status;
    j->result = result;
    j->t_done = t;
    j->state = JOB_DONE;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (status == 200 && j->n_gen > 0 && t > j->t_start)
        metrics_observe(s->mx, "hat_request_tokens_per_second", "", j->n_gen / (t - j->t_start));
    serve_job_unref(j);
}

static void job_fail(serve *s, serve_job *j, int status, const char *msg)
{
    char *b = serve_error_body(status, msg);
    job_finish(s, j, status, json_loads(b, 0, NULL));
    free(b);
}

/* ---- the scripted policy (test only: --policy teacher) ------------------------------ */

/* The text the assistant would have generated for msg: its rendering
 * between the assistant header and <|im_end|>. */
static char *assistant_text(const json_t *msg)
{
    json_t *msgs = json_pack("[{s:s,s:s},O]", "role", "user", "content", "", msg);
    chat_opts o = CHAT_OPTS_INIT;
    chat_text t;
    char *err = NULL, *res = NULL;
    if (!chat_render(&t, msgs, &o, &err)) {
        const char *p = strstr(t.text, "<|im_start|>assistant\n");
        const char *e = p ? strstr(p, "<|im_end|>") : NULL;
        if (p && e) res = xstrndup(p + 22, (size_t)(e - p - 22));
        chat_text_free(&t);
    }
    free(err);
    json_decref(msgs);
    return res;
}

/* The teacher plays the task on a private simulator; its assistant
 * messages are then replayed one per turn.  A viewer message without gold
 * is played as a greeting. */
static char *teacher_policy(void *ctx, const json_t *h, const json_t *messages, void *user)
{
    serve *s = ctx;
    serve_job *j = user;
    if (!j->script) {
        json_t *task = json_deep_copy(j->req.task);
        if (!json_object_get(task, "gold")) {
            json_object_set_new(task, "intent", json_string("greeting"));
            json_object_set_new(task, "gold", json_pack("{s:s,s:[],s:{},s:[s],s:[]}", "skill", "engagement",
                                                        "calls", "facts", "must", "address_viewer", "must_not"));
        }
        char *err = NULL;
        sim_set_harness(s->tsim, h, &err);
        rng_t r;
        rng_derive(&r, j->req.seed, j->slot);
        teacher_opts o = { 0, 1 };          /* keep retries: the replay meets the same faults */
        json_t *msgs = err ? NULL : teacher_run(s->teach, s->tsim, task, &r, &o, NULL, &err);
        sim_set_harness(s->tsim, NULL, NULL);  /* never cache a harness that may be freed */
        free(err);
        json_decref(task);
        j->script = json_array();
        size_t i;
        json_t *m;
        json_array_foreach(msgs, i, m)
            if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
                json_array_append(j->script, m);
        json_decref(msgs);
    }
    size_t k = 0, i;
    json_t *m;
    json_array_foreach(messages, i, m)
        k += !strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant");
    const json_t *next = json_array_get(j->script, k);
    return next ? assistant_text(next) : NULL;
}

/* ---- harness reload --------------------------------------------------------------- */

static __thread unsigned long long sig_acc;   /* unsigned: the mix wraps */
static int sig_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    sig_acc = sig_acc * 1000003u + (unsigned long long)st->st_mtim.tv_sec * 1000000000u +
              (unsigned long long)st->st_mtim.tv_nsec + (unsigned long long)st->st_size * 7u +
              (unsigned long long)st->st_ino;
    return 0;
}

/* A number that changes when any file under path changes (mtime, size,
 * inode, set of files); 0 when path cannot be read. */
static long long harness_signature(const char *path)
{
    sig_acc = 1;
    if (nftw(path, sig_one, 16, FTW_PHYS) != 0) return 0;
    return (long long)(sig_acc >> 1);           /* fits, and is never negative */
}

json_t *serve_harness(serve *s)
{
    pthread_mutex_lock(&s->hmu);
    json_t *h = json_incref(s->h);
    pthread_mutex_unlock(&s->hmu);
    return h;
}

static const char *hname(const json_t *h, const char *k)
{
    const char *v = json_string_value(json_object_get(h, k));
    return v ? v : "?";
}

int serve_reload_now(serve *s, const char *path, char **err)
{
    *err = NULL;
    if (!path) path = s->c.harness_path;
    if (!path) { *err = xstrdup("no harness path to reload from"); return -1; }
    json_t *nh = harness_load(path);
    int nerr = 0;
    const char *first = NULL;
    json_t *probs = nh ? harness_lint(nh, NULL) : NULL;
    size_t i;
    json_t *p;
    json_array_foreach(probs, i, p)
        if (!strcmp(json_string_value(json_object_get(p, "severity")) ?: "", "error")) {
            if (!nerr++) first = json_string_value(json_object_get(p, "message"));
        }
    json_t *old = serve_harness(s);
    if (!nh || nerr) {
        *err = !nh ? xasprintf("%s does not load", path)
                   : xasprintf("%s fails lint with %d error%s (%s)", path, nerr, nerr == 1 ? "" : "s",
                               first ? first : "?");
        logf_(s, "harness reload refused: %s; keeping %s %s", *err, hname(old, "name"), hname(old, "version"));
        metrics_add(s->mx, "hat_harness_reloads_total", "result=\"refused\"", 1);
        pthread_mutex_lock(&s->mu);
        s->reload_failures++;
        pthread_mutex_unlock(&s->mu);
        json_decref(probs);
        json_decref(nh);
        json_decref(old);
        return -1;
    }
    json_decref(probs);
    pthread_mutex_lock(&s->hmu);
    json_t *prev = s->h;
    s->h = nh;                  /* jobs in flight hold their own reference to prev */
    pthread_mutex_unlock(&s->hmu);
    logf_(s, "harness reloaded: %s %s (was %s %s)", hname(nh, "name"), hname(nh, "version"),
          hname(old, "name"), hname(old, "version"));
    metrics_add(s->mx, "hat_harness_reloads_total", "result=\"ok\"", 1);
    pthread_mutex_lock(&s->mu);
    s->reloads++;
    pthread_mutex_unlock(&s->mu);
    json_decref(prev);
    json_decref(old);
    return 0;
}

void serve_request_reload(serve *s) { s->reload_req = 1; }

/* SIGHUP, or the harness files changed and then stayed unchanged for one
 * polling period (an editor saving several files is read once, whole). */
static void maybe_reload(serve *s)
{
    int want = 0;
    if (s->reload_req) { s->reload_req = 0; want = 1; }
    double t = hat_now();
    if (s->c.poll_ms > 0 && s->c.harness_path && t >= s->next_poll) {
        s->next_poll = t + s->c.poll_ms / 1000.0;
        long long sig = harness_signature(s->c.harness_path);
        if (sig != s->hsig && sig == s->hsig_seen) { want = 1; }
        s->hsig_seen = sig;
        if (want) s->hsig = sig;
    }
    if (!want) return;
    char *err = NULL;
    serve_reload_now(s, NULL, &err);
    free(err);
}

#define GONE_MSG  "the client closed the connection"
#define DRAIN_MSG "the server shut down before this request finished (--drain-timeout)"

/* ---- the engines -------------------------------------------------------------------- */

static void admit_chat(serve *s, serve_job *j)
{
    gen_params g = { .temperature = j->req.temperature, .top_k = j->req.top_k, .top_p = j->req.top_p,
                     .max_tokens = j->req.max_tokens, .eos = s->im_end,
                     .stop_ids = s->eos >= 0 ? &s->eos : NULL, .n_stop = s->eos >= 0,
                     .mtp_k = s->c.mtp };
    uint64_t seed = j->req.seed_set ? j->req.seed : s->c.seed;
    uint64_t stream = j->req.seed_set ? 0 : s->stream++;
    int slot = gen_add(s->e, j->prompt, j->n_prompt, &g, seed, stream);
    if (slot < 0) { job_fail(s, j, 500, "the engine refused the sequence"); return; }
    j->slot = slot;
    s->chat[slot] = j;
    s->nchat++;
    metrics_add(s->mx, "hat_prompt_tokens_total", "", j->n_prompt);
}

static void admit_agent(serve *s, serve_job *j)
{
    rollout_params p = ROLLOUT_PARAMS_INIT;
    p.temperature = j->req.temperature;
    p.top_k = j->req.top_k;
    p.top_p = j->req.top_p;
    p.max_tokens = j->req.max_tokens;
    p.max_turns = j->req.max_turns;
    p.enable_thinking = j->req.enable_thinking;
    p.mtp_k = s->c.mtp;
    json_t *h = serve_harness(s);
    if (!j->req.seed_set) j->req.seed = s->c.seed;
    j->slot = (int)(j->req.seed_set ? 0 : s->stream++);
    char *err = NULL;
    if (rollout_add(s->r, j->req.task, h, j->req.seed, (uint64_t)j->slot, &p, j, &err)) {
        job_fail(s, j, err ? 400 : 500, err ? err : "no free conversation");
        free(err);
    } else {
        s->nagent++;
        for (int i = 0; i < s->c.slots; i++)
            if (!s->agent[i]) { s->agent[i] = j; break; }
    }
    json_decref(h);
}

/* Admit queued jobs while their engine has room; returns how many. */
static int admit(serve *s)
{
    int n = 0;
    serve_job **pp = &s->qhead, *prev = NULL;
    while (*pp) {
        serve_job *j = *pp;
        int chat = j->req.kind == SERVE_CHAT;
        int cancelled;
        pthread_mutex_lock(&j->mu);
        cancelled = j->cancelled;
        pthread_mutex_unlock(&j->mu);
        int room = chat ? s->nchat < s->c.slots : s->nagent < s->c.slots;
        if (s->aborting) cancelled = 2;
        if (!room && !cancelled) { prev = j; pp = &j->next; continue; }
        *pp = j->next;
        if (s->qtail == j) s->qtail = prev;
        s->nqueue--;
        j->t_start = hat_now();
        metrics_observe(s->mx, "hat_queue_wait_seconds", "", j->t_start - j->t_submit);
        pthread_mutex_lock(&j->mu);
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&j->mu);
        if (cancelled) job_fail(s, j, cancelled == 2 ? 503 : 499, cancelled == 2 ? DRAIN_MSG : GONE_MSG);
        else if (chat) admit_chat(s, j);
        else admit_agent(s, j);
        n++;
    }
    metrics_set(s->mx, "hat_queue_depth", "", s->nqueue);
    return n;
}

/* The generated text of a chat job so far: forced prefix + decoded ids.
 * The decoded bytes may hold NUL (a byte-level token for 0x00 is as easy
 * to sample as any other), so they are copied by length, never as a C
 * string; *len is the true length and the buffer is NUL-terminated past
 * it.  JSON carries such a byte as \u0000 (json_stringn). */
static char *job_text(serve *s, serve_job *j, int drop_last, size_t *len)
{
    int n;
    const int *ids = gen_output(s->e, j->slot, &n);
    if (drop_last && n > 0) n--;
    /* an id past the tokenizer reads as U+FFFD (as in rollout), never as
     * a failed decode that would empty the reply the stream had begun */
    size_t m = 0;
    char *d = tok_decode_model(s->c.t, ids, (size_t)n, 0, &m);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, j->prefix);
    sbuf_add(&b, d, m);
    free(d);
    *len = b.len;
    return sbuf_detach(&b);
}

static void finish_chat(serve *s, serve_job *j, char *text, size_t len, int length_hit)
{
    char *err = NULL;
    json_t *msg = chat_parse_output(text, len, &err);
    free(err);
    const char *finish = json_array_size(json_object_get(msg, "tool_calls")) ? "tool_calls"
                       : length_hit ? "length" : "stop";
    char id[48];
    snprintf(id, sizeof id, "chatcmpl-%d-%ld", j->slot, (long)(j->t_submit * 1000));
    json_t *res = serve_chat_response(id, (long)time(NULL), s->c.model_name, msg, finish, j->n_prompt, j->n_gen);
    json_decref(msg);
    gen_remove(s->e, j->slot);
    s->chat[j->slot] = NULL;
    s->nchat--;
    pthread_mutex_lock(&j->mu);
    sbuf_reset(&j->text);
    sbuf_add(&j->text, text, len);
    pthread_mutex_unlock(&j->mu);
    job_finish(s, j, 200, res);
}

/* The MTP counters an engine step moved, labelled by engine. */
static void count_mtp(serve *s, const char *engine, const gen_stats *g0, const gen_stats *g1)
{
    if (g1->drafted <= g0->drafted) return;
    metrics_add(s->mx, "hat_mtp_drafted_tokens_total", engine, g1->drafted - g0->drafted);
    metrics_add(s->mx, "hat_mtp_accepted_tokens_total", engine, g1->accepted - g0->accepted);
    metrics_add(s->mx, "hat_mtp_verify_steps_total", engine, g1->verify_steps - g0->verify_steps);
}

static void step_chat(serve *s)
{
    gen_stats g0 = gen_get_stats(s->e);
    gen_step(s->e);
    gen_stats g1 = gen_get_stats(s->e);
    count_mtp(s, "engine=\"chat\"", &g0, &g1);
    double t = hat_now();
    for (int i = 0; i < s->c.slots; i++) {
        serve_job *j = s->chat[i];
        if (!j) continue;
        int n, st = gen_status(s->e, i);
        gen_output(s->e, i, &n);
        if (n > j->n_gen) metrics_add(s->mx, "hat_generated_tokens_total", "", n - j->n_gen);
        pthread_mutex_lock(&j->mu);
        if (!j->t_first && n > 0) {
            j->t_first = t;
            metrics_observe(s->mx, "hat_time_to_first_token_seconds", "", t - j->t_submit);
        }
        j->n_gen = n;
        int cancelled = j->cancelled || s->aborting;
        pthread_mutex_unlock(&j->mu);
        if (cancelled) {
            gen_remove(s->e, i);
            s->chat[i] = NULL;
            s->nchat--;
            job_fail(s, j, s->aborting ? 503 : 499, s->aborting ? DRAIN_MSG : GONE_MSG);
            continue;
        }
        int need_text = j->req.stream || j->req.stop || st != GEN_RUNNING;
        if (!need_text) continue;
        size_t len;
        char *text = job_text(s, j, st == GEN_STOP, &len);
        size_t pre = strlen(j->prefix);
        size_t cut = pre + serve_find_stop(text + pre, len - pre, j->req.stop);
        if (cut < len || st != GEN_RUNNING) {
            text[cut] = 0;
            finish_chat(s, j, text, cut, cut == len && st == GEN_LENGTH);
        } else {
            pthread_mutex_lock(&j->mu);
            sbuf_reset(&j->text);
            sbuf_add(&j->text, text, len);
            pthread_cond_broadcast(&j->cv);
            pthread_mutex_unlock(&j->mu);
        }
        free(text);
    }
}

/* The /v1/agent answer: the accepted reply, the trajectory and timings. */
static json_t *agent_response(serve_job *j, const rollout_result *x, double t)
{
    const char *reply = NULL;
    size_t i;
    json_t *m;
    if (x->accepted)
        json_array_foreach(x->messages, i, m)
            if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
                reply = json_string_value(json_object_get(m, "content"));
    double run = t - j->t_start;
    return json_pack("{s:O,s:s?,s:s,s:b,s:{s:s,s:s},s:{s:O,s:O},s:{s:f,s:f,s:f,s:i,s:i,s:f}}",
                     "id", json_object_get(x->task, "id"), "reply", reply,
                     "finish", rollout_finish_names[x->finish], "accepted", x->accepted,
                     "harness", "name", hname(x->harness, "name"), "version", hname(x->harness, "version"),
                     "trajectory", "messages", x->messages, "meta", x->meta,
                     "timings", "queue_ms", (j->t_start - j->t_submit) * 1e3, "run_ms", run * 1e3,
                     "total_ms", (t - j->t_submit) * 1e3, "turns", x->turns, "gen_tokens", x->gen_tokens,
                     "tokens_per_s", run > 0 ? x->gen_tokens / run : 0.0);
}

/* Agent jobs whose client went away (or all of them, when the drain timed
 * out) end now instead of playing their conversation to the end. */
static void cancel_agents(serve *s)
{
    for (int i = 0; i < s->c.slots; i++) {
        serve_job *j = s->agent[i];
        if (!j) continue;
        pthread_mutex_lock(&j->mu);
        int cancelled = j->cancelled;
        pthread_mutex_unlock(&j->mu);
        if (cancelled || s->aborting) rollout_cancel(s->r, j);
    }
}

static void step_agent(serve *s)
{
    cancel_agents(s);
    rollout_stats before = rollout_get_stats(s->r);
    gen_stats g0 = rollout_gen_stats(s->r);
    rollout_step(s->r);
    rollout_stats after = rollout_get_stats(s->r);
    gen_stats g1 = rollout_gen_stats(s->r);
    count_mtp(s, "engine=\"agent\"", &g0, &g1);
    if (after.gen_tokens > before.gen_tokens)
        metrics_add(s->mx, "hat_generated_tokens_total", "", after.gen_tokens - before.gen_tokens);
    double t = hat_now();
    for (rollout_result *x; (x = rollout_take(s->r)); rollout_result_free(x)) {
        serve_job *j = x->user;
        s->nagent--;
        for (int i = 0; i < s->c.slots; i++)
            if (s->agent[i] == j) s->agent[i] = NULL;
        j->n_gen = x->gen_tokens;
        pthread_mutex_lock(&j->mu);
        int cancelled = j->cancelled;
        pthread_mutex_unlock(&j->mu);
        if (x->finish == ROLLOUT_ERROR && s->aborting) job_fail(s, j, 503, DRAIN_MSG);
        else if (x->finish == ROLLOUT_ERROR && cancelled) job_fail(s, j, 499, GONE_MSG);
        else if (x->finish == ROLLOUT_ERROR) job_fail(s, j, 500, x->error ? x->error : "the conversation failed");
        else job_finish(s, j, 200, agent_response(j, x, t));
    }
}

/* Harness reloads run on their own thread: reading and linting a harness
 * takes as long as its files take to read, and the scheduler must keep
 * stepping (and answering) meanwhile.  The reads are capped and refuse
 * anything but regular files (harness_load), so this thread cannot block
 * for ever either. */
static void *reload_loop(void *arg)
{
    serve *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        pthread_mutex_unlock(&s->mu);
        maybe_reload(s);
        usleep(50 * 1000);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *scheduler(void *arg)
{
    serve *s = arg;
    device_bind_thread();     /* the engines' GPU (HAT_CUDA_DEVICE), not GPU 0 */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        admit(s);
        int busy = s->nchat + s->nagent;
        metrics_set(s->mx, "hat_running", "engine=\"chat\"", s->nchat);
        metrics_set(s->mx, "hat_running", "engine=\"agent\"", s->nagent);
        if (!busy) {
            pthread_cond_broadcast(&s->idle);
            if (s->stopping && !s->qhead) break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            pthread_cond_timedwait(&s->wake, &s->mu, &ts);
            continue;
        }
        int nchat = s->nchat, nagent = s->nagent;
        pthread_mutex_unlock(&s->mu);
        if (nchat) { metrics_observe(s->mx, "hat_batch_size", "engine=\"chat\"", nchat); step_chat(s); }
        if (nagent) { metrics_observe(s->mx, "hat_batch_size", "engine=\"agent\"", nagent); step_agent(s); }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- life cycle --------------------------------------------------------------------- */

serve *serve_new(const serve_config *c, json_t *h, char **err)
{
    *err = NULL;
    if (c->mtp > GEN_MTP_MAX) {
        *err = xasprintf("--mtp %d: at most %d drafts per step", c->mtp, GEN_MTP_MAX);
        return NULL;
    }
    serve *s = xcalloc(1, sizeof *s);
    s->c = *c;
    if (s->c.slots <= 0) s->c.slots = 4;
    if (s->c.queue_max <= 0) s->c.queue_max = 64;
    if (s->c.m && (s->c.max_context <= 0 || s->c.max_context > s->c.m->cfg.max_position_embeddings))
        s->c.max_context = s->c.m->cfg.max_position_embeddings;
    if (s->c.max_context <= 0) s->c.max_context = 4096;
    /* A config may claim a context (max_position_embeddings 2^30) whose KV
     * cache no machine holds: say so, and what to set, before allocating. */
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (s->c.m && ((double)s->c.slots * s->c.max_context * s->c.m->cfg.n_layers * s->c.m->cfg.n_kv_heads *
                   s->c.m->cfg.head_dim * 2 * sizeof(float) * 2 > (phys > 0 ? phys : 1e18))) {
        *err = xasprintf("the KV cache would take %.1f GiB per engine (%d sequences x %d tokens, the "
                         "model's max_position_embeddings), more than this machine's %.1f GiB of memory; "
                         "set --max-context (and --slots) lower", (double)s->c.slots * s->c.max_context *
                         s->c.m->cfg.n_layers * s->c.m->cfg.n_kv_heads * s->c.m->cfg.head_dim * 2 *
                         sizeof(float) / 1073741824.0, s->c.slots, s->c.max_context, phys / 1073741824.0);
        free(s);
        return NULL;
    }
    s->im_end = s->c.t ? tok_token_id(s->c.t, "<|im_end|>") : -1;
    s->eos = s->c.m && s->c.m->cfg.eos_token_id != s->im_end ? s->c.m->cfg.eos_token_id : -1;
    s->c.dev.mtp = s->c.mtp > 0;
    s->r = rollout_open(s->c.m, s->c.t, s->c.w, s->c.slots, s->c.max_context, &s->c.dev, err);
    if (!s->r) { free(s); return NULL; }
    if (s->c.policy) {
        if (strcmp(s->c.policy, "teacher") || !(s->teach = teacher_new())) {
            if (!*err) *err = xasprintf("unknown policy '%s' (only \"teacher\")", s->c.policy);
            rollout_free(s->r);
            free(s);
            return NULL;
        }
        s->tsim = sim_new(s->c.w);
        rollout_set_policy(s->r, teacher_policy, s);
    }
    rollout_set_name(s->r, s->c.model_name);
    if (s->c.m && s->c.t) {
        if (!(s->e = gen_open(s->c.m, s->c.slots, s->c.max_context, &s->c.dev, err))) {
            rollout_free(s->r);
            sim_free(s->tsim);
            teacher_free(s->teach);
            free(s);
            return NULL;
        }
        s->chat = xcalloc(s->c.slots, sizeof *s->chat);
    }
    /* Both engines follow the same rules from the same model, so they
     * decode on the same device; each still reports its own. */
    s->device = rollout_device(s->r);
    s->precision = !strcmp(s->device, "cuda") ? model_cuda_precision_name(s->c.dev.precision) : "fp32";
    s->agent = xcalloc(s->c.slots, sizeof *s->agent);
    s->mx = metrics_new();
    define_metrics(s->mx);
    for (int i = 0; i < (s->e ? 2 : 1); i++) {
        const char *dv = i ? gen_device_name(s->e) : s->device;
        int gpu16 = !strcmp(dv, "cuda") && s->c.dev.precision == GEN_CUDA_BF16;
        s->kv_bytes += serve_kv_bytes(&s->c) / (gpu16 ? 2 : 1);   /* bf16 on the GPU: 2 bytes */
        char l[96];
        snprintf(l, sizeof l, "engine=\"%s\",device=\"%s\",precision=\"%s\"", i ? "chat" : "agent", dv,
                 gpu16 ? "bf16" : "fp32");
        metrics_set(s->mx, "hat_engine_info", l, 1);
    }
    metrics_set(s->mx, "hat_kv_cache_bytes", "", (double)s->kv_bytes);
    metrics_set(s->mx, "hat_queue_depth", "", 0);
    s->h = json_incref(h);
    if (s->c.harness_path) s->hsig = s->hsig_seen = harness_signature(s->c.harness_path);
    s->next_poll = hat_now() + s->c.poll_ms / 1000.0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hmu, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->idle, NULL);
    pthread_create(&s->thr, NULL, scheduler, s);
    pthread_create(&s->reloader, NULL, reload_loop, s);
    return s;
}

void serve_drain(serve *s) { serve_drain_for(s, -1); }

int serve_drain_for(serve *s, double seconds)
{
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    pthread_cond_signal(&s->wake);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (seconds >= 0) {
        until.tv_sec += (time_t)seconds;
        until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    }
    int aborted = 0;
    while (s->qhead || s->nchat || s->nagent) {
        if (seconds < 0 || aborted) { pthread_cond_wait(&s->idle, &s->mu); continue; }
        if (pthread_cond_timedwait(&s->idle, &s->mu, &until) == ETIMEDOUT &&
            (s->qhead || s->nchat || s->nagent)) {
            /* Time is up: the scheduler ends every job at its next turn
             * (503), so the wait below is one engine step long. */
            s->aborting = aborted = 1;
            pthread_cond_signal(&s->wake);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return aborted;
}

void serve_free(serve *s)
{
    if (!s) return;
    serve_drain(s);
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thr, NULL);
    pthread_join(s->reloader, NULL);
    rollout_free(s->r);
    gen_free(s->e);
    free(s->chat);
    free(s->agent);
    sim_free(s->tsim);
    teacher_free(s->teach);
    metrics_free(s->mx);
    json_decref(s->h);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->hmu);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->idle);
    free(s);
}

json_t *serve_stats(serve *s)
{
    json_t *h = serve_harness(s);
    pthread_mutex_lock(&s->mu);
    json_t *o = json_pack("{s:i,s:i,s:i,s:i,s:I,s:{s:s,s:s},s:I,s:I,s:I,s:b,s:n}", "queue", s->nqueue,
                          "running", s->nchat + s->nagent, "slots", s->c.slots, "context", s->c.max_context,
                          "requests", (json_int_t)s->nreq, "harness", "name", hname(h, "name"),
                          "version", hname(h, "version"), "reloads", (json_int_t)s->reloads,
                          "reload_failures", (json_int_t)s->reload_failures,
                          "kv_cache_bytes", (json_int_t)s->kv_bytes,
                          "draining", s->draining, "mtp");
    json_object_set_new(o, "device", json_string(s->device));
    json_object_set_new(o, "precision", json_string(s->precision));
    if (s->c.mtp > 0) {
        double d = 0, a = 0;
        for (int i = 0; i < 2; i++) {
            const char *engine = i ? "engine=\"agent\"" : "engine=\"chat\"";
            d += metrics_get(s->mx, "hat_mtp_drafted_tokens_total", engine, NULL);
            a += metrics_get(s->mx, "hat_mtp_accepted_tokens_total", engine, NULL);
        }
        json_object_set_new(o, "mtp", json_pack("{s:i,s:f,s:f}", "k", s->c.mtp, "drafted", d,
                                                "acceptance", d > 0 ? a / d : 0.0));
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(h);
    return o;
}

int serve_run(serve *s, int kind, const json_t *body, json_t **response)
{
    double t0 = hat_now();
    serve_request r;
    char *err = NULL;
    int status = serve_parse_json(kind, body, &s->c.limits, &r, &err);
    serve_job *j = status ? NULL : serve_job_new(s, &r, &status, &err);
    serve_request_clear(&r);
    if (j && (status = serve_submit(s, j)))
        err = xstrdup(status == 429 ? "the queue is full; retry later" : "the server is shutting down");
    if (j && !status) {
        status = serve_wait(j);
        *response = json_incref(j->result);
    } else {
        char *b = serve_error_body(status, err);
        *response = json_loads(b, 0, NULL);
        free(b);
    }
    serve_observe(s, kind, status, hat_now() - t0);
    serve_job_unref(j);
    free(err);
    return status;
}
