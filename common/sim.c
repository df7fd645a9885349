/* sim.c — the live-stream simulator (see sim.h): tool execution by
 * function, schema validation, fault injection, hooks, and the record the
 * judge reads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* strcasestr, memmem */
#endif
#define PCRE2_CODE_UNIT_WIDTH 8
#include "sim.h"
#include "harness.h"
#include "harness_compile.h"
#include "judge_lexicon.h"
#include "jsonl.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define SIM_MAX_PATTERNS 32
#define SIM_MAX_SKILLS 64

/* Fault texts as an upstream service would say them. */
static const struct { const char *type, *message; } fault_text[] = {
    { "timeout",           "upstream service timed out" },
    { "server_error",      "internal server error" },
    { "permission_denied", "permission denied for this request" },
    { "empty",             "the service returned no data" },
    { "malformed",         "upstream returned a malformed response" },
};

/* One world answer as the policy sees it: the world is read-only and the
 * envelope and error format belong to the harness, so under one harness
 * the same tool name, function and arguments always give the same text.
 * Cached per harness (a trajectory file asks about the same products over
 * and over), with what sim_tool_call derives from it. */
typedef struct {
    char       *key;              /* NAME \0 FUNCTION \0 compact args; NULL = empty slot */
    size_t      klen;
    uint64_t    hash;
    int         ok;               /* world_call answered 1 */
    json_t     *result;           /* the result object (ok) */
    json_t     *text;             /* the tool message content, a string */
    char       *error;            /* the world's message (not ok) */
    double     *num;              /* numbers(text) */
    size_t      nnum;
} answer;

#define SIM_ANSWERS 32768         /* slots; the table is emptied when half full */

/* A fault's text as the policy sees it: like a world answer, fixed under
 * one harness for a tool name and fault type. */
typedef struct {
    char       *name, *type;
    json_t     *text;             /* the string (NULL where the text is not UTF-8) */
    double     *num;              /* numbers(text) */
    size_t      nnum;
} fault_answer;

#define SIM_FAULT_TEXTS 64        /* emptied when full */

struct sim {
    const world  *w;
    /* the compiled harness in use, its JSON (borrowed from hc), and the
     * last content-equal harness object seen (a reference, so that its
     * address is not reused while it stands for hc) */
    harness_compiled *hc;
    const json_t *h, *alias;
    /* harness caches */
    const char   *loader, *loader_arg;
    const harness_limits *lim;
    const json_t *retry_on, *banned;
    pcre2_code   *pat[SIM_MAX_PATTERNS];
    int           npat;
    pcre2_match_data *md;
    const json_t *skill_key[SIM_MAX_SKILLS];
    json_t       *skill_text[SIM_MAX_SKILLS];   /* strings, shared by the messages */
    int           nskill_cache;
    answer       *answers;        /* world answers under h, by call (see lookup) */
    size_t       *used;           /* the slots in use, nanswers of them */
    size_t        nanswers;
    fault_answer  fault_texts[SIM_FAULT_TEXTS];
    int           nfault_texts;
    sbuf          key;
    /* conversation */
    const task_view *task;        /* the task's view (sim_begin_view) */
    task_arena   *arena;          /* the view sim_begin makes of a JSON task */
    json_t       *rec, *calls, *skills, *faults, *events, *replies, *evidence;
    long         *attempts;       /* per task fault */
    size_t        nfaults;
    char         *viewer_text;
    int           turns, tool_calls, reply_loaded;
    json_t       *last_result;    /* result of the last successful tool call */
    double       *evnum;          /* numbers of the evidence and viewer text */
    size_t        nev, cev;
};

static void numbers(const char *text, int skip_at, double **v, size_t *n, size_t *cap);
static int fault_recoverable(const json_t *h, const char *type, long times);

/* ---- harness caches ------------------------------------------------------ */

static void clear_answers(sim *s)
{
    /* Only the slots in use: a file whose every line brings another
     * harness clears the table per line. */
    for (size_t k = 0; k < s->nanswers; k++) {
        answer *a = &s->answers[s->used[k]];
        free(a->key);
        json_decref(a->result);
        json_decref(a->text);
        free(a->error);
        free(a->num);
        memset(a, 0, sizeof *a);
    }
    s->nanswers = 0;
}

static void clear_fault_texts(sim *s)
{
    for (int i = 0; i < s->nfault_texts; i++) {
        fault_answer *f = &s->fault_texts[i];
        free(f->name);
        free(f->type);
        json_decref(f->text);
        free(f->num);
    }
    s->nfault_texts = 0;
}

const json_t *sim_tool_by_name(const sim *s, const char *name) { return harness_compiled_tool(s->hc, name); }
const json_t *sim_tool_by_function(const sim *s, const char *fn) { return harness_compiled_tool_for(s->hc, fn); }
const json_t *sim_skill_by_name(const sim *s, const char *name) { return harness_compiled_skill(s->hc, name); }
const json_t *sim_skill_by_function(const sim *s, const char *fn) { return harness_compiled_skill_for(s->hc, fn); }
const harness_compiled *sim_compiled(const sim *s) { return s->hc; }

static void clear_harness(sim *s)
{
    clear_answers(s);
    clear_fault_texts(s);
    for (int i = 0; i < s->npat; i++) pcre2_code_free(s->pat[i]);
    s->npat = 0;
    for (int i = 0; i < s->nskill_cache; i++) json_decref(s->skill_text[i]);
    s->nskill_cache = 0;
    harness_compiled_free(s->hc);
    s->hc = NULL;
    s->h = NULL;
    json_decref((json_t *)s->alias);
    s->alias = NULL;
}

static const json_t *hook(const sim *s, const char *name)
{
    return json_object_get(json_object_get(s->h, "hooks"), name);
}

int sim_set_harness(sim *s, const json_t *h, char **err)
{
    if (err) *err = NULL;
    if (h && (h == s->h || h == s->alias)) return 0;
    char *e = NULL;
    harness_compiled *c = harness_compile(h, NULL, &e);
    if (!c) {
        clear_harness(s);
        if (err) *err = e;
        else free(e);
        return -1;
    }
    if (harness_compiled_same(c, s->hc)) {
        /* The same content: keep the view and every cache built on it. */
        harness_compiled_free(c);
        json_decref((json_t *)s->alias);
        s->alias = json_incref((json_t *)h);
        return 0;
    }
    clear_harness(s);
    s->hc = c;
    s->h = harness_compiled_json(c);
    s->loader = harness_compiled_loader(c);
    s->loader_arg = harness_compiled_loader_arg(c);
    s->lim = harness_compiled_limits(c);
    s->retry_on = harness_compiled_retry_on(c);
    s->banned = harness_compiled_banned(c);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(hook(s, "input_check"), "patterns"), i, p) {
        if (s->npat == SIM_MAX_PATTERNS || !json_is_string(p)) continue;
        int ec;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)json_string_value(p), PCRE2_ZERO_TERMINATED,
                                       PCRE2_CASELESS | PCRE2_UTF, &ec, &off, NULL);
        if (!re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(ec, msg, sizeof msg);
            if (err) *err = xasprintf("input_check pattern %zu: %s at offset %zu", i, (char *)msg, (size_t)off);
            clear_harness(s);
            return -1;
        }
        /* JIT: a viewer text is matched against every pattern once per
         * conversation; the interpreter was ~7k instructions a message. */
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        s->pat[s->npat++] = re;
    }
    return 0;
}

const json_t *sim_harness(const sim *s) { return s->h; }
const world  *sim_world(const sim *s) { return s->w; }

/* The loader's response for a skill, rendered once per harness (a new
 * reference to a string). */
static json_t *skill_text(sim *s, const json_t *skill)
{
    for (int i = 0; i < s->nskill_cache; i++)
        if (s->skill_key[i] == skill) return json_incref(s->skill_text[i]);
    char *t = harness_skill_text(s->h, skill);
    json_t *v = json_str(t);
    free(t);
    if (v && s->nskill_cache < SIM_MAX_SKILLS) {
        s->skill_key[s->nskill_cache] = skill;
        s->skill_text[s->nskill_cache++] = json_incref(v);
    }
    return v;
}

/* ---- lifetime -------------------------------------------------------------- */

sim *sim_new(const world *w)
{
    sim *s = xcalloc(1, sizeof *s);
    s->w = w;
    s->md = pcre2_match_data_create(4, NULL);
    return s;
}

static void end_conversation(sim *s)
{
    json_decref(s->last_result);
    s->last_result = NULL;
    json_decref(s->rec);
    s->rec = NULL;
    free(s->attempts);
    s->attempts = NULL;
    free(s->viewer_text);
    s->viewer_text = NULL;
}

void sim_free(sim *s)
{
    if (!s) return;
    end_conversation(s);
    clear_harness(s);
    free(s->answers);
    free(s->used);
    sbuf_free(&s->key);
    pcre2_match_data_free(s->md);
    free(s->evnum);
    task_arena_free(s->arena);
    free(s);
}

const json_t *sim_record(const sim *s) { return s->rec; }

static void event(sim *s, const char *hookname, const char *k1, json_t *v1)
{
    json_t *e = json_object();
    json_object_set_new_nocheck(e, "hook", json_str(hookname));
    if (k1) json_object_set_new(e, k1, v1);
    json_array_append_new(s->events, e);
}

/* ---- the viewer message ------------------------------------------------ */

/* The record's fault entry for task fault f. */
static json_t *fault_record(const sim *s, const json_t *call, const json_t *type, const json_t *times,
                            const char *typestr, long ntimes)
{
    int retryable = 0;
    size_t j;
    json_t *t;
    json_array_foreach(s->retry_on, j, t) retryable |= typestr && json_is_string(t) && !strcmp(json_string_value(t), typestr);
    return json_pack("{s:O,s:O,s:O,s:b,s:b,s:i,s:i}", "call", call, "type", type, "times", times,
                     "retryable", retryable, "recoverable", fault_recoverable(s->h, typestr, ntimes),
                     "attempts", 0, "failed", 0);
}

/* A new record for task t, its "task_id" id (a new reference; NULL for
 * none): the faults are filled by the caller. */
static void begin_record(sim *s, const task_view *t, json_t *id)
{
    end_conversation(s);
    s->task = t;
    s->turns = s->tool_calls = s->reply_loaded = 0;
    s->calls = json_array();
    s->skills = json_array();
    s->faults = json_array();
    s->events = json_array();
    s->replies = json_array();
    s->evidence = json_array();
    s->rec = json_object();
    if (id) json_object_set_new_nocheck(s->rec, "task_id", id);
    json_object_set_new_nocheck(s->rec, "turns", json_integer(0));
    json_object_set_new_nocheck(s->rec, "tool_calls", json_integer(0));
    json_object_set_new_nocheck(s->rec, "accepted", json_false());
    json_object_set_new_nocheck(s->rec, "reply", json_null());
    json_object_set_new_nocheck(s->rec, "calls", s->calls);
    json_object_set_new_nocheck(s->rec, "skills", s->skills);
    json_object_set_new_nocheck(s->rec, "faults", s->faults);
    json_object_set_new_nocheck(s->rec, "events", s->events);
    json_object_set_new_nocheck(s->rec, "replies", s->replies);
    json_object_set_new_nocheck(s->rec, "evidence", s->evidence);
    s->nfaults = t->nfaults;
    s->attempts = xcalloc(s->nfaults + 1, sizeof *s->attempts);
}

static json_t *viewer_message(sim *s, const char *nick, const char *text);

json_t *sim_begin(sim *s, const json_t *task)
{
    /* The view borrows from task, which the caller keeps while the
     * conversation runs; the record takes the task's own values (any
     * JSON, as given). */
    if (!s->arena) s->arena = task_arena_new();
    task_arena_reset(s->arena);
    const task_view *t = task_view_make(s->arena, task, TASK_VIEW_BORROW, NULL, 0);
    begin_record(s, t, json_incref(json_object_get(task, "id")));
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(task, "faults"), i, f)
        json_array_append_new(s->faults, fault_record(s, json_object_get(f, "call"), json_object_get(f, "type"),
                                                      json_object_get(f, "times"), t->faults[i].type, t->faults[i].times));
    return viewer_message(s, t->nick, t->text);
}

json_t *sim_begin_view(sim *s, const task_view *t)
{
    begin_record(s, t, t->id ? json_stringn_nocheck(t->id, t->id_len) : NULL);
    for (size_t i = 0; i < t->nfaults; i++) {
        const task_view_fault *f = &t->faults[i];
        json_t *call = json_integer(f->call), *type = f->type ? json_str(f->type) : NULL, *times = json_integer(f->times);
        json_array_append_new(s->faults, fault_record(s, call, type, times, f->type, f->times));
        json_decref(call);
        json_decref(type);
        json_decref(times);
    }
    return viewer_message(s, t->nick, t->text);
}

/* {"role":"user","content":"NICK: TEXT"}, flagged by input_check. */
static json_t *viewer_message(sim *s, const char *nick, const char *text)
{
    s->viewer_text = xstrdup(text ? text : "");
    s->nev = 0;
    numbers(s->viewer_text, 0, &s->evnum, &s->nev, &s->cev);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, nick ? nick : "viewer");
    sbuf_add(&b, ": ", 2);
    sbuf_puts(&b, s->viewer_text);
    int flagged = 0;
    for (int k = 0; k < s->npat && !flagged; k++) {
        int rc = pcre2_match(s->pat[k], (PCRE2_SPTR)s->viewer_text, PCRE2_ZERO_TERMINATED, 0, 0, s->md, NULL);
        /* A JIT error (its stack or match limit) is not the interpreter's
         * answer: ask the interpreter, as before JIT. */
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
            rc = pcre2_match(s->pat[k], (PCRE2_SPTR)s->viewer_text, PCRE2_ZERO_TERMINATED, 0, PCRE2_NO_JIT, s->md, NULL);
        flagged = rc >= 0;
    }
    if (flagged) {
        const char *note = json_string_value(json_object_get(hook(s, "input_check"), "message"));
        if (note) sbuf_printf(&b, "\n\n%s", note);
        event(s, "input_check", NULL, NULL);
    }
    json_t *m = json_object();
    json_object_set_new_nocheck(m, "role", json_string_nocheck("user"));
    json_object_set_new_nocheck(m, "content", json_str(b.s));
    if (flagged) json_object_set_new_nocheck(m, "hook", json_str("input_check"));
    sbuf_free(&b);
    return m;
}

void sim_turn(sim *s)
{
    s->turns++;
    json_object_set_new_nocheck(s->rec, "turns", json_integer(s->turns));
}

/* ---- argument validation ------------------------------------------------ */

static const char *type_word(const char *t)
{
    if (!strcmp(t, "integer")) return "an integer";
    if (!strcmp(t, "number")) return "a number";
    if (!strcmp(t, "boolean")) return "a boolean";
    if (!strcmp(t, "array")) return "an array";
    if (!strcmp(t, "object")) return "an object";
    return "a string";
}

static int type_ok(const char *t, const json_t *v)
{
    if (!t) return 1;
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "integer"))
        return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "array")) return json_is_array(v);
    if (!strcmp(t, "object")) return json_is_object(v);
    return 1;
}

/* NULL when args fit the schema, else the error (malloc'd). */
static char *validate(const harness_tool *tool, const json_t *args)
{
    if (!json_is_object(args)) return xstrdup("arguments must be a JSON object");
    size_t i;
    json_t *r;
    json_array_foreach(tool->required, i, r)
        if (json_is_string(r) && !json_object_get(args, json_string_value(r)))
            return xasprintf("missing required argument '%s'", json_string_value(r));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        const harness_prop *p = harness_tool_prop(tool, k);
        if (!p) return xasprintf("unknown argument '%s'", k);
        if (!type_ok(p->type, v)) return xasprintf("argument '%s' must be %s", k, type_word(p->type));
        const json_t *mn = p->minimum, *mx = p->maximum;
        if (json_is_number(v) && json_is_number(mn) && json_number_value(v) < json_number_value(mn))
            return xasprintf("argument '%s' must be at least %g", k, json_number_value(mn));
        if (json_is_number(v) && json_is_number(mx) && json_number_value(v) > json_number_value(mx))
            return xasprintf("argument '%s' must be at most %g", k, json_number_value(mx));
        if (json_is_array(p->allowed)) {
            int found = 0;
            size_t j;
            json_t *e;
            json_array_foreach(p->allowed, j, e) found |= json_equal(e, v);
            if (!found) return xasprintf("argument '%s' is not one of the allowed values", k);
        }
    }
    return NULL;
}

/* Arguments keyed by x-function (the names the world understands). */
static json_t *by_function(const harness_tool *tool, const json_t *args)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        const harness_prop *p = harness_tool_prop(tool, k);
        const char *x = p ? p->x_function : NULL;
        json_object_set(out, x ? x : k, v);
    }
    return out;
}

/* ---- faults ---------------------------------------------------------------- */

int sim_fault_recoverable(const json_t *h, const json_t *fault)
{
    return fault_recoverable(h, json_string_value(json_object_get(fault, "type")),
                             (long)json_integer_value(json_object_get(fault, "times")));
}

static int fault_recoverable(const json_t *h, const char *type, long times)
{
    const json_t *tr = json_object_get(json_object_get(h, "hooks"), "tool_retry");
    long maxr = (long)json_integer_value(json_object_get(tr, "max_retries"));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(tr, "retry_on"), i, t)
        if (type && json_is_string(t) && !strcmp(json_string_value(t), type)) return times <= maxr;
    return 0;
}

/* The value of key in a gold call's arguments, or NULL. */
static const task_view_arg *gold_arg(const task_view_call *c, const char *key)
{
    for (size_t i = 0; i < c->nargs; i++) if (!strcmp(c->args[i].key, key)) return &c->args[i];
    return NULL;
}

/* Whether gold argument a (present) names the same entity as the call's
 * value b: the product by the world's lookup, other strings without
 * case, anything else by json_equal. */
static int same_entity(const world *w, const char *key, const task_view_arg *a, const json_t *b)
{
    if (!b) return 0;
    if (!strcmp(key, "product")) {
        const json_t *pa = world_find_product(w, a->str);
        return pa && pa == world_find_product(w, json_string_value(b));
    }
    if (a->str) return json_is_string(b) && !strcasecmp(a->str, json_string_value(b));
    return json_equal(a->v, b);
}

/* The product a call's arguments name, resolved at most once per
 * gold_index (the world is read-only). */
typedef struct { const json_t *p; int done; } resolved;

static const json_t *args_product(const world *w, const json_t *args, resolved *r)
{
    if (!r->done) {
        r->p = world_find_product(w, json_string_value(json_object_get(args, "product")));
        r->done = 1;
    }
    return r->p;
}

/* Index of the gold call this call stands for, or -1: the gold call with
 * the same function and the same arguments (entities resolved through the
 * world), else the first with the same function and the same product or
 * order. */
static long gold_index(const sim *s, const char *function, const json_t *args)
{
    long loose = -1;
    resolved ap_res = { NULL, 0 };
    for (size_t i = 0; s->task && i < s->task->ncalls; i++) {
        const task_view_call *c = &s->task->calls[i];
        if (!c->function || strcmp(c->function, function)) continue;
        int ok = 1;
        static const char *keys[] = { "product", "order_id" };
        const task_view_arg *gp = gold_arg(c, keys[0]), *go = gold_arg(c, keys[1]);
        const json_t *ap = json_object_get(args, keys[0]);
        if (gp) {       /* same_entity for the product, the call's side resolved once */
            const json_t *pg = ap ? world_find_product(s->w, gp->str) : NULL;
            ok = pg && pg == args_product(s->w, args, &ap_res);
        }
        if (ok && go) ok = same_entity(s->w, keys[1], go, json_object_get(args, keys[1]));
        if (!ok) continue;
        int exact = c->nargs == json_object_size(args);
        for (size_t k = 0; k < c->nargs && exact; k++) {
            /* product and order_id were found equal above; the checks
             * have no side effects, so the first difference decides. */
            const task_view_arg *v = &c->args[k];
            if (!strcmp(v->key, keys[0]) || !strcmp(v->key, keys[1])) continue;
            const json_t *a = json_object_get(args, v->key);
            if (!strcmp(v->key, "variant") && a) {
                const json_t *p = args_product(s->w, args, &ap_res);
                exact &= p && world_variant(p, json_string_value(a)) == world_variant(p, v->str);
            } else exact &= same_entity(s->w, v->key, v, a);
        }
        if (exact) return (long)i;
        if (loose < 0) loose = (long)i;
    }
    return loose;
}

/* The fault this call hits (its type), or NULL.  Counts the attempt. */
static const char *inject(sim *s, long gold, json_t *callrec)
{
    for (size_t i = 0; i < s->nfaults; i++) {
        const task_view_fault *f = &s->task->faults[i];
        if (f->call != gold) continue;
        json_t *fr = json_array_get(s->faults, i);
        long a = ++s->attempts[i];
        json_object_set_new_nocheck(fr, "attempts", json_integer(a));
        json_object_set_new_nocheck(callrec, "attempt", json_integer(a));
        const char *type = f->type;
        long times = f->times;
        int retryable = json_is_true(json_object_get(fr, "retryable"));
        int fail;
        if (retryable) {
            /* Unresolved within the allowed retries: it stays failed. */
            int unresolved = times > s->lim->max_retries;
            fail = a <= times || unresolved;
            if (unresolved && a > s->lim->max_retries + 1) event(s, "tool_retry", "detail", json_str("retry_limit"));
        } else {
            fail = 1;
            if (a > 1) event(s, "tool_retry", "detail", json_str("retry_not_allowed"));
        }
        if (fail) {
            json_object_set_new_nocheck(fr, "failed", json_integer(json_integer_value(json_object_get(fr, "failed")) + 1));
            return type ? type : "server_error";
        }
        return NULL;
    }
    return NULL;
}

static const char *fault_message(const char *type)
{
    for (size_t i = 0; i < sizeof fault_text / sizeof fault_text[0]; i++)
        if (!strcmp(fault_text[i].type, type)) return fault_text[i].message;
    return "the request failed";
}

/* The text of a fault of type on tool name under the current harness:
 * from the cache, or formatted and remembered.  Borrowed; valid until the
 * harness changes or the next call. */
static const fault_answer *fault_answer_of(sim *s, const char *name, const char *type)
{
    for (int i = 0; i < s->nfault_texts; i++) {
        const fault_answer *f = &s->fault_texts[i];
        if (!strcmp(f->name, name) && !strcmp(f->type, type)) return f;
    }
    if (s->nfault_texts == SIM_FAULT_TEXTS) clear_fault_texts(s);
    fault_answer *f = &s->fault_texts[s->nfault_texts++];
    char *e = harness_format_error(s->h, name, type, fault_message(type));
    char *text = harness_wrap_error(s->h, e);
    free(e);
    size_t cap = 0;
    f->name = xstrdup(name);
    f->type = xstrdup(type);
    f->text = json_str(text);
    f->num = NULL;
    f->nnum = 0;
    numbers(text, 0, &f->num, &f->nnum, &cap);
    free(text);
    return f;
}

/* Appends n numbers to the evidence numbers. */
static void add_evidence_numbers(sim *s, const double *num, size_t n)
{
    if (s->nev + n > s->cev) {
        while (s->nev + n > s->cev) s->cev = s->cev ? s->cev * 2 : 16;
        s->evnum = xrealloc(s->evnum, s->cev * sizeof *s->evnum);
    }
    if (n) memcpy(s->evnum + s->nev, num, n * sizeof *num);
    s->nev += n;
}

/* ---- tool calls -------------------------------------------------------------- */

/* {"role":"tool","name":NAME,"content":CONTENT,"hook"?:HOOK}, content a
 * string value taken as a reference (a cached text is shared, never copied;
 * nothing changes a string in place).  NULL like json_pack's when name is
 * not UTF-8. */
static json_t *tool_msg_json(const char *name, json_t *content, const char *hookname)
{
    json_t *n = name ? json_str(name) : NULL;
    if (!n || !content) { json_decref(n); json_decref(content); return NULL; }
    json_t *m = json_object();
    json_object_set_new_nocheck(m, "role", json_string_nocheck("tool"));
    json_object_set_new_nocheck(m, "name", n);
    json_object_set_new_nocheck(m, "content", content);
    if (hookname) json_object_set_new_nocheck(m, "hook", json_str(hookname));
    return m;
}

/* A tool message in parts, before (or instead of) its object: the name
 * it carries, the content string (a reference; NULL when the text was
 * not UTF-8) and the hook. */
typedef struct {
    const char *name;
    json_t     *content;
    const char *hook;
} tool_reply;

static void tool_parts(tool_reply *r, const char *name, json_t *content, const char *hookname)
{
    r->name = name;
    r->content = content;
    r->hook = hookname;
}

static void tool_text(tool_reply *r, const char *name, const char *content, const char *hookname)
{
    tool_parts(r, name, content ? json_str(content) : NULL, hookname);
}

static void refuse(sim *s, const char *name, const char *error, json_t *callrec, const char *outcome, tool_reply *r)
{
    json_t *vars = json_pack("{s:s,s:s}", "tool", name, "error", error);
    char *text = harness_hook_message(s->h, "tool_args_check", "message", vars);
    json_decref(vars);
    if (!text) text = xasprintf("Invalid arguments for %s: %s", name, error);
    json_object_set_new_nocheck(callrec, "outcome", json_str(outcome));
    json_object_set_new_nocheck(callrec, "error", json_str(error));
    event(s, "tool_args_check", "error", json_str(error));
    tool_text(r, name, text, "tool_args_check");
    free(text);
}

static void load_skill(sim *s, const json_t *args, json_t *callrec, tool_reply *r)
{
    const char *name = s->loader;
    if (!json_is_object(args) || json_object_size(args) != 1 || !json_is_string(json_object_get(args, s->loader_arg))) {
        char *e = !json_is_object(args) ? xstrdup("arguments must be a JSON object")
                  : !json_object_get(args, s->loader_arg) ? xasprintf("missing required argument '%s'", s->loader_arg)
                  : !json_is_string(json_object_get(args, s->loader_arg)) ? xasprintf("argument '%s' must be a string", s->loader_arg)
                  : xstrdup("only one argument is allowed");
        refuse(s, name, e, callrec, "invalid", r);
        free(e);
        return;
    }
    const char *want = json_string_value(json_object_get(args, s->loader_arg));
    const json_t *sk = sim_skill_by_name(s, want);
    json_object_set_new_nocheck(callrec, "skill", json_str(want));
    if (!sk) {
        char *msg = xasprintf("no skill named '%s'", want);
        char *text = harness_format_error(s->h, name, "empty", msg);
        json_object_set_new_nocheck(callrec, "outcome", json_str("unknown_skill"));
        event(s, "skill_loader", "error", json_str(msg));
        tool_text(r, name, text, NULL);
        free(msg);
        free(text);
        return;
    }
    const char *fn = json_string_value(json_object_get(sk, "function"));
    const char *kind = json_string_value(json_object_get(sk, "kind"));
    json_object_set_new_nocheck(callrec, "outcome", json_str("skill"));
    json_object_set_new_nocheck(callrec, "function", json_str(fn ? fn : ""));
    json_array_append_new(s->skills, json_str(fn ? fn : ""));
    if (kind && !strcmp(kind, "reply")) s->reply_loaded = 1;
    tool_parts(r, name, skill_text(s, sk), NULL);
}

const json_t *sim_last_result(const sim *s) { return s->last_result; }

/* Appends an unambiguous encoding of v (a cache key, not JSON): a type
 * letter, then for strings the length and bytes, for numbers their 8
 * bytes, for an object each key (length, bytes) and value in order. */
static void key_value(sbuf *b, const json_t *v)
{
    char tag;
    uint64_t w;
    switch (json_typeof(v)) {
    case JSON_STRING:
        w = json_string_length(v);
        sbuf_putc(b, 's');
        sbuf_add(b, (const char *)&w, 8);
        sbuf_add(b, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER: {
        json_int_t i = json_integer_value(v);
        sbuf_putc(b, 'i');
        sbuf_add(b, (const char *)&i, 8);
        return;
    }
    case JSON_REAL: {
        double d = json_real_value(v);
        sbuf_putc(b, 'r');
        sbuf_add(b, (const char *)&d, 8);
        return;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        w = json_object_size(v);
        sbuf_putc(b, 'o');
        sbuf_add(b, (const char *)&w, 8);
        json_object_foreach((json_t *)v, k, x) {
            w = strlen(k);
            sbuf_add(b, (const char *)&w, 8);
            sbuf_add(b, k, w);
            key_value(b, x);
        }
        return;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        w = json_array_size(v);
        sbuf_putc(b, 'a');
        sbuf_add(b, (const char *)&w, 8);
        json_array_foreach(v, i, x) key_value(b, x);
        return;
    }
    case JSON_TRUE: tag = 't'; break;
    case JSON_FALSE: tag = 'f'; break;
    default: tag = 'n'; break;
    }
    sbuf_putc(b, tag);
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;          /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

/* What the world says to tool name (function fn) with args (keyed by
 * x-function), wrapped for the current harness: from the cache, or asked
 * and remembered.  Borrowed; valid until the harness changes. */
static const answer *world_answer(sim *s, const char *name, const char *fn, const json_t *args)
{
    sbuf_reset(&s->key);
    sbuf_add(&s->key, name, strlen(name) + 1);
    sbuf_add(&s->key, fn ? fn : "", strlen(fn ? fn : "") + 1);
    key_value(&s->key, args);
    uint64_t hv = hash_bytes(s->key.s, s->key.len);
    if (!s->answers) {
        s->answers = xcalloc(SIM_ANSWERS, sizeof *s->answers);
        s->used = xmalloc(SIM_ANSWERS / 2 * sizeof *s->used);
    }
    size_t i = hv & (SIM_ANSWERS - 1);
    for (answer *a; (a = &s->answers[i])->key; i = (i + 1) & (SIM_ANSWERS - 1))
        if (a->hash == hv && a->klen == s->key.len && !memcmp(a->key, s->key.s, a->klen)) return a;
    if (s->nanswers >= SIM_ANSWERS / 2) {
        clear_answers(s);
        i = hv & (SIM_ANSWERS - 1);
    }
    answer *a = &s->answers[i];
    json_t *result;
    const char *wf;
    char *msg, *text;
    int rc = world_call(s->w, fn, args, &result, &wf, &msg);
    if (rc == 1) {
        text = harness_wrap_result(s->h, result);
    } else {
        if (rc < 0) { wf = "server_error"; msg = xasprintf("function %s is not available", fn); }
        char *f = harness_format_error(s->h, name, wf, msg);
        text = harness_wrap_error(s->h, f);
        free(f);
    }
    a->key = xmalloc(s->key.len);
    memcpy(a->key, s->key.s, s->key.len);
    a->klen = s->key.len;
    a->hash = hv;
    a->ok = rc == 1;
    a->result = rc == 1 ? result : NULL;
    a->error = rc == 1 ? NULL : msg;
    a->text = json_str(text);
    size_t cap = 0;
    numbers(text, 0, &a->num, &a->nnum, &cap);
    free(text);
    s->used[s->nanswers++] = i;
    return a;
}


/* One tool call, its message in parts (sim_tool_call, sim_tool_content). */
static void tool_call(sim *s, const char *name, const json_t *arguments, tool_reply *r)
{
    json_t *parsed = NULL;
    json_decref(s->last_result);
    s->last_result = NULL;
    if (json_is_string(arguments)) {
        parsed = json_loads(json_string_value(arguments), 0, NULL);
        arguments = parsed ? parsed : arguments;
    }
    name = name ? name : "";
    json_t *callrec = json_object();
    json_object_set_new_nocheck(callrec, "turn", json_integer(s->turns));
    json_object_set_new_nocheck(callrec, "name", json_str(name));
    json_object_set_new_nocheck(callrec, "function", json_null());
    json_object_set_nocheck(callrec, "arguments", arguments ? (json_t *)arguments : json_null());
    json_array_append_new(s->calls, callrec);
    if (s->loader && !strcmp(name, s->loader)) {
        load_skill(s, arguments, callrec, r);
        json_decref(parsed);
        return;
    }
    s->tool_calls++;
    json_object_set_new_nocheck(s->rec, "tool_calls", json_integer(s->tool_calls));
    const harness_tool *tool = harness_compiled_tool_view(s->hc, name);
    if (!tool) {
        char *e = xasprintf("no tool named '%s'", name);
        refuse(s, name, e, callrec, "unknown_tool", r);
        free(e);
        json_decref(parsed);
        return;
    }
    const char *fn = tool->function;
    json_object_set_new_nocheck(callrec, "function", json_str(fn ? fn : ""));
    char *err = parsed || !json_is_string(arguments) ? validate(tool, arguments)
                                                     : xstrdup("arguments are not valid JSON");
    if (err) {
        refuse(s, name, err, callrec, "invalid", r);
        free(err);
        json_decref(parsed);
        return;
    }
    json_t *args = by_function(tool, arguments);
    json_object_set_nocheck(callrec, "args", args);
    long gold = gold_index(s, fn, args);
    json_object_set_new_nocheck(callrec, "gold", json_integer(gold));
    const char *fault = gold >= 0 ? inject(s, gold, callrec) : NULL;
    if (fault) {
        const fault_answer *fa = fault_answer_of(s, name, fault);
        json_object_set_new_nocheck(callrec, "outcome", json_str("fault"));
        json_object_set_new_nocheck(callrec, "fault", json_str(fault));
        if (fa->text) json_array_append(s->evidence, fa->text);
        add_evidence_numbers(s, fa->num, fa->nnum);
        tool_parts(r, name, fa->text ? json_incref(fa->text) : NULL, NULL);
    } else {
        const answer *an = world_answer(s, name, fn, args);
        json_object_set_new_nocheck(callrec, "outcome", json_str(an->ok ? "ok" : "error"));
        if (an->ok) s->last_result = json_incref(an->result);
        else json_object_set_new_nocheck(callrec, "error", json_str(an->error));
        json_array_append(s->evidence, an->text);
        add_evidence_numbers(s, an->num, an->nnum);
        tool_parts(r, name, json_incref(an->text), NULL);
    }
    json_decref(args);
    json_decref(parsed);
}

json_t *sim_tool_call(sim *s, const char *name, const json_t *arguments)
{
    tool_reply r;
    tool_call(s, name, arguments, &r);
    return tool_msg_json(r.name, r.content, r.hook);
}

json_t *sim_tool_content(sim *s, const char *name, const json_t *arguments, const char **hookname)
{
    tool_reply r;
    tool_call(s, name, arguments, &r);
    /* NULL exactly where tool_msg_json gives no message: no content, or
     * a name that is not UTF-8 (an ASCII one always is) */
    int named = r.name != NULL;
    for (const unsigned char *p = (const unsigned char *)r.name; named && *p; p++)
        if (*p >= 0x80) {
            json_t *n = json_str(r.name);
            named = n != NULL;
            json_decref(n);
            break;
        }
    if (!named || !r.content) {
        json_decref(r.content);
        return NULL;
    }
    *hookname = r.hook;
    return r.content;
}

static int word_char(unsigned char c) { return isalnum(c) || c == '_'; }

/* s[0..n] with ASCII letters lowered into out: the case folding of
 * strcasestr in the C locale, which hat runs in (it never calls
 * setlocale), so that searches can run on strstr. */
static void ascii_lower(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i <= n; i++) out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
}

const char *sim_banned_term(const char *text, const json_t *banned)
{
    if (!json_array_size(banned)) return NULL;
    size_t i, tn = strlen(text);
    json_t *t;
    char tbuf[512], kbuf[128];
    char *lt = tn < sizeof tbuf ? tbuf : xmalloc(tn + 1);
    const char *found = NULL;
    ascii_lower(lt, text, tn);
    json_array_foreach(banned, i, t) {
        const char *term = json_string_value(t);
        size_t n = term ? strlen(term) : 0;
        if (!n) continue;
        char *lk = n < sizeof kbuf ? kbuf : xmalloc(n + 1);
        ascii_lower(lk, term, n);
        for (const char *p = lt; !found && (p = strstr(p, lk)); p++) {
            /* Whole words: no word character glued to either end (only
             * checked where the term itself starts/ends with one). */
            int left = p == lt || !word_char((unsigned char)p[-1]) || !word_char((unsigned char)lk[0]);
            int right = !word_char((unsigned char)p[n]) || !word_char((unsigned char)lk[n - 1]);
            if (left && right) found = term;
        }
        if (lk != kbuf) free(lk);
        if (found) break;
    }
    if (lt != tbuf) free(lt);
    return found;
}

/* One number of a text at p (a digit that does not continue a word or a
 * decimal): its value and where it ends.  In a reply (reply != 0) a
 * thousands separator joins groups ("1,119" is 1119, "¥12,345.50"
 * 12345.5); tool results are JSON, where a comma separates values.  The
 * letters x and X and * between digits separate dimensions (30x20x15). */
static double number_at(const char *p, int reply, const char **end)
{
    char buf[64];
    size_t n = 0;
    const char *q = p;
    int frac = 0;
    while (isdigit((unsigned char)*q) && n < 40) buf[n++] = *q++;
    while (reply && q[0] == ',' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2])
           && isdigit((unsigned char)q[3]) && !isdigit((unsigned char)q[4]) && n < 40) {
        memcpy(buf + n, q + 1, 3);
        n += 3;
        q += 4;
    }
    if (q[0] == '.' && isdigit((unsigned char)q[1])) {
        frac = 1;
        buf[n++] = *q++;
        while (isdigit((unsigned char)*q) && n < 60) buf[n++] = *q++;
    }
    buf[n] = 0;
    while (isdigit((unsigned char)*q) || (*q == '.' && isdigit((unsigned char)q[1]))) q++;
    *end = q;
    /* Up to 15 digits an integer is exact in a double: the sum is what
     * strtod gives, without its ~400 instructions a number. */
    if (!frac && n <= 15) {
        double v = 0;
        for (size_t i = 0; i < n; i++) v = v * 10 + (buf[i] - '0');
        return v;
    }
    return strtod(buf, NULL);
}

/* Letters that may stand right before a number without hiding it: a
 * dimension's x, a currency code (RMB199). */
static int number_prefix(const char *w, size_t n)
{
    return (n == 1 && (*w == 'x' || *w == 'X')) || (n == 3 && (!strncasecmp(w, "RMB", 3) || !strncasecmp(w, "CNY", 3)));
}

size_t sim_scan_numbers(const char *text, int reply, sim_number *out, size_t max)
{
    size_t k = 0;
    const char *p = text;
    while (p && *p) {
        if (reply && *p == '@') {
            while (*p && *p != ' ' && *p != ',' && *p != ':' && *p != '\n') p++;
            continue;
        }
        unsigned char prev = p == text ? ' ' : (unsigned char)p[-1];
        if (isdigit((unsigned char)*p) && !isalnum(prev) && prev != '_' && prev != '.') {
            const char *e;
            double d = number_at(p, reply, &e);
            if (k < max) out[k] = (sim_number){ d, (size_t)(p - text), (size_t)(e - text) };
            k++;
            p = e;
            /* 30x20x15: the x and the next number */
            if ((*p == 'x' || *p == 'X' || *p == '*') && isdigit((unsigned char)p[1])) p++;
            continue;
        }
        if (isalnum((unsigned char)*p)) {
            const char *w = p;
            while (isalpha((unsigned char)*p)) p++;
            if (isdigit((unsigned char)*p) && number_prefix(w, (size_t)(p - w))) {
                const char *e;
                double d = number_at(p, reply, &e);
                if (k < max) out[k] = (sim_number){ d, (size_t)(p - text), (size_t)(e - text) };
                k++;
                p = e;
                continue;
            }
            while (isalnum((unsigned char)*p)) p++;
            continue;
        }
        p++;
    }
    return k;
}

/* Numbers of text (a reply's when reply), appended to *v. */
static void numbers(const char *text, int reply, double **v, size_t *n, size_t *cap)
{
    sim_number few[32], *nb = few;
    size_t k = sim_scan_numbers(text, reply, few, 32);
    if (k > 32) { nb = xmalloc(k * sizeof *nb); sim_scan_numbers(text, reply, nb, k); }
    if (*n + k > *cap) { *cap = (*n + k) * 2 + 16; *v = xrealloc(*v, *cap * sizeof **v); }
    for (size_t i = 0; i < k; i++) (*v)[(*n)++] = nb[i].v;
    if (nb != few) free(nb);
}

/* Coupon-code-like tokens: two or more capitals then digits (not a
 * currency code before an amount, RMB199). */
static const char *next_code(const char *p, size_t *len)
{
    const char *start = p;
    while (*p) {
        if (!isupper((unsigned char)*p) || (p > start && isalnum((unsigned char)p[-1]))) { p++; continue; }
        const char *q = p;
        while (isupper((unsigned char)*q)) q++;
        const char *d = q;
        while (isdigit((unsigned char)*d)) d++;
        if (q - p >= 2 && d > q && !isalnum((unsigned char)*d) && !number_prefix(p, (size_t)(q - p))) {
            *len = (size_t)(d - p);
            return p;
        }
        p = d > q ? d : q;
    }
    return NULL;
}

static int among(double x, const double *ev, size_t en)
{
    for (size_t b = 0; b < en; b++) if (fabs(x - ev[b]) < 1e-6) return 1;
    return 0;
}

/* x is the difference, the sum or the product of two of ev: a saving, a
 * gap, a total (two prices, or a count times a size: "6 x 80 g" is 480 g
 * in all). */
static int arithmetic_of(double x, const double *ev, size_t en)
{
    for (size_t a = 0; a < en; a++)
        for (size_t b = a + 1; b < en; b++)
            if (fabs(fabs(ev[a] - ev[b]) - x) < 1e-6 || fabs(ev[a] + ev[b] - x) < 1e-6 || fabs(ev[a] * ev[b] - x) < 1e-6)
                return 1;
    return 0;
}

/* x is a markdown of two of ev in percent, whole or rounded ("17% off"
 * for 100 down to 83). */
static int percent_of(double x, const double *ev, size_t en)
{
    for (size_t a = 0; a < en; a++)
        for (size_t b = 0; b < en; b++)
            if (ev[a] > ev[b] && ev[b] > 0 && fabs(100 * (ev[a] - ev[b]) / ev[a] - x) <= 0.5) return 1;
    return 0;
}

/* Whether reply number rv[a] is a saving, difference or total bound to
 * what the reply names: where the reply states two or more other numbers
 * backed by ev (the prices it compares), of two of those ("¥309 vs ¥389,
 * you save ¥90" is wrong although 479 - 389 is 90 in the same results);
 * where it states fewer, of two numbers of ev. */
static int computed_from(const sim_number *rv, size_t rn, size_t a, const double *ev, size_t en, int pct)
{
    double few[16];
    size_t k = 0;
    for (size_t b = 0; b < rn && k < 16; b++)
        if (b != a && among(rv[b].v, ev, en)) few[k++] = rv[b].v;
    if (pct) return k >= 2 ? percent_of(rv[a].v, few, k) : percent_of(rv[a].v, ev, en);
    return k >= 2 ? arithmetic_of(rv[a].v, few, k) : arithmetic_of(rv[a].v, ev, en);
}

/* The first number of reply that is none of ev[0..en) (nor, where an
 * arithmetic word such as "save" or "difference" stands near it, a
 * difference or sum bound as computed_from says, or for a percentage the
 * markdown of two such numbers), as text, or NULL. */
static char *unmatched_number(const char *reply, const double *ev, size_t en)
{
    sim_number few[32], *rv = few;
    size_t rn = sim_scan_numbers(reply, 1, few, 32);
    if (rn > 32) { rv = xmalloc(rn * sizeof *rv); sim_scan_numbers(reply, 1, rv, rn); }
    char *bad = NULL;
    for (size_t a = 0; a < rn && !bad; a++) {
        if (among(rv[a].v, ev, en)) continue;
        const char *u = reply + rv[a].end;
        while (*u == ' ') u++;
        int pct = *u == '%';                 /* a percentage: a markdown of two numbers */
        if (judge_lexicon_arith_near(judge_lexicon_get(), reply, rv[a].at, rv[a].end) && computed_from(rv, rn, a, ev, en, pct)) continue;
        bad = xasprintf("%.15g", rv[a].v);
    }
    if (rv != few) free(rv);
    return bad;
}

/* The first code of the reply (not an @mention) found neither in the
 * viewer's text (may be NULL) nor in any evidence text, or NULL. */
static char *unmatched_code(const char *reply, const char *viewer_text, const json_t *evidence)
{
    size_t len, i;
    json_t *t;
    for (const char *p = reply; (p = next_code(p, &len)); p += len) {
        if (p > reply && p[-1] == '@') continue;
        int found = viewer_text && memmem(viewer_text, strlen(viewer_text), p, len);
        json_array_foreach(evidence, i, t)
            if (!found) found = memmem(json_string_value(t), json_string_length(t), p, len) != NULL;
        if (!found) return xstrndup(p, len);
    }
    return NULL;
}

char *sim_unsupported_value(const char *reply, const json_t *evidence, const char *viewer_text)
{
    double *ev = NULL;
    size_t en = 0, ec = 0, i;
    json_t *t;
    json_array_foreach(evidence, i, t) numbers(json_string_value(t), 0, &ev, &en, &ec);
    if (viewer_text) numbers(viewer_text, 0, &ev, &en, &ec);
    char *bad = unmatched_number(reply, ev, en);
    free(ev);
    return bad ? bad : unmatched_code(reply, viewer_text, evidence);
}

/* As sim_unsupported_value, with the evidence numbers cached in s: the
 * viewer text's, then each evidence text's as it was added (every text
 * appended to s->evidence has its numbers appended to s->evnum). */
char *sim_unsupported(sim *s, const char *reply)
{
    char *bad = unmatched_number(reply, s->evnum, s->nev);
    return bad ? bad : unmatched_code(reply, s->viewer_text, s->evidence);
}

/* ---- replies ------------------------------------------------------------------- */

static json_t *hook_msg(const char *hookname, const char *text)
{
    json_t *m = json_object(), *c = json_str(text);
    if (!c) { json_decref(m); return NULL; }
    json_object_set_new_nocheck(m, "role", json_string_nocheck("user"));
    json_object_set_new_nocheck(m, "content", c);
    json_object_set_new_nocheck(m, "hook", json_str(hookname));
    return m;
}

/* Run the reply checks in order.  With fails == NULL stop at the first
 * failure and return its hook name; otherwise record every failing hook
 * in fails and build the first one's message into *first. */
static const char *reply_checks(sim *s, const char *text, json_t *fails, json_t **first)
{
    const char *firsthook = NULL;
    json_t *vars;
#define FAIL(hookname, field) do { \
        if (!fails) { json_decref(vars); return hookname; } \
        json_array_append_new(fails, json_str(hookname)); \
        if (!*first) { char *msg = harness_hook_message(s->h, hookname, field, vars); \
            *first = hook_msg(hookname, msg ? msg : hookname); free(msg); firsthook = hookname; } \
        json_decref(vars); } while (0)

    if (hook(s, "skill_required") && !s->reply_loaded) {
        vars = json_pack("{s:s}", "loader", s->loader ? s->loader : "");
        FAIL("skill_required", "message");
    }
    const char *term = hook(s, "reply_filter") ? sim_banned_term(text, s->banned) : NULL;
    if (term) {
        vars = json_pack("{s:s}", "term", term);
        FAIL("reply_filter", "on_violation");
    }
    char *ferr = NULL;
    if (s->lim && s->lim->format_hook) ferr = harness_limits_broken(s->lim, text);
    if (ferr) {
        vars = json_pack("{s:s}", "error", ferr);
        free(ferr);
        FAIL("reply_format", "message");
    }
    if (hook(s, "factual_risk")) {
        char *v = sim_unsupported(s, text);
        if (v) {
            vars = json_pack("{s:s}", "value", v);
            free(v);
            FAIL("factual_risk", "message");
        }
    }
#undef FAIL
    return firsthook;
}

const char *sim_reply_check(sim *s, const char *text)
{
    return reply_checks(s, text ? text : "", NULL, NULL);
}

json_t *sim_reply(sim *s, const char *text)
{
    text = text ? text : "";
    json_t *fails = json_array(), *first = NULL;
    reply_checks(s, text, fails, &first);
    size_t i;
    json_t *f;
    json_array_foreach(fails, i, f) event(s, json_string_value(f), "reply", json_integer((json_int_t)json_array_size(s->replies)));
    /* {"text","accepted","hooks"}, or nothing where json_pack would
     * have failed (text not UTF-8) */
    json_t *t = json_str(text), *r = NULL;
    if (t) {
        r = json_object();
        json_object_set_new_nocheck(r, "text", t);
        json_object_set_new_nocheck(r, "accepted", json_boolean(first == NULL));
        json_object_set_new_nocheck(r, "hooks", fails);
    } else json_decref(fails);
    json_array_append_new(s->replies, r);
    if (!first) {
        json_object_set_new_nocheck(s->rec, "accepted", json_true());
        /* the reply's string, shared (t is NULL where json_string fails) */
        json_object_set_new_nocheck(s->rec, "reply", t ? json_incref(t) : NULL);
    }
    return first;
}

json_t *sim_step(sim *s, const json_t *assistant, int *done)
{
    json_t *out = json_array();
    *done = 0;
    sim_turn(s);
    const json_t *calls = json_object_get(assistant, "tool_calls");
    if (json_array_size(calls)) {
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) {
            const json_t *fn = json_object_get(c, "function");
            if (!fn) fn = c;                      /* flat {"name","arguments"} */
            json_array_append_new(out, sim_tool_call(s, json_string_value(json_object_get(fn, "name")),
                                                     json_object_get(fn, "arguments")));
        }
        return out;
    }
    json_t *m = sim_reply(s, json_string_value(json_object_get(assistant, "content")));
    if (m) json_array_append_new(out, m);
    else *done = 1;
    return out;
}
