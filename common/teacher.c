/* teacher.c — the scripted teacher (see teacher.h). */
#include "teacher.h"
#include "bank.h"
#include "harness.h"
#include "harness_compile.h"
#include "tasks.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TURNS 24
#define MAX_CALLS 8

/* The harness's budgets and reply limits, from its compiled view. */
typedef struct {
    long max_turns, max_tool_calls;      /* 1000 when the prompt sets none */
    long max_chars, max_emoji;           /* -1 when the harness states none */
} hlimits;

struct teacher {
    json_t *replies, *think;
};

teacher *teacher_new(void)
{
    teacher *t = xcalloc(1, sizeof *t);
    t->replies = bank_load("teacher/replies.json");
    t->think = bank_load("teacher/think.json");
    if (!t->replies || !t->think) { teacher_free(t); return NULL; }
    return t;
}

void teacher_free(teacher *t)
{
    if (!t) return;
    json_decref(t->replies);
    json_decref(t->think);
    free(t);
}

/* One assistant turn and what came back. */
typedef struct {
    json_t *asst;               /* the assistant message */
    json_t *tools;              /* tool messages, one per call */
    int     gold[MAX_CALLS];    /* gold call index per call, -1 for skill loads */
    int     fail[MAX_CALLS];    /* the attempt failed */
    int     drop[MAX_CALLS];    /* pruned from the kept trajectory */
    int     n;
} turn;

typedef struct {
    teacher *t;
    sim *s;
    const json_t *task, *h;
    hlimits lim;
    rng_t *r;
    turn turns[MAX_TURNS];
    int nturns;
    json_t *results[MAX_CALLS];  /* unwrapped successful result per gold call */
    int failed[MAX_CALLS], attempts[MAX_CALLS];
    int missing[MAX_CALLS];      /* the harness has no tool for the gold call */
    int ncalls, tool_calls;
    json_t *msgs;                /* viewer + hook messages in order, see emit */
} run;

static const char *sget(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static turn *new_turn(run *x, const char *reasoning)
{
    if (x->nturns == MAX_TURNS) return NULL;
    turn *tu = &x->turns[x->nturns++];
    memset(tu, 0, sizeof *tu);
    tu->asst = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
    if (reasoning) json_object_set_new(tu->asst, "reasoning_content", json_string(reasoning));
    json_object_set_new(tu->asst, "tool_calls", json_array());
    tu->tools = json_array();
    sim_turn(x->s);
    return tu;
}

static json_t *add_call(run *x, turn *tu, const char *name, json_t *args, int gold)
{
    json_array_append_new(json_object_get(tu->asst, "tool_calls"),
        json_pack("{s:s,s:{s:s,s:O}}", "type", "function", "function", "name", name, "arguments", args));
    json_array_append_new(tu->tools, sim_tool_call(x->s, name, args));
    tu->gold[tu->n] = gold;
    tu->fail[tu->n] = 0;
    tu->drop[tu->n] = 0;
    tu->n++;
    json_decref(args);
    const json_t *r = sim_last_result(x->s);    /* what the envelope carries */
    return r ? json_incref((json_t *)r) : NULL;
}

/* ---- skills ----------------------------------------------------------------- */

/* Skill names to load: the gold functions present in this harness, plus a
 * reply skill if none of them is one. */
static json_t *skills_to_load(run *x)
{
    json_t *fns = task_gold_skills(x->task), *names = json_array();
    int have_reply = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fns, i, f) {
        const json_t *sk = harness_skill_by_function(x->h, json_string_value(f));
        if (!sk) continue;
        json_array_append(names, json_object_get(sk, "name"));
        have_reply |= sget(sk, "kind") && !strcmp(sget(sk, "kind"), "reply");
    }
    if (!have_reply) {
        json_array_foreach(json_object_get(x->h, "skills"), i, f)
            if (sget(f, "kind") && !strcmp(sget(f, "kind"), "reply")) {
                json_array_insert(names, 0, json_object_get(f, "name"));
                break;
            }
    }
    json_decref(fns);
    return names;
}

static void load_skills(run *x, turn *tu, const json_t *names)
{
    const char *loader = harness_loader_name(x->h), *arg = harness_loader_argument(x->h);
    size_t i;
    json_t *n;
    json_array_foreach(names, i, n)
        json_decref(add_call(x, tu, loader ? loader : "", json_pack("{s:O}", arg ? arg : "skill", n), -1));
}

/* ---- tool calls -------------------------------------------------------------- */

/* The argument value a viewer-reading policy would pass: the mention from
 * the viewer's text where there is one, else the gold value. */
static json_t *arg_value(const json_t *task, const char *xfn, json_t *gold_value)
{
    const json_t *m = json_object_get(json_object_get(task, "context"), "mentions");
    const char *key = !strcmp(xfn, "product") ? "product" : !strcmp(xfn, "variant") ? "variant"
                    : !strcmp(xfn, "region") ? "region" : NULL;
    /* A second lookup of the same function names the second product. */
    if (key && json_is_string(json_object_get(m, key))) return json_incref(json_object_get(m, key));
    return json_incref(gold_value);
}

static json_t *call_args(run *x, const json_t *tool, const json_t *gold_call, int gi)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    const json_t *m = json_object_get(json_object_get(x->task, "context"), "mentions");
    json_object_foreach(json_object_get((json_t *)gold_call, "arguments"), k, v) {
        const char *pn = harness_param_name_for(tool, k);
        if (!pn) continue;
        json_t *val;
        /* compare: the second product lookup uses the second mention */
        if (!strcmp(k, "product") && json_is_string(json_object_get(m, "product2")) && gi > 0
            && !strcmp(sget(json_object_get(x->task, "context"), "product2") ? sget(json_object_get(x->task, "context"), "product2") : "", json_string_value(v)))
            val = json_incref(json_object_get(m, "product2"));
        else
            val = arg_value(x->task, k, v);
        json_object_set_new(out, pn, val);
    }
    return out;
}

static const json_t *task_fault(const json_t *task, int gi)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(task, "faults"), i, f)
        if (json_integer_value(json_object_get(f, "call")) == gi) return f;
    return NULL;
}

static int retryable(const json_t *h, const char *type)
{
    const json_t *tr = json_object_get(json_object_get(h, "hooks"), "tool_retry");
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(tr, "retry_on"), i, t)
        if (type && json_is_string(t) && !strcmp(json_string_value(t), type)) return 1;
    return 0;
}

/* The limits the judge holds the reply to: those the harness states,
 * whether or not a reply_format hook enforces them. */
static hlimits limits_of(const sim *s)
{
    const harness_limits *L = harness_compiled_limits(sim_compiled(s));
    return (hlimits){ L->max_turns >= 0 ? L->max_turns : 1000, L->max_tool_calls >= 0 ? L->max_tool_calls : 1000,
                      L->max_chars, L->max_emoji };
}

/* The failed attempts of a call that a retry later recovered are pruned
 * (unless retries are kept).  An attempt is never pruned when no retry
 * followed it or the retries failed too: the kept trajectory must still
 * show every call the conversation needed and how it ended. */
static void mark_pruned(run *x)
{
    for (int i = 0; i < x->nturns; i++) {
        turn *tu = &x->turns[i];
        for (int c = 0; c < tu->n; c++) {
            int gi = tu->gold[c];
            tu->drop[c] = gi >= 0 && tu->fail[c] && x->results[gi];
        }
    }
}

/* Issue the gold calls, retrying as tool_retry allows within the turn and
 * tool-call budgets.  Fills results[] / failed[] / attempts[]. */
static int make_calls(run *x, turn *first, int reserve_turns)
{
    const json_t *calls = json_object_get(json_object_get(x->task, "gold"), "calls");
    const json_t *tr = json_object_get(json_object_get(x->h, "hooks"), "tool_retry");
    long maxr = (long)json_integer_value(json_object_get(tr, "max_retries"));
    long max_tools = x->lim.max_tool_calls, max_turns = x->lim.max_turns;
    int pending[MAX_CALLS], np = 0;
    x->ncalls = (int)json_array_size(calls);
    if (x->ncalls > MAX_CALLS) return -1;
    for (int i = 0; i < x->ncalls; i++) pending[np++] = i;
    turn *tu = first;
    while (np) {
        int now[MAX_CALLS], nn = 0;
        json_t *got[MAX_CALLS];
        for (int k = 0; k < np; k++) {
            int gi = pending[k];
            const json_t *gc = json_array_get(calls, (size_t)gi);
            const json_t *tool = harness_tool_by_function(x->h, sget(gc, "function"));
            if (!tool) { x->missing[gi] = 1; continue; }
            if (x->tool_calls >= max_tools) { x->failed[gi] = 1; continue; }
            if (!tu && !(tu = new_turn(x, NULL))) return -1;     /* a turn only when a call is made */
            x->attempts[gi]++;
            x->tool_calls++;
            got[nn] = add_call(x, tu, sget(tool, "name"), call_args(x, tool, gc, gi), gi);
            now[nn++] = gi;
        }
        np = 0;
        if (!nn) break;
        for (int k = 0; k < nn; k++) {
            int gi = now[k], slot = tu->n - nn + k;
            if (got[k]) { x->results[gi] = got[k]; continue; }
            tu->fail[slot] = 1;
            const json_t *f = task_fault(x->task, gi);
            const char *type = f ? sget(f, "type") : NULL;
            int turns_left = (int)max_turns - x->nturns - reserve_turns;
            /* A retry may still be stopped by the tool-call budget above. */
            if (f && retryable(x->h, type) && x->attempts[gi] <= maxr && turns_left > 0)
                pending[np++] = gi;
            else
                x->failed[gi] = 1;
        }
        tu = NULL;
    }
    mark_pruned(x);
    return 0;
}

/* ---- reply --------------------------------------------------------------------- */

static void set_str(json_t *v, const char *k, const json_t *src, const char *sk)
{
    const json_t *x = json_object_get(src, sk);
    if (json_is_string(x) || json_is_number(x)) json_object_set(v, k, (json_t *)x);
}

/* Slots from the product lookup result r (suffix "" or "2").  {price} is
 * the regular price beside {flash_price} for the price replies ("usually
 * ¥{price}"), but a comparison quotes what each product costs now: the
 * live price, the flash price during a flash sale (gold.facts.price). */
static void product_vars(run *x, json_t *v, const json_t *r, const char *sfx)
{
    char k[32];
    const json_t *wp = world_product_by_id(sim_world(x->s), sget(r, "id") ? sget(r, "id") : "");
    snprintf(k, sizeof k, "name%s", sfx); set_str(v, k, r, "name");
    snprintf(k, sizeof k, "short%s", sfx);
    if (wp && sget(wp, "short")) json_object_set(v, k, json_object_get(wp, "short"));
    else set_str(v, k, r, "name");
    const json_t *fs = json_object_get(r, "flash_sale");
    snprintf(k, sizeof k, "price%s", sfx);
    const char *intent = sget(x->task, "intent");
    if (fs && intent && !strcmp(intent, "compare")) set_str(v, k, fs, "price");
    else set_str(v, k, r, "price");
    if (!*sfx) {
        set_str(v, "list_price", r, "list_price");
        if (fs) { set_str(v, "flash_price", fs, "price"); set_str(v, "ends", fs, "ends"); }
    }
}

static const char *stock_key(const json_t *v, const char *prefix, char *buf, size_t n)
{
    const char *st = sget(v, "status");
    snprintf(buf, n, "%s%s", prefix, !st ? "stock_in" : !strcmp(st, "sold out")
             ? (json_object_get(v, "alt") ? "stock_out" : "stock_out_noalt")
             : !strcmp(st, "low") ? "stock_low" : "stock_in");
    return buf;
}

/* Slots from every result; returns the reply bank key. */
static const char *reply_vars(run *x, json_t *v, char *key, size_t kn)
{
    const json_t *task = x->task, *calls = json_object_get(json_object_get(task, "gold"), "calls");
    const char *intent = sget(task, "intent");
    int nlook = 0, stock_seen = 0;
    for (int i = 0; i < x->ncalls; i++) {
        const json_t *r = x->results[i];
        const char *fn = sget(json_array_get(calls, (size_t)i), "function");
        if (!r || !fn) continue;
        if (!strcmp(fn, "product.lookup")) {
            product_vars(x, v, r, nlook++ ? "2" : "");
            const char *spec = sget(json_object_get(task, "context"), "spec");
            const json_t *specs = json_object_get(r, "specs");
            if (spec) set_str(v, "value", specs, spec);
            else if (!json_object_get(v, "value")) {
                const char *k; json_t *sv;
                json_object_foreach((json_t *)specs, k, sv) { if (json_is_string(sv)) { json_object_set(v, "value", sv); break; } }
            }
            const json_t *ret = json_object_get(r, "returns");
            set_str(v, "return_days", ret, "days");
            set_str(v, "condition", ret, "condition");
        } else if (!strcmp(fn, "promo.list")) {
            const json_t *c = json_array_get(json_object_get(r, "coupons"), 0);
            if (c) { set_str(v, "code", c, "code"); set_str(v, "discount", c, "discount");
                     set_str(v, "threshold", c, "threshold"); set_str(v, "expires", c, "expires"); }
            product_vars(x, v, r, "");
        } else if (!strcmp(fn, "inventory.check")) {
            const json_t *vs = json_object_get(r, "variants");
            if (!stock_seen++) {
                const json_t *one = json_array_get(vs, 0);
                set_str(v, "variant", one, "name");
                set_str(v, "stock", one, "stock");
                set_str(v, "status", one, "status");
                if (!json_object_get(v, "short")) product_vars(x, v, r, "");
            } else {
                size_t j; json_t *o;
                json_array_foreach(vs, j, o)
                    if (json_integer_value(json_object_get(o, "stock")) > 0 && sget(o, "name") && sget(v, "variant")
                        && strcmp(sget(o, "name"), sget(v, "variant"))) { set_str(v, "alt", o, "name"); break; }
            }
        } else if (!strcmp(fn, "size.recommend")) {
            set_str(v, "size", r, "size");
            set_str(v, "chest", r, "chest_cm");
            json_object_set(v, "hmin", json_array_get(json_object_get(r, "height_cm"), 0));
            json_object_set(v, "hmax", json_array_get(json_object_get(r, "height_cm"), 1));
            product_vars(x, v, r, "");
        } else if (!strcmp(fn, "shipping.estimate")) {
            set_str(v, "region", r, "region");
            set_str(v, "days_min", r, "days_min");
            set_str(v, "days_max", r, "days_max");
            if (!json_object_get(v, "short")) product_vars(x, v, r, "");
        } else if (!strcmp(fn, "order.status")) {
            set_str(v, "order_id", r, "id");
            set_str(v, "status", r, "status");
            set_str(v, "carrier", r, "carrier");
            set_str(v, "eta_days", r, "eta_days");
        }
    }
    const char *k = intent;
    if (!strcmp(intent, "price")) k = json_object_get(v, "flash_price") ? "price_flash"
        : json_number_value(json_object_get(v, "list_price")) > json_number_value(json_object_get(v, "price")) ? "price" : "price_same";
    else if (!strcmp(intent, "coupon")) k = json_object_get(v, "code") ? "coupon" : "coupon_none";
    else if (!strcmp(intent, "stock")) k = stock_key(v, "", key, kn);
    else if (!strcmp(intent, "specs")) { snprintf(key, kn, "spec_%s", sget(json_object_get(task, "context"), "spec")); k = key; }
    else if (!strcmp(intent, "returns")) k = json_number_value(json_object_get(v, "return_days")) > 0 ? "returns" : "returns_none";
    else if (!strcmp(intent, "order_status")) k = json_object_get(v, "eta_days") ? "order_eta" : "order";
    else if (!strcmp(intent, "compliance_trap")) k = json_object_get(v, "value") ? "compliance" : "compliance_plain";
    else if (!strcmp(intent, "ambiguous")) k = "clarify";
    else if (!strcmp(intent, "multi_intent")) k = "multi";
    return k;
}

typedef struct { long max_chars, max_emoji; const json_t *banned, *must_not; } limits;

static int fits(run *x, const limits *L, const char *text)
{
    harness_limits hl = { .max_chars = L->max_chars, .max_emoji = L->max_emoji };
    char *broken = harness_limits_broken(&hl, text);
    free(broken);
    if (broken) return 0;
    if (sim_banned_term(text, L->banned) || sim_banned_term(text, L->must_not)) return 0;
    return sim_reply_check(x->s, text) == NULL;
}

/* Templates of key in random order; the first filled one that fits. */
static char *choose(run *x, const limits *L, const char *key, const json_t *vars)
{
    const json_t *list = bank_list(x->t->replies, key);
    size_t n = json_array_size(list), order[64];
    if (!n) return NULL;
    if (n > 64) n = 64;
    for (size_t i = 0; i < n; i++) order[i] = i;
    rng_shuffle(x->r, order, n, sizeof order[0]);
    sbuf b;
    sbuf_init(&b);
    for (size_t i = 0; i < n; i++) {
        sbuf_reset(&b);
        if (bank_fill(&b, json_string_value(json_array_get(list, order[i])), vars)) continue;
        if (fits(x, L, b.s)) return sbuf_detach(&b);
    }
    sbuf_free(&b);
    return NULL;
}

/* multi: every (template, part1, part2) combination, randomly ordered. */
static char *choose_multi(run *x, const limits *L, json_t *vars)
{
    char k2[64];
    const char *p1 = json_object_get(vars, "flash_price") ? "part_price_flash" : "part_price";
    const char *p2 = json_object_get(vars, "days_min") ? "part_shipping" : stock_key(vars, "part_", k2, sizeof k2);
    const json_t *l1 = bank_list(x->t->replies, p1), *l2 = bank_list(x->t->replies, p2);
    size_t n1 = json_array_size(l1), n2 = json_array_size(l2), combos[256], nc = 0;
    for (size_t a = 0; a < n1 && a < 16; a++)
        for (size_t b = 0; b < n2 && b < 16; b++) combos[nc++] = a * 16 + b;
    rng_shuffle(x->r, combos, nc, sizeof combos[0]);
    sbuf s1, s2;
    sbuf_init(&s1);
    sbuf_init(&s2);
    char *out = NULL;
    for (size_t i = 0; i < nc && !out; i++) {
        sbuf_reset(&s1);
        sbuf_reset(&s2);
        if (bank_fill(&s1, json_string_value(json_array_get(l1, combos[i] / 16)), vars)
            || bank_fill(&s2, json_string_value(json_array_get(l2, combos[i] % 16)), vars)) continue;
        json_object_set_new(vars, "part1", json_string(s1.s));
        json_object_set_new(vars, "part2", json_string(s2.s));
        out = choose(x, L, "multi", vars);
    }
    sbuf_free(&s1);
    sbuf_free(&s2);
    return out;
}

static char *compose_reply(run *x, const limits *L)
{
    json_t *vars = json_object();
    json_object_set(vars, "nick", json_object_get(json_object_get(x->task, "viewer"), "nick"));
    int any_failed = 0, any_missing = 0;
    for (int i = 0; i < x->ncalls; i++) any_failed |= x->failed[i], any_missing |= x->missing[i];
    char key[64], *text;
    /* A fault is owned up to; a request no tool of the harness serves is
     * declined as such, with no fault invented for it. */
    if (any_failed) text = choose(x, L, "fault", vars);
    else if (any_missing) text = choose(x, L, "unavailable", vars);
    else {
        const char *k = reply_vars(x, vars, key, sizeof key);
        text = !strcmp(k, "multi") ? choose_multi(x, L, vars) : choose(x, L, k, vars);
    }
    json_decref(vars);
    return text;
}

/* ---- the run -------------------------------------------------------------------- */

static void emit(run *x, json_t *out, int keep)
{
    for (int i = 0; i < x->nturns; i++) {
        turn *tu = &x->turns[i];
        json_t *calls = json_object_get(tu->asst, "tool_calls");
        if (!json_array_size(calls)) {           /* a reply */
            json_object_del(tu->asst, "tool_calls");
            json_array_append(out, tu->asst);
            if (json_array_size(tu->tools)) json_array_extend(out, tu->tools);   /* its hook note */
            continue;
        }
        json_t *kc = json_array(), *kt = json_array();
        for (int c = 0; c < tu->n; c++) {
            if (tu->drop[c] && !keep) continue;
            json_array_append(kc, json_array_get(calls, (size_t)c));
            json_array_append(kt, json_array_get(tu->tools, (size_t)c));
        }
        if (json_array_size(kc)) {
            json_t *a = json_copy(tu->asst);
            json_object_set_new(a, "tool_calls", kc);
            json_array_append_new(out, a);
            json_array_extend(out, kt);
        } else json_decref(kc);
        json_decref(kt);
    }
}

/* meta.recovery: one entry per gold call that met a failure, so that a
 * later rewrite (HSA) knows the retries made even where they were pruned:
 * {"call", "function", "attempts", "failed", "pruned", "recovered"}. */
static json_t *recovery(run *x, int keep)
{
    const json_t *calls = json_object_get(json_object_get(x->task, "gold"), "calls");
    json_t *out = json_array();
    for (int gi = 0; gi < x->ncalls; gi++) {
        int failed = 0, pruned = 0;
        for (int i = 0; i < x->nturns; i++)
            for (int c = 0; c < x->turns[i].n; c++)
                if (x->turns[i].gold[c] == gi && x->turns[i].fail[c]) {
                    failed++;
                    pruned += x->turns[i].drop[c] && !keep;
                }
        if (!failed) continue;
        const char *fn = sget(json_array_get(calls, (size_t)gi), "function");
        json_array_append_new(out, json_pack("{s:i,s:s,s:i,s:i,s:i,s:b}", "call", gi,
            "function", fn ? fn : "", "attempts", x->attempts[gi], "failed", failed,
            "pruned", pruned, "recovered", x->results[gi] != NULL));
    }
    return out;
}

static void free_run(run *x)
{
    for (int i = 0; i < x->nturns; i++) { json_decref(x->turns[i].asst); json_decref(x->turns[i].tools); }
    for (int i = 0; i < MAX_CALLS; i++) json_decref(x->results[i]);
}

json_t *teacher_run(teacher *t, sim *s, const json_t *task, rng_t *r,
                    const teacher_opts *o, json_t *meta, char **err)
{
    run x;
    memset(&x, 0, sizeof x);
    x.t = t; x.s = s; x.task = task; x.h = sim_harness(s); x.r = r;
    if (!sim_compiled(s)) { *err = xstrdup("no harness set"); return NULL; }
    x.lim = limits_of(s);
    *err = NULL;
    json_t *viewer = sim_begin(s, task);
    const char *intent = sget(task, "intent");
    const char *think = rng_chance(r, o->think) ? bank_pick(t->think, intent, r) : NULL;
    int keep = rng_chance(r, o->keep_retries);
    long max_turns = x.lim.max_turns;
    int ncalls = (int)json_array_size(json_object_get(json_object_get(task, "gold"), "calls"));
    /* Skills first, calls next, reply last; when the turn budget is tight
     * the skill loads share the first call turn. */
    json_t *names = skills_to_load(&x);
    turn *first = new_turn(&x, think);
    load_skills(&x, first, names);
    json_decref(names);
    int merged = ncalls > 0 && max_turns < 3 + ncalls;
    if (make_calls(&x, merged ? first : NULL, 1) < 0) { *err = xstrdup("too many calls or turns"); goto fail; }

    limits L = { x.lim.max_chars, x.lim.max_emoji, NULL, json_object_get(json_object_get(task, "gold"), "must_not") };
    L.banned = harness_compiled_banned(sim_compiled(s));
    char *text = compose_reply(&x, &L);
    if (!text) { *err = xasprintf("no reply template fits (intent %s)", intent); goto fail; }
    turn *rt = new_turn(&x, NULL);
    if (!rt) { free(text); *err = xstrdup("too many turns"); goto fail; }
    json_object_set_new(rt->asst, "content", json_string(text));
    json_t *note = sim_reply(s, text);
    if (note) {
        *err = xasprintf("reply rejected by %s: %s", sget(note, "hook"), text);
        json_decref(note);
        free(text);
        goto fail;
    }
    free(text);
    json_t *out = json_array();
    json_array_append_new(out, viewer);
    emit(&x, out, keep);
    if (meta) {
        int pruned = 0, hit = 0;
        for (int i = 0; i < x.nturns; i++)
            for (int c = 0; c < x.turns[i].n; c++) pruned += x.turns[i].drop[c] && !keep;
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(sim_record(s), "faults"), i, f) hit += (int)json_integer_value(json_object_get(f, "failed"));
        json_object_set_new(meta, "faults_hit", json_integer(hit));
        json_object_set_new(meta, "pruned", json_integer(pruned));
        json_object_set_new(meta, "recovery", recovery(&x, keep));
    }
    free_run(&x);
    return out;
fail:
    json_decref(viewer);
    free_run(&x);
    return NULL;
}
