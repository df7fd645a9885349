/* rollout.c — the multi-turn agent loop over the decoding engine and the
 * simulator (see rollout.h).  A conversation is a small state machine:
 * READY (its context waits to be generated from) → GEN (a sequence in the
 * engine) → READY ... → finished (a rollout_result in the done queue). */
#include "rollout.h"
#include "chat.h"
#include "chat_encode.h"
#include "generate.h"
#include "harness.h"
#include "sim.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const rollout_finish_names[] = { "accepted", "max_turns", "budget", "context", "error" };

enum { C_FREE, C_READY, C_GEN };

typedef struct {
    int      state, slot;             /* slot: engine sequence while GEN, and between turns */
    int      in_engine, eng_n;        /* holds slot; tokens of ids the engine has (its cache) */
    void    *user;
    json_t  *task, *h, *msgs;
    sim     *s;
    uint64_t seed, stream;
    rollout_params p;
    int      max_turns, turns, malformed, gen_tokens;
    tok_ids  ids, mask, turn_off, turn_len;
    float   *lp;
    size_t   lp_cap;
    int      n_prompt;
} conv;

struct rollout {
    const model     *m;
    const tokenizer *t;
    const world     *w;
    judge           *j;
    json_t          *judged_h;        /* the last harness j scored under (kept alive, see finish) */
    rollout_policy_fn policy;
    void            *policy_ctx;
    char            *name;
    gen_engine      *e;
    int              max_convs, max_len, im_end, eos;
    int              no_share;          /* rollout_set_shared_prefix(r, 0) */
    conv            *c;
    rollout_result **done;            /* FIFO of finished conversations */
    int              ndone, done_head, done_cap;
    rollout_stats    st;
};

rollout *rollout_new(const model *m, const tokenizer *t, const world *w, int max_convs,
                     int max_len, char **err)
{
    return rollout_open(m, t, w, max_convs, max_len, NULL, err);
}

const char *rollout_device(const rollout *r) { return r->e ? gen_device_name(r->e) : "cpu"; }

rollout *rollout_open(const model *m, const tokenizer *t, const world *w, int max_convs,
                      int max_len, const gen_device *d, char **err)
{
    *err = NULL;
    int im_end = t ? tok_token_id(t, "<|im_end|>") : -1;
    if (t && im_end < 0) { *err = xstrdup("the tokenizer has no <|im_end|> token"); return NULL; }
    if (t && m && tok_vocab_size(t) > m->cfg.vocab_size) {
        *err = xasprintf("the tokenizer has %d ids but the model only %d", tok_vocab_size(t),
                         m->cfg.vocab_size);
        return NULL;
    }
    if (m && !t) { *err = xstrdup("a model needs a tokenizer"); return NULL; }
    rollout *r = xcalloc(1, sizeof *r);
    r->m = m;
    r->t = t;
    r->w = w;
    r->max_convs = max_convs > 0 ? max_convs : 1;
    r->max_len = max_len > 0 ? max_len : m ? m->cfg.max_position_embeddings : 1 << 20;
    r->im_end = im_end;
    r->eos = m && m->cfg.eos_token_id != im_end ? m->cfg.eos_token_id : -1;
    r->c = xcalloc(r->max_convs, sizeof *r->c);
    for (int i = 0; i < r->max_convs; i++) r->c[i].s = sim_new(w);
    if (m && !(r->e = gen_open(m, r->max_convs, r->max_len, d, err))) {
        rollout_free(r);
        return NULL;
    }
    return r;
}

static void conv_clear(conv *c)
{
    /* The simulator caches its harness by address: never leave it holding
     * one that may be freed and its address reused by the next. */
    if (c->s) sim_set_harness(c->s, NULL, NULL);
    json_decref(c->task); json_decref(c->h); json_decref(c->msgs);
    tok_ids_free(&c->ids); tok_ids_free(&c->mask); tok_ids_free(&c->turn_off); tok_ids_free(&c->turn_len);
    free(c->lp);
    sim *s = c->s;
    memset(c, 0, sizeof *c);
    c->s = s;
}

void rollout_free(rollout *r)
{
    if (!r) return;
    for (int i = 0; i < r->max_convs; i++) {
        sim_free(r->c[i].s);   /* before the harness it points into goes */
        r->c[i].s = NULL;
        conv_clear(&r->c[i]);
    }
    for (int i = 0; i < r->ndone; i++) rollout_result_free(r->done[(r->done_head + i) % r->done_cap]);
    free(r->done);
    free(r->c);
    gen_free(r->e);
    json_decref(r->judged_h);
    free(r->name);
    free(r);
}

void rollout_set_judge(rollout *r, judge *j) { r->j = j; }
void rollout_set_policy(rollout *r, rollout_policy_fn fn, void *ctx) { r->policy = fn; r->policy_ctx = ctx; }
void rollout_set_shared_prefix(rollout *r, int on) { r->no_share = !on; }
void rollout_set_name(rollout *r, const char *name) { free(r->name); r->name = name ? xstrdup(name) : NULL; }
rollout_stats rollout_get_stats(const rollout *r) { return r->st; }

gen_stats rollout_gen_stats(const rollout *r)
{
    gen_stats z = { 0 };
    return r->e ? gen_get_stats(r->e) : z;
}
int rollout_pending(const rollout *r) { return r->ndone; }

int rollout_running(const rollout *r)
{
    int n = 0;
    for (int i = 0; i < r->max_convs; i++) n += r->c[i].state != C_FREE;
    return n;
}

/* ---- the token record ---------------------------------------------------------------- */

static void push_tok(conv *c, int id, int mask, float lp)
{
    tok_ids_push(&c->ids, id);
    tok_ids_push(&c->mask, mask);
    if (c->ids.n > c->lp_cap) {
        c->lp_cap = c->ids.n * 2 + 64;
        c->lp = xrealloc(c->lp, c->lp_cap * sizeof *c->lp);
    }
    c->lp[c->ids.n - 1] = lp;
}

/* Append the template text of everything after the last assistant turn
 * (the first prompt when there is none), ending with the assistant
 * header.  0, or -1 with *err. */
static int extend_context(rollout *r, conv *c, char **err)
{
    if (!r->t) return 0;
    chat_opts o = CHAT_OPTS_INIT;
    o.add_generation_prompt = 1;
    o.enable_thinking = c->p.enable_thinking;
    chat_text ct;
    if (harness_render(&ct, c->h, c->msgs, &o, err)) return -1;
    size_t off = 0;
    for (size_t i = 0; i < ct.nspans; i++)
        if (ct.spans[i].assistant) off = ct.spans[i].off + ct.spans[i].len;
    tok_ids add = { 0 };
    int rc = chat_text_encode(r->t, &ct, off, &add, NULL);
    if (rc) *err = xstrdup("the rendered conversation is not valid UTF-8");
    for (size_t i = 0; !rc && i < add.n; i++) push_tok(c, add.v[i], 0, 0);
    tok_ids_free(&add);
    chat_text_free(&ct);
    return rc;
}

/* ---- malformed turns ------------------------------------------------------------------- */

/* The "name" string of the first tool call in raw text, if one can be
 * read without parsing the (broken) JSON; malloc'd or NULL. */
static char *call_name(const char *text)
{
    const char *p = strstr(text, "<tool_call>");
    p = p ? strstr(p, "\"name\"") : NULL;
    if (!p) return NULL;
    p += 6;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p++ != ':') return NULL;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (*p++ != '"') return NULL;
    const char *q = p;
    while (*q && *q != '"' && *q != '\\' && *q != '\n' && *q != '<') q++;
    return *q == '"' && q > p ? xstrndup(p, q - p) : NULL;
}

json_t *rollout_malformed_note(const json_t *h, const char *text, const char *error)
{
    if (strstr(text, "<tool_call>") || strstr(text, "</tool_call>")) {
        char *name = call_name(text);
        const char *tool = name ? name : "tool_call";
        json_t *vars = json_pack("{s:s,s:s}", "tool", tool, "error", error);
        char *msg = harness_hook_message(h, "tool_args_check", "message", vars);
        if (!msg) msg = xasprintf("Invalid arguments for %s: %s", tool, error);
        json_t *m = json_pack("{s:s,s:s,s:s,s:s}", "role", "tool", "name", tool, "content", msg,
                              "hook", "tool_args_check");
        json_decref(vars);
        free(msg);
        free(name);
        return m;
    }
    json_t *vars = json_pack("{s:s}", "error", error);
    char *msg = harness_hook_message(h, "reply_format", "message", vars);
    if (!msg) msg = xasprintf("Reply rejected: %s", error);
    json_t *m = json_pack("{s:s,s:s,s:s}", "role", "user", "content", msg, "hook", "reply_format");
    json_decref(vars);
    free(msg);
    return m;
}

/* ---- finishing ------------------------------------------------------------------------- */

static void push_done(rollout *r, rollout_result *x)
{
    if (r->ndone == r->done_cap) {
        int cap = r->done_cap ? 2 * r->done_cap : 16;
        rollout_result **d = xmalloc(cap * sizeof *d);
        for (int i = 0; i < r->ndone; i++) d[i] = r->done[(r->done_head + i) % r->done_cap];
        free(r->done);
        r->done = d;
        r->done_cap = cap;
        r->done_head = 0;
    }
    r->done[(r->done_head + r->ndone++) % r->done_cap] = x;
}

static json_t *make_meta(rollout *r, conv *c, rollout_result *x)
{
    const json_t *hsa = json_object_get(c->task, "hsa"), *intent = json_object_get(c->task, "intent");
    const json_t *rec = sim_record(c->s);
    json_t *meta = json_object();
    json_object_set_new(meta, "hsa", hsa ? json_deep_copy(hsa) : json_array());
    json_object_set_new(meta, "seed", json_integer((json_int_t)c->seed));
    json_object_set_new(meta, "stream", json_integer((json_int_t)c->stream));
    if (r->name) json_object_set_new(meta, "model", json_string(r->name));
    if (intent) json_object_set(meta, "intent", (json_t *)intent);
    json_object_set_new(meta, "turns", json_integer(x->turns));
    json_object_set_new(meta, "finish", json_string(rollout_finish_names[x->finish]));
    json_object_set_new(meta, "accepted", json_boolean(x->accepted));
    json_object_set(meta, "tool_calls", json_object_get(rec, "tool_calls"));
    json_object_set_new(meta, "malformed", json_integer(x->malformed));
    json_object_set_new(meta, "gen_tokens", json_integer(x->gen_tokens));
    if (x->error) json_object_set_new(meta, "error", json_string(x->error));
    return meta;
}

/* Move a conversation into the done queue (judged when a judge is set)
 * and free its slot. */
static void finish(rollout *r, conv *c, int how, char *error)
{
    rollout_result *x = xcalloc(1, sizeof *x);
    x->user = c->user;
    x->finish = how;
    x->error = error;
    x->accepted = how == ROLLOUT_ACCEPTED;
    x->turns = c->turns;
    x->malformed = c->malformed;
    x->gen_tokens = c->gen_tokens;
    x->meta = make_meta(r, c, x);
    x->task = c->task; c->task = NULL;
    x->harness = c->h; c->h = NULL;
    x->messages = c->msgs; c->msgs = NULL;
    rollout_tokens *t = &x->tok;
    t->n = (int)c->ids.n;
    t->n_prompt = c->n_prompt;
    t->ids = c->ids.v; c->ids.v = NULL;
    t->mask = c->mask.v; c->mask.v = NULL;
    t->logprobs = c->lp; c->lp = NULL;
    t->n_turns = (int)c->turn_off.n;
    t->turn_off = c->turn_off.v; c->turn_off.v = NULL;
    t->turn_len = c->turn_len.v; c->turn_len.v = NULL;
    if (r->j && how != ROLLOUT_ERROR) {
        /* The judge caches its harness by address: keep the one it last
         * saw alive, so no later harness can reuse that address. */
        if (r->judged_h != x->harness) {
            json_decref(r->judged_h);
            r->judged_h = json_incref(x->harness);
        }
        x->judged = judge_score(r->j, x->task, x->harness, x->messages, &x->verdict) == 0;
        if (!x->judged) judge_verdict_clear(&x->verdict);
    }
    conv_clear(c);
    r->st.conversations++;
    push_done(r, x);
}

int rollout_cancel(rollout *r, const void *user)
{
    for (int i = 0; i < r->max_convs; i++) {
        conv *c = &r->c[i];
        if (c->state == C_FREE || c->user != user) continue;
        if (c->in_engine && r->e) gen_remove(r->e, c->slot);
        finish(r, c, ROLLOUT_ERROR, xstrdup("cancelled"));
        return 0;
    }
    return -1;
}

rollout_result *rollout_take(rollout *r)
{
    if (!r->ndone) return NULL;
    rollout_result *x = r->done[r->done_head];
    r->done_head = (r->done_head + 1) % r->done_cap;
    r->ndone--;
    return x;
}

void rollout_result_free(rollout_result *x)
{
    if (!x) return;
    json_decref(x->task); json_decref(x->harness); json_decref(x->messages); json_decref(x->meta);
    free(x->error);
    free(x->tok.ids); free(x->tok.mask); free(x->tok.logprobs);
    free(x->tok.turn_off); free(x->tok.turn_len);
    if (x->judged) judge_verdict_clear(&x->verdict);
    free(x);
}

/* ---- one turn -------------------------------------------------------------------------- */

/* After a turn: finish, or extend the context for the next one. */
static void next_turn(rollout *r, conv *c, int done)
{
    char *err = NULL;
    if (done) { finish(r, c, ROLLOUT_ACCEPTED, NULL); return; }
    if (c->turns >= c->max_turns) { finish(r, c, ROLLOUT_MAX_TURNS_HIT, NULL); return; }
    if (c->p.max_gen_tokens > 0 && c->gen_tokens >= c->p.max_gen_tokens) {
        finish(r, c, ROLLOUT_BUDGET, NULL);
        return;
    }
    if (extend_context(r, c, &err)) { finish(r, c, ROLLOUT_ERROR, err); return; }
    if (r->t && (int)c->ids.n + 1 >= r->max_len) { finish(r, c, ROLLOUT_CONTEXT, NULL); return; }
    c->state = C_READY;
}

/* A turn's sampled ids (stop token included, if any) and text. */
static void play_turn(rollout *r, conv *c, const int *ids, int n, const float *lp,
                      const char *text, size_t len)
{
    tok_ids_push(&c->turn_off, (int)c->ids.n);
    tok_ids_push(&c->turn_len, n);
    for (int i = 0; i < n; i++) push_tok(c, ids[i], 1, lp ? lp[i] : 0);
    if (r->t && (n == 0 || ids[n - 1] != r->im_end)) push_tok(c, r->im_end, 0, 0);
    c->gen_tokens += n;
    c->turns++;
    r->st.turns++;
    r->st.gen_tokens += n;
    char *perr = NULL;
    json_t *msg = chat_parse_output(text, len, &perr);
    int done = 0;
    if (perr) {
        json_object_set_new(msg, "parse_error", json_string(perr));
        json_array_append_new(c->msgs, msg);
        sim_turn(c->s);
        json_array_append_new(c->msgs, rollout_malformed_note(c->h, json_string_value(json_object_get(msg, "content")), perr));
        c->malformed++;
        free(perr);
    } else {
        json_t *next = sim_step(c->s, msg, &done);
        json_array_append_new(c->msgs, msg);
        json_array_extend(c->msgs, next);
        json_decref(next);
    }
    next_turn(r, c, done);
}

/* Ids to text (tok_decode_model: an id past the tokenizer reads as
 * U+FFFD).  The text may hold NUL bytes: len says how long it is. */
static void decode(const tokenizer *t, const int *ids, int n, sbuf *out)
{
    size_t len;
    char *s = tok_decode_model(t, ids, (size_t)n, 0, &len);
    sbuf_init(out);
    sbuf_add(out, s, len);
    free(s);
}

/* A model turn has ended: decode it (without the stop token) and play it.
 * The engine keeps the sequence (and its KV cache) for the next turn,
 * whose context only grows at the end: gen_extend then computes just the
 * new tokens. */
static void model_turn(rollout *r, conv *c)
{
    int n, slot = c->slot;
    const int *ids = gen_output(r->e, slot, &n);
    const float *lp = gen_logprobs(r->e, slot);
    int body = n;
    if (gen_status(r->e, slot) == GEN_STOP && n > 0) body--;
    sbuf text;
    decode(r->t, ids, body, &text);
    play_turn(r, c, ids, n, lp, text.s ? text.s : "", text.len);   /* may finish c and clear it */
    sbuf_free(&text);
    if (c->state == C_FREE) {
        gen_remove(r->e, slot);
        return;
    }
    c->slot = slot;
    c->in_engine = 1;
    gen_context(r->e, slot, &c->eng_n);
}

/* A scripted turn: the policy's text, encoded as if sampled. */
static void policy_turn(rollout *r, conv *c)
{
    char *text = r->policy(r->policy_ctx, c->h, c->msgs, c->user);
    if (!text) { finish(r, c, ROLLOUT_ERROR, xstrdup("the policy gave no turn")); return; }
    tok_ids ids = { 0 };
    if (r->t) {
        if (tok_encode(r->t, text, strlen(text), &ids)) {
            free(text);
            finish(r, c, ROLLOUT_ERROR, xstrdup("the policy's text is not valid UTF-8"));
            return;
        }
        tok_ids_push(&ids, r->im_end);
    }
    play_turn(r, c, ids.v, (int)ids.n, NULL, text, strlen(text));
    tok_ids_free(&ids);
    free(text);
}

/* Tokens of the first prompt the engine shares between conversations:
 * the system message (the harness's prompt and tools) through its
 * <|im_end|>, which every conversation under the same harness starts
 * with, token for token (a control token: the encoder splits there, so
 * what follows cannot change the ids before it).  0 when there is none. */
static int shared_len(const rollout *r, const conv *c)
{
    for (size_t i = 0; !r->no_share && i < c->ids.n; i++)
        if (c->ids.v[i] == r->im_end) return (int)i + 1;
    return 0;
}

/* Put a READY conversation's context into the engine. */
static void start_gen(rollout *r, conv *c, int ci)
{
    gen_params g = { .temperature = c->p.temperature, .top_k = c->p.top_k, .top_p = c->p.top_p,
                     .max_tokens = c->p.max_tokens, .eos = r->im_end,
                     .stop_ids = &r->eos, .n_stop = r->eos >= 0, .mtp_k = c->p.mtp_k };
    int room = r->max_len - 1 - (int)c->ids.n;
    if (g.max_tokens > room) g.max_tokens = room;
    if (c->p.max_gen_tokens > 0 && g.max_tokens > c->p.max_gen_tokens - c->gen_tokens)
        g.max_tokens = c->p.max_gen_tokens - c->gen_tokens;
    uint64_t stream = c->stream * 256 + (uint64_t)c->turns;
    int n = (int)c->ids.n;
    if (c->in_engine) {    /* the engine holds ids[0, eng_n): queue the rest */
        if (gen_extend(r->e, c->slot, c->ids.v + c->eng_n, n - c->eng_n, &g, c->seed, stream)) {
            gen_remove(r->e, c->slot);
            finish(r, c, ROLLOUT_ERROR, xasprintf("the engine refused conversation %d", ci));
            return;
        }
        r->st.prefill_tokens += n - c->eng_n;
    } else {
        c->slot = gen_add_shared(r->e, c->ids.v, n, shared_len(r, c), &g, c->seed, stream);
        if (c->slot < 0) {     /* cannot happen: one sequence per conversation, lengths checked */
            finish(r, c, ROLLOUT_ERROR, xasprintf("the engine refused conversation %d", ci));
            return;
        }
        c->in_engine = 1;
        r->st.prefill_tokens += n;
    }
    c->state = C_GEN;
}

int rollout_add(rollout *r, const json_t *task, const json_t *harness, uint64_t seed,
                uint64_t stream, const rollout_params *p, void *user, char **err)
{
    *err = NULL;
    if (!r->m && !r->policy) { *err = xstrdup("neither a model nor a policy"); return -1; }
    conv *c = NULL;
    for (int i = 0; i < r->max_convs && !c; i++)
        if (r->c[i].state == C_FREE) c = &r->c[i];
    if (!c) return -1;
    if (!json_is_object(harness)) { *err = xstrdup("no harness"); return -1; }
    if (sim_set_harness(c->s, harness, err)) return -1;
    c->task = json_incref((json_t *)task);
    c->h = json_incref((json_t *)harness);
    c->user = user;
    c->seed = seed;
    c->stream = stream;
    c->p = *p;
    double mt;
    c->max_turns = p->max_turns > 0 ? p->max_turns
                 : !harness_param(harness, "max_turns", &mt) && mt >= 1 ? (int)mt : ROLLOUT_DEFAULT_TURNS;
    if (c->max_turns > ROLLOUT_MAX_TURNS) c->max_turns = ROLLOUT_MAX_TURNS;
    c->msgs = json_array();
    json_array_append_new(c->msgs, sim_begin(c->s, c->task));
    if (extend_context(r, c, err)) { conv_clear(c); return -1; }
    c->n_prompt = (int)c->ids.n;
    c->state = C_READY;
    if (r->t && (int)c->ids.n + 1 >= r->max_len) finish(r, c, ROLLOUT_CONTEXT, NULL);
    return 0;
}

int rollout_step(rollout *r)
{
    int gen = 0;
    for (int i = 0; i < r->max_convs; i++) {
        conv *c = &r->c[i];
        if (c->state != C_READY) continue;
        if (r->policy) policy_turn(r, c);
        else start_gen(r, c, i);
    }
    for (int i = 0; i < r->max_convs; i++) gen += r->c[i].state == C_GEN;
    if (!gen) return rollout_running(r);
    gen_step(r->e);
    for (int i = 0; i < r->max_convs; i++) {
        conv *c = &r->c[i];
        if (c->state == C_GEN && gen_status(r->e, c->slot) != GEN_RUNNING) model_turn(r, c);
    }
    return rollout_running(r);
}

/* ---- output ------------------------------------------------------------------------------ */

static json_t *int_array(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

json_t *rollout_result_json(const rollout_result *x, const char *id, int tokens)
{
    const json_t *tid = json_object_get(x->task, "id");
    json_t *o = json_object();
    if (id) json_object_set_new(o, "id", json_string(id));
    else json_object_set_new(o, "id", json_sprintf("%s.r", json_string_value(tid) ? json_string_value(tid) : ""));
    json_object_set(o, "task_id", tid ? (json_t *)tid : json_null());
    json_object_set(o, "harness", x->harness);
    json_object_set(o, "messages", x->messages);
    json_object_set(o, "meta", x->meta);
    if (x->judged) {
        json_t *s = json_object();
        for (int i = 0; i < JUDGE_NCOMP; i++)
            json_object_set_new(s, judge_comp_names[i], json_real(x->verdict.score[i]));
        json_object_set_new(o, "verdict", json_pack("{s:o,s:f,s:b,s:O}", "scores", s, "total",
                            x->verdict.total, "pass", x->verdict.pass, "reasons", x->verdict.reasons));
    }
    if (tokens) {
        json_t *lp = json_array();
        /* %.9g keeps every bit of a float and nothing more */
        for (int i = 0; i < x->tok.n; i++) {
            char b[32];
            snprintf(b, sizeof b, "%.9g", x->tok.logprobs[i]);
            json_array_append_new(lp, json_real(strtod(b, NULL)));
        }
        json_object_set_new(o, "tokens", json_pack("{s:o,s:o,s:o}", "ids", int_array(x->tok.ids, x->tok.n),
                            "mask", int_array(x->tok.mask, x->tok.n), "logprobs", lp));
    }
    return o;
}
