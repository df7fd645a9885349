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
    json_t *replies, *think, *skills;
};

teacher *teacher_new(void)
{
    teacher *t = xcalloc(1, sizeof *t);
    t->replies = bank_load("teacher/replies.json");
    t->think = bank_load("teacher/think.json");
    t->skills = bank_load("teacher/skills.json");
    if (!t->replies || !t->think || !t->skills) { teacher_free(t); return NULL; }
    return t;
}

void teacher_free(teacher *t)
{
    if (!t) return;
    json_decref(t->replies);
    json_decref(t->think);
    json_decref(t->skills);
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

static int is_reply(const json_t *sk) { return sget(sk, "kind") && !strcmp(sget(sk, "kind"), "reply"); }

/* A needed call has no tool in this harness. */
static int unserved(const run *x)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(x->task, "gold"), "calls"), i, c)
        if (!harness_tool_by_function(x->h, sget(c, "function"))) return 1;
    return 0;
}

/* The reply skill of the first function of the skills.json list that the
 * harness has ("any": its first reply skill), or NULL. */
static const json_t *fallback_skill(run *x, const char *list)
{
    size_t i, j;
    json_t *f, *sk;
    json_array_foreach(bank_list(x->t->skills, list), i, f) {
        if (!strcmp(json_string_value(f), "any")) {
            json_array_foreach(json_object_get(x->h, "skills"), j, sk) if (is_reply(sk)) return sk;
            continue;
        }
        const json_t *s = harness_skill_by_function(x->h, json_string_value(f));
        if (s && is_reply(s)) return s;
    }
    return NULL;
}

/* Skill names to load: the gold functions present in this harness, plus,
 * if none of them is a reply skill, the fallback of data/teacher/skills.json:
 * a request a missing tool leaves unserved is declined under the harness's
 * general skill or none, never an unrelated one loaded only to get past
 * skill_required; a served one gets the general skill, else any. */
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
        have_reply |= is_reply(sk);
    }
    const json_t *fb = have_reply ? NULL : fallback_skill(x, unserved(x) ? "unserved" : "served");
    if (fb) json_array_insert(names, 0, json_object_get(fb, "name"));
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
            /* what a claim about effects can be steered to: what is in it */
            set_str(v, "ingredients", specs, "key_ingredients");
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
    else if (!strcmp(intent, "order_status")) {
        const json_t *eta = json_object_get(v, "eta_days");
        /* "0 days left" is today, "1 days" is one day */
        k = !eta ? "order" : json_integer_value(eta) == 0 ? "order_eta_today" : json_integer_value(eta) == 1 ? "order_eta_one" : "order_eta";
    } else if (!strcmp(intent, "compliance_trap")) k = json_object_get(v, "ingredients") ? "compliance" : "compliance_plain";
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

/* ---- replies after faults and declines ------------------------------------------- */

static const json_t *gold_call(const run *x, int gi)
{
    return json_array_get(json_object_get(json_object_get(x->task, "gold"), "calls"), (size_t)gi);
}

/* The earlier gold call that call gi supports, or -1: one of the same
 * function with more arguments (the stock of every variant, for an
 * alternative, after the stock of the asked one).  A supporting call's
 * result adds to its main call's answer instead of making one. */
static int main_call(const run *x, int gi)
{
    const json_t *c = gold_call(x, gi), *a = json_object_get(c, "arguments");
    for (int i = 0; i < gi; i++) {
        const json_t *m = gold_call(x, i), *ma = json_object_get(m, "arguments");
        if (!sget(m, "function") || !sget(c, "function") || strcmp(sget(m, "function"), sget(c, "function"))
            || json_object_size(ma) <= json_object_size(a)) continue;
        const char *k;
        json_t *v;
        int sub = 1;
        json_object_foreach((json_t *)a, k, v) sub &= json_equal(v, json_object_get(ma, k));
        if (sub) return i;
    }
    return -1;
}

/* Another main call of gi's function answered (the other product of a
 * comparison). */
static int sibling_answered(const run *x, int gi)
{
    const char *fn = sget(gold_call(x, gi), "function");
    for (int i = 0; i < x->ncalls; i++)
        if (i != gi && x->results[i] && main_call(x, i) < 0 && fn && sget(gold_call(x, i), "function")
            && !strcmp(fn, sget(gold_call(x, i), "function"))) return 1;
    return 0;
}

/* What gold call gi was for, in the viewer's terms ("the price", "the
 * stock"), from the first of these bank keys that exists:
 * what_FUNCTION_other for a supporting call whose main call answered
 * ("the other options"), what_INTENT_FUNCTION_partial where another call
 * of the function answered ("the other price"), what_INTENT_FUNCTION,
 * what_FUNCTION; else "that".  *key receives the key, so that two calls
 * for the same thing are named once.  NULL: nothing to name (a supporting
 * call whose main call failed too, named by it). */
static const char *what_of(run *x, int gi, int shortest, char *key, size_t kn)
{
    const char *fn = sget(gold_call(x, gi), "function") ? sget(gold_call(x, gi), "function") : "";
    const char *in = sget(x->task, "intent") ? sget(x->task, "intent") : "";
    int m = main_call(x, gi);
    if (m >= 0 && !x->results[m]) return NULL;
    for (int k = 0; k < 4; k++) {
        if (k == 0 && m >= 0) snprintf(key, kn, "what_%s_other", fn);
        else if (k == 1 && m < 0 && sibling_answered(x, gi)) snprintf(key, kn, "what_%s_%s_partial", in, fn);
        else if (k == 2) snprintf(key, kn, "what_%s_%s", in, fn);
        else if (k == 3) snprintf(key, kn, "what_%s", fn);
        else continue;
        const json_t *l = bank_list(x->t->replies, key);
        if (!l) continue;
        if (!shortest) return bank_pick(x->t->replies, key, x->r);
        const char *best = NULL;
        size_t i;
        json_t *w;
        json_array_foreach(l, i, w)
            if (!best || strlen(json_string_value(w)) < strlen(best)) best = json_string_value(w);
        return best;
    }
    snprintf(key, kn, "what");
    return "that";
}

/* The things the calls marked in flag[] were for, each named once and
 * joined with "and" ("the price and the stock"), in their shortest words
 * if asked; NULL when none is. */
static char *whats(run *x, const int *flag, int shortest)
{
    char keys[MAX_CALLS][96];
    int nk = 0;
    sbuf b;
    sbuf_init(&b);
    for (int gi = 0; gi < x->ncalls; gi++) {
        if (!flag[gi]) continue;
        const char *w = what_of(x, gi, shortest, keys[nk], sizeof keys[nk]);
        int seen = !w;
        for (int k = 0; k < nk; k++) seen |= !strcmp(keys[k], keys[nk]);
        if (seen) continue;
        if (nk++) sbuf_puts(&b, " and ");
        sbuf_puts(&b, w);
    }
    if (!nk) { sbuf_free(&b); return NULL; }
    return sbuf_detach(&b);
}

/* The part-reply bank for what answered main call gi returned
 * (part_price, part_stock_low, part_shipping ...), intent-specific first
 * (part_compare_price); NULL for a supporting call or a function with
 * none. */
static const char *part_key(run *x, int gi, const json_t *vars, char *buf, size_t n)
{
    const char *fn = sget(gold_call(x, gi), "function"), *base = NULL;
    char sk[64];
    if (!fn || main_call(x, gi) >= 0) return NULL;
    if (!strcmp(fn, "product.lookup")) base = json_object_get(vars, "flash_price") ? "part_price_flash" : "part_price";
    else if (!strcmp(fn, "inventory.check")) base = stock_key(vars, "part_", sk, sizeof sk);
    else if (!strcmp(fn, "shipping.estimate")) base = "part_shipping";
    if (!base) return NULL;
    snprintf(buf, n, "part_%s_%s", sget(x->task, "intent"), base + 5);
    if (bank_list(x->t->replies, buf)) return buf;
    snprintf(buf, n, "%s", base);
    return buf;
}

/* Every template of key, filled from vars (the ones whose slots all have
 * values), appended to the string array out. */
static void fill_all(run *x, const char *key, const json_t *vars, json_t *out)
{
    const json_t *list = bank_list(x->t->replies, key);
    size_t i;
    json_t *t;
    sbuf b;
    sbuf_init(&b);
    json_array_foreach(list, i, t) {
        sbuf_reset(&b);
        if (!bank_fill(&b, json_string_value(t), vars)) json_array_append_new(out, json_string(b.s));
    }
    sbuf_free(&b);
}

#define MAX_ALTS 64

/* Every "a, and b" of the strings of a and b; takes both references. */
static json_t *joined(json_t *a, json_t *b)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *u, *v;
    json_array_foreach(a, i, u)
        json_array_foreach(b, j, v)
            if (json_array_size(out) < MAX_ALTS)
                json_array_append_new(out, json_sprintf("%s, and %s", json_string_value(u), json_string_value(v)));
    json_decref(a);
    json_decref(b);
    return out;
}

/* A reply of key whose slots {answered} and {unanswered} take one of
 * ans[] (none when NULL) and gap[]: every pair in random order, the first
 * filled template that fits. */
static char *choose_parts(run *x, const limits *L, const char *key, json_t *vars, const json_t *ans, const json_t *gap)
{
    size_t na = ans ? json_array_size(ans) : 1, ng = json_array_size(gap), np = 0;
    size_t *pairs = xmalloc((na * ng + 1) * sizeof *pairs);
    for (size_t a = 0; a < na; a++)
        for (size_t g = 0; g < ng; g++) pairs[np++] = a * ng + g;
    rng_shuffle(x->r, pairs, np, sizeof pairs[0]);
    char *out = NULL;
    for (size_t i = 0; i < np && !out; i++) {
        if (ans) json_object_set(vars, "answered", json_array_get(ans, pairs[i] / ng));
        json_object_set(vars, "unanswered", json_array_get(gap, pairs[i] % ng));
        out = choose(x, L, key, vars);
    }
    free(pairs);
    return out;
}

/* One try at the reply below: with the answered parts ans (NULL: none),
 * the gaps in their shortest words if asked, and only the gaps of main
 * calls if asked (the other options of a variant go unsaid when its stock
 * does). */
static char *gap_reply(run *x, const limits *L, json_t *vars, const json_t *ans, int shortest, int mains)
{
    int failed[MAX_CALLS], missing[MAX_CALLS];
    for (int i = 0; i < x->ncalls; i++) {
        int gap = !x->results[i] && !(mains && main_call(x, i) >= 0);
        failed[i] = gap && !x->missing[i];
        missing[i] = gap && x->missing[i];
    }
    char *wf = whats(x, failed, shortest), *wm = whats(x, missing, shortest), *text = NULL;
    if (!wf && !wm) return NULL;
    if (!ans && !(wf && wm)) {
        /* nothing to give and one kind of gap: a whole reply says it */
        json_object_set_new(vars, "what", json_string(wf ? wf : wm));
        text = choose(x, L, wf ? "fault" : "unavailable", vars);
    } else {
        json_t *gf = NULL, *gm = NULL;
        if (wf) { json_object_set_new(vars, "what", json_string(wf)); fill_all(x, "part_fault", vars, gf = json_array()); }
        if (wm) { json_object_set_new(vars, "what", json_string(wm)); fill_all(x, "part_unavailable", vars, gm = json_array()); }
        json_t *gap = gf && gm ? joined(gf, gm) : gf ? gf : gm;
        text = choose_parts(x, L, ans ? "partial" : "unanswered", vars, ans, gap);
        json_decref(gap);
    }
    free(wf);
    free(wm);
    return text;
}

/* A needed call failed for good, or no tool of the harness serves it: the
 * reply gives what the other calls returned, then says plainly what could
 * not be checked ("couldn't check the stock just now" after a fault,
 * "can't check delivery times on this stream" where no tool serves it).
 * It names no cause the tool did not report (a slow system, an outage),
 * asks nobody to try again, and blames no fault where none happened.
 * Where that is too long for the harness's limits: the same in the
 * shortest words, then the gaps alone (of the main calls, then of all). */
static char *unanswered_reply(run *x, const limits *L, json_t *vars)
{
    char key[64], pk[96];
    reply_vars(x, vars, key, sizeof key);              /* slots from what did answer */
    json_t *ans = NULL;
    for (int i = 0; i < x->ncalls; i++) {
        const char *k = x->results[i] ? part_key(x, i, vars, pk, sizeof pk) : NULL;
        if (!k) continue;
        json_t *a = json_array();
        fill_all(x, k, vars, a);
        if (!json_array_size(a)) json_decref(a);
        else ans = ans ? joined(ans, a) : a;
    }
    char *text = gap_reply(x, L, vars, ans, 0, 0);
    if (!text) text = gap_reply(x, L, vars, ans, 1, 0);
    if (!text) text = gap_reply(x, L, vars, NULL, 0, 1);
    if (!text) text = gap_reply(x, L, vars, NULL, 1, 1);
    if (!text) text = gap_reply(x, L, vars, NULL, 1, 0);
    json_decref(ans);
    return text;
}

static char *compose_reply(run *x, const limits *L)
{
    json_t *vars = json_object();
    json_object_set(vars, "nick", json_object_get(json_object_get(x->task, "viewer"), "nick"));
    int gaps = 0;
    for (int i = 0; i < x->ncalls; i++) gaps |= !x->results[i];
    char key[64], *text;
    if (gaps) text = unanswered_reply(x, L, vars);
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
    int reply_skill = 0;
    size_t ni;
    json_t *nm;
    json_array_foreach(names, ni, nm) reply_skill |= is_reply(harness_skill_by_name(x.h, json_string_value(nm)));
    turn *first = new_turn(&x, think);
    load_skills(&x, first, names);
    json_decref(names);
    int merged = ncalls > 0 && max_turns < 3 + ncalls;
    if (make_calls(&x, merged ? first : NULL, 1) < 0) { *err = xstrdup("too many calls or turns"); goto fail; }

    limits L = { x.lim.max_chars, x.lim.max_emoji, NULL, json_object_get(json_object_get(task, "gold"), "must_not") };
    L.banned = harness_compiled_banned(sim_compiled(s));
    char *text = compose_reply(&x, &L);
    if (!text && !reply_skill && harness_compiled_has_reply_skill(sim_compiled(s)))
        *err = xasprintf("the harness has no tool for this request (intent %s), nor a reply skill for it "
                         "or a general one (teacher/skills.json), and the teacher loads no unrelated one", intent);
    if (!text) { if (!*err) *err = xasprintf("no reply template fits (intent %s)", intent); goto fail; }
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
