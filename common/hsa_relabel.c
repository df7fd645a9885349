/* hsa_relabel.c — keep a trajectory correct under an augmented harness.
 *
 * Two passes over the messages (man 5 traj.jsonl conventions):
 *   hsa_needs_scan  what the trajectory needs from its old harness: the
 *                   skills it loads, the final reply's length and emoji,
 *                   calls and turns per viewer message, retries made
 *                   (the pruned ones too, from meta.recovery);
 *   hsa_relabel     rewrite every surface form from the old harness to the
 *                   new one: tool-call names and argument keys (by
 *                   x-function), loader calls and the skill texts they
 *                   return, tool-response envelopes and error texts (unwrap
 *                   with the old harness, wrap with the new), hook messages
 *                   (the old template is matched to recover its values,
 *                   the new one filled with them), names in reasoning. */
#include "hsa.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ---- what a trajectory needs ---------------------------------------------- */

/* Arguments as an object, whether stored as one or as JSON text. */
static json_t *call_args(const json_t *fn)
{
    json_t *a = json_object_get(fn, "arguments");
    if (json_is_object(a)) return json_incref(a);
    if (json_is_string(a)) {
        json_t *p = json_loads(json_string_value(a), 0, NULL);
        if (json_is_object(p)) return p;
        json_decref(p);
    }
    return json_object();
}

static void add_gold(json_t *set, const json_t *g)
{
    if (json_is_string(g)) json_object_set_new(set, json_string_value(g), json_true());
    size_t i;
    json_t *e;
    json_array_foreach(g, i, e)
        if (json_is_string(e)) json_object_set_new(set, json_string_value(e), json_true());
}

/* Is a failed call's error one the harness retries?  Read the fault code
 * back out of the error text with the harness's error_format. */
static int retryable(const json_t *h, const char *errtext)
{
    json_t *hooks = json_object_get(h, "hooks");
    const char *fmt = str(hooks, "error_format");
    json_t *vars = json_object();
    int yes = 0;
    if (fmt && hsa_template_match(fmt, errtext, vars) && str(vars, "code")) {
        const char *code = str(vars, "code");
        const json_t *codes = json_object_get(harness_functions(), "fault_codes");
        const char *fault;
        json_t *v;
        json_object_foreach((json_t *)codes, fault, v) {
            char buf[32];
            snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            if (!code || strcmp(code, buf)) continue;
            size_t i;
            json_t *f;
            json_array_foreach(json_object_get(json_object_get(hooks, "tool_retry"), "retry_on"), i, f)
                yes |= json_is_string(f) && !strcmp(json_string_value(f), fault);
        }
    } else {
        yes = 1;   /* unknown error or no code: assume the runtime retried it */
    }
    json_decref(vars);
    return yes;
}

typedef struct {
    json_t *fails;   /* call key → consecutive failures */
    json_t *last_failed;  /* call key → true while its last response was a retryable error */
    json_t *pending;      /* keys of calls awaiting their response, in order */
} retry_track;

static void track_response(hsa_needs *n, retry_track *t, const json_t *h, const char *content)
{
    if (!json_array_size(t->pending)) return;
    char *key = xstrdup(json_string_value(json_array_get(t->pending, 0)));
    json_array_remove(t->pending, 0);
    json_t *res = NULL;
    char *err = NULL;
    int u = harness_unwrap(h, content, &res, &err);
    if (u == 0 && retryable(h, err)) json_object_set_new(t->last_failed, key, json_true());
    else json_object_del(t->last_failed, key);
    json_decref(res);
    free(err);
    free(key);
    (void)n;
}

static void track_call(hsa_needs *n, retry_track *t, const char *key)
{
    if (json_object_get(t->last_failed, key)) {
        json_int_t f = json_integer_value(json_object_get(t->fails, key)) + 1;
        json_object_set_new(t->fails, key, json_integer(f));
        if (f > n->retries) n->retries = (int)f;
    }
    json_array_append_new(t->pending, json_str(key));
}

/* Retries the messages do not show.  The scripted teacher prunes the
 * failed attempts of a call a retry recovered; the judge replays them
 * silently, so they count against max_retries and max_tool_calls as if
 * they were there.  meta.recovery has them per call (attempts, pruned);
 * an older record with only meta.pruned is read as one call. */
static void hidden_retries(hsa_needs *n, const json_t *meta)
{
    const json_t *rv = json_object_get(meta, "recovery");
    long pruned = 0;
    size_t i;
    json_t *e;
    json_array_foreach(rv, i, e) {
        json_int_t a = json_integer_value(json_object_get(e, "attempts"));
        if (a - 1 > n->retries) n->retries = (int)(a - 1);
        pruned += (long)json_integer_value(json_object_get(e, "pruned"));
    }
    if (!json_array_size(rv)) {
        pruned = (long)json_integer_value(json_object_get(meta, "pruned"));
        if (pruned > n->retries) n->retries = (int)pruned;
    }
    if (pruned > 0) n->tool_calls += (int)pruned;
}

int hsa_needs_scan(hsa_needs *n, const json_t *rec, const json_t *h, const char **why)
{
    memset(n, 0, sizeof *n);
    n->keep_skills = json_object();
    n->keep_functions = json_object();
    n->reply_chars = n->reply_emoji = -1;
    add_gold(n->keep_functions, json_object_get(json_object_get(rec, "gold"), "skill"));
    add_gold(n->keep_functions,
             json_object_get(json_object_get(json_object_get(rec, "task"), "gold"), "skill"));
    add_gold(n->keep_functions, json_object_get(json_object_get(rec, "meta"), "gold_skill"));
    const char *loader = harness_loader_name(h), *arg = harness_loader_argument(h);
    retry_track t = { json_object(), json_object(), json_array() };
    const json_t *final = NULL;
    int calls = 0, turns = 0;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(rec, "messages"), i, m) {
        const char *role = str(m, "role"), *hook = str(m, "hook");
        if (!role) { *why = "a message has no \"role\""; goto bad; }
        if (!strcmp(role, "user")) {
            if (!hook || !strcmp(hook, "input_check")) calls = turns = 0;
            if (hook && !strcmp(hook, "reply_format")) n->format_rejected = 1;
        } else if (!strcmp(role, "assistant")) {
            if (++turns > n->turns) n->turns = turns;
            json_t *tcs = json_object_get(m, "tool_calls");
            if (!json_array_size(tcs) && json_is_string(json_object_get(m, "content"))) final = m;
            size_t j;
            json_t *tc;
            json_array_foreach(tcs, j, tc) {
                json_t *fn = json_object_get(tc, "function");
                const char *name = str(fn, "name");
                if (!name) { *why = "a tool call has no function name"; goto bad; }
                if (++calls > n->tool_calls) n->tool_calls = calls;
                json_t *args = call_args(fn);
                if (loader && arg && !strcmp(name, loader) && str(args, arg))
                    json_object_set_new(n->keep_skills, str(args, arg), json_true());
                char *a = json_compact(args), *key = xasprintf("%s %s", name, a);
                track_call(n, &t, key);
                free(a); free(key);
                json_decref(args);
            }
        } else if (!strcmp(role, "tool")) {
            const char *c = str(m, "content");
            if (!hook && c) track_response(n, &t, h, c);
            else if (json_array_size(t.pending)) json_array_remove(t.pending, 0);
        }
    }
    /* A call left failing was given up.  With retries to spare under the
     * old max_retries it was the call or turn budget that stopped it: the
     * trajectory is right only while that budget stays spent. */
    json_int_t maxr = json_integer_value(json_object_get(
        json_object_get(json_object_get(h, "hooks"), "tool_retry"), "max_retries"));
    const char *k;
    json_t *v;
    json_object_foreach(t.last_failed, k, v) {
        n->gave_up = 1;
        if (json_integer_value(json_object_get(t.fails, k)) < maxr) n->budget_spent = 1;
    }
    hidden_retries(n, json_object_get(rec, "meta"));
    if (final) {
        /* the measure and the limits the simulator and the judge use */
        harness_measure m;
        harness_limits L;
        harness_measure_text(str(final, "content"), &m);
        harness_resolve_limits(h, &L);
        n->reply_chars = (int)m.chars;
        n->reply_emoji = (int)m.emoji;
        if (L.max_chars >= 0 && m.chars > L.max_chars) n->final_over = 1;
        if (L.max_emoji >= 0 && m.emoji > L.max_emoji) n->final_over = 1;
    }
    json_decref(t.fails); json_decref(t.last_failed); json_decref(t.pending);
    return 0;
bad:
    json_decref(t.fails); json_decref(t.last_failed); json_decref(t.pending);
    hsa_needs_free(n);
    return -1;
}

void hsa_needs_free(hsa_needs *n)
{
    json_decref(n->keep_skills);
    json_decref(n->keep_functions);
    n->keep_skills = n->keep_functions = NULL;
}

/* ---- relabelling ------------------------------------------------------------ */

typedef struct {
    const json_t *oldh, *newh, *skill_map;
    const char *old_loader, *new_loader, *old_arg, *new_arg;
    json_t *names;        /* old tool/skill/loader name → new, for reasoning */
    json_t *pending;      /* old names of calls awaiting a response: [tool, skill] */
    const char *why;
} relabel;

static const char *new_skill_name(const relabel *R, const char *old)
{
    const char *n = str(R->skill_map, old);
    return n ? n : old;
}

/* The new name of a tool called `old`, or NULL (unknown tool). */
static const json_t *new_tool(const relabel *R, const char *old, const json_t **oldtool)
{
    const json_t *t = harness_tool_by_name(R->oldh, old);
    *oldtool = t;
    return t ? harness_tool_by_function(R->newh, str(t, "function")) : NULL;
}

static json_t *rename_args(relabel *R, const json_t *args, const json_t *ot, const json_t *nt)
{
    json_t *out = json_object();
    const json_t *oprops = json_object_get(json_object_get(ot, "parameters"), "properties");
    const json_t *nprops = json_object_get(json_object_get(nt, "parameters"), "properties");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v) {
        const char *xf = str(json_object_get(oprops, k), "x-function");
        const char *nk = xf ? harness_param_name_for(nt, xf) : NULL;
        if (!nk) {   /* an invalid key: keep it, unless it now means something */
            if (json_object_get(nprops, k) && !R->why)
                R->why = "an unknown argument key became a parameter of the new harness";
            nk = k;
        }
        json_object_set(out, nk, v);
    }
    return out;
}

static void relabel_call(relabel *R, json_t *fn)
{
    const char *name = str(fn, "name");
    int was_string = json_is_string(json_object_get(fn, "arguments"));
    json_t *args = call_args(fn), *nargs = NULL;
    json_t *pend = json_array();
    if (R->old_loader && !strcmp(name, R->old_loader)) {
        nargs = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(args, k, v) {
            if (R->old_arg && !strcmp(k, R->old_arg)) {
                const char *s = json_string_value(v);
                json_array_append_new(pend, json_str(s ? s : ""));
                json_object_set_new(nargs, R->new_arg,
                                    s ? json_str(new_skill_name(R, s)) : json_incref(v));
            } else {
                json_object_set(nargs, k, v);
            }
        }
        json_array_insert_new(pend, 0, json_str(name));
        json_object_set_new(fn, "name", json_str(R->new_loader));
    } else {
        const json_t *ot, *nt = new_tool(R, name, &ot);
        json_array_append_new(pend, json_str(name));
        if (nt) {
            nargs = rename_args(R, args, ot, nt);
            json_object_set_new(fn, "name", json_str(str(nt, "name")));
        } else if ((harness_tool_by_name(R->newh, name) || !strcmp(name, R->new_loader)) &&
                   !R->why) {
            R->why = "a call of an unknown tool now names a tool of the new harness";
        }
    }
    json_array_append_new(R->pending, pend);
    if (nargs) {
        if (was_string) {
            char *s = json_compact(nargs);
            json_object_set_new(fn, "arguments", json_str(s));
            free(s);
            json_decref(nargs);
        } else {
            json_object_set_new(fn, "arguments", nargs);
        }
    }
    json_decref(args);
}

/* Re-render an error text of the old harness with the new error_format. */
static char *reformat_error(relabel *R, const char *err, const char *newtool)
{
    const char *of = str(json_object_get(R->oldh, "hooks"), "error_format");
    const char *nf = str(json_object_get(R->newh, "hooks"), "error_format");
    if (!of || !nf || !strcmp(of, nf)) {
        json_t *vars = json_object();
        char *out = NULL;
        if (of && hsa_template_match(of, err, vars) && str(vars, "tool")) {
            json_object_set_new(vars, "tool", json_str(newtool));
            out = harness_fill(nf, vars);
        }
        json_decref(vars);
        return out ? out : xstrdup(err);
    }
    json_t *vars = json_object();
    char *out = NULL;
    if (hsa_template_match(of, err, vars)) {
        json_object_set_new(vars, "tool", json_str(newtool));
        out = harness_fill(nf, vars);
    } else if (!R->why) {
        R->why = "a tool error does not match the harness's error_format";
    }
    json_decref(vars);
    return out ? out : xstrdup(err);
}

static void relabel_tool_result(relabel *R, json_t *m, const char *oldname, const char *newname)
{
    const char *content = str(m, "content");
    if (!content) return;
    json_t *res = NULL;
    char *err = NULL;
    int u = harness_unwrap(R->oldh, content, &res, &err);
    char *text = NULL;
    if (u == 1) {
        text = harness_wrap_result(R->newh, res);
    } else if (u == 0) {
        char *f = reformat_error(R, err, newname);
        text = harness_wrap_error(R->newh, f);
        free(f);
    } else if (!R->why) {
        R->why = "a tool response is not an envelope of the harness";
    }
    if (text) json_object_set_new(m, "content", json_str(text));
    free(text);
    json_decref(res);
    free(err);
    (void)oldname;
}

static void relabel_loader_result(relabel *R, json_t *m, const char *oldskill)
{
    const json_t *os = harness_skill_by_name(R->oldh, oldskill);
    const json_t *ns = harness_skill_by_name(R->newh, new_skill_name(R, oldskill));
    if (!os) return;   /* a load of a skill that never existed: its answer stays */
    if (!ns) { if (!R->why) R->why = "a loaded skill is missing from the new harness"; return; }
    char *text = harness_skill_text(R->newh, ns);
    json_object_set_new(m, "content", json_str(text));
    free(text);
}

/* Re-render a hook message: recover the old template's values, map the
 * surface names among them, fill the new template. */
static char *rerender(relabel *R, const char *hook, const char *field, const char *text,
                      const char *tool_old)
{
    const char *ot = str(json_object_get(json_object_get(R->oldh, "hooks"), hook), field);
    json_t *vars = json_object();
    if (!ot || !hsa_template_match(ot, text, vars)) {
        json_decref(vars);
        if (!R->why) R->why = "a hook message does not match the harness's template";
        return NULL;
    }
    if (str(vars, "loader")) json_object_set_new(vars, "loader", json_str(R->new_loader));
    if (str(vars, "tool")) {
        const json_t *ot2, *nt = new_tool(R, str(vars, "tool"), &ot2);
        if (nt) json_object_set_new(vars, "tool", json_str(str(nt, "name")));
        else if (R->old_loader && !strcmp(str(vars, "tool"), R->old_loader))
            json_object_set_new(vars, "tool", json_str(R->new_loader));
    }
    if (str(vars, "error") && tool_old) {   /* schema errors name parameters */
        const json_t *ot2, *nt = new_tool(R, tool_old, &ot2);
        char *e = xstrdup(str(vars, "error"));
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(ot2, "parameters"), "properties"), k, v) {
            const char *nk = nt ? harness_param_name_for(nt, str(v, "x-function")) : NULL;
            if (!nk || !strcmp(nk, k)) continue;
            char *e2 = hsa_replace_word(e, k, nk);
            free(e);
            e = e2;
        }
        json_object_set_new(vars, "error", json_str(e));
        free(e);
    }
    char *out = harness_hook_message(R->newh, hook, field, vars);
    json_decref(vars);
    return out;
}

static void relabel_hook_user(relabel *R, json_t *m, const char *hook)
{
    const char *content = str(m, "content");
    if (!content) return;
    if (!strcmp(hook, "input_check")) {   /* the note follows the viewer's text */
        const char *om = str(json_object_get(json_object_get(R->oldh, "hooks"), hook), "message");
        const char *nm = str(json_object_get(json_object_get(R->newh, "hooks"), hook), "message");
        size_t cl = strlen(content), ol = om ? strlen(om) : 0;
        if (!om || !nm || cl < ol + 2 || strcmp(content + cl - ol, om) ||
            strncmp(content + cl - ol - 2, "\n\n", 2)) {
            if (!R->why) R->why = "an input_check note does not match the harness's message";
            return;
        }
        char *s = xasprintf("%.*s%s", (int)(cl - ol), content, nm);
        json_object_set_new(m, "content", json_str(s));
        free(s);
        return;
    }
    const char *field = !strcmp(hook, "reply_filter") ? "on_violation" : "message";
    char *s = rerender(R, hook, field, content, NULL);
    if (s) json_object_set_new(m, "content", json_str(s));
    free(s);
}

static void relabel_tool_msg(relabel *R, json_t *m)
{
    json_t *pend = json_array_get(R->pending, 0);
    json_incref(pend);
    if (pend) json_array_remove(R->pending, 0);
    const char *name = str(m, "name"), *hook = str(m, "hook");
    if (!name) name = json_string_value(json_array_get(pend, 0));
    if (!name) { json_decref(pend); return; }
    char *old = xstrdup(name);
    const char *newname = old;
    int is_loader = R->old_loader && !strcmp(old, R->old_loader);
    const json_t *ot, *nt = is_loader ? NULL : new_tool(R, old, &ot);
    if (is_loader) newname = R->new_loader;
    else if (nt) newname = str(nt, "name");
    if (json_object_get(m, "name")) json_object_set_new(m, "name", json_str(newname));
    if (hook && !strcmp(hook, "tool_args_check")) {
        char *s = rerender(R, hook, "message", str(m, "content") ? str(m, "content") : "", old);
        if (s) json_object_set_new(m, "content", json_str(s));
        free(s);
    } else if (is_loader) {
        const char *skill = json_string_value(json_array_get(pend, 1));
        if (skill) relabel_loader_result(R, m, skill);
    } else if (nt) {
        relabel_tool_result(R, m, old, newname);
    }
    free(old);
    json_decref(pend);
}

static void relabel_reasoning(relabel *R, json_t *m)
{
    const char *rc = str(m, "reasoning_content");
    if (!rc) return;
    char *s = xstrdup(rc);
    const char *k;
    json_t *v;
    json_object_foreach(R->names, k, v) {
        char *s2 = hsa_replace_word(s, k, json_string_value(v));
        free(s);
        s = s2;
    }
    json_object_set_new(m, "reasoning_content", json_str(s));
    free(s);
}

/* old → new for every renamed tool, skill and the loader.  Names that are
 * swapped among themselves would need two-phase replacement; a rename
 * target is always a fresh name, so one pass in any order is exact unless
 * a new name equals another old one — then reasoning is left alone. */
static json_t *name_map(const relabel *R)
{
    json_t *m = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(R->oldh, "tools"), i, t) {
        const json_t *nt = harness_tool_by_function(R->newh, str(t, "function"));
        const char *on = str(t, "name"), *nn = nt ? str(nt, "name") : NULL;
        if (on && nn && strcmp(on, nn))   /* nameless tools (bad inline harness) skipped */
            json_object_set_new(m, on, json_str(nn));
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)R->skill_map, k, v) json_object_set(m, k, v);
    if (strcmp(R->old_loader, R->new_loader))
        json_object_set_new(m, R->old_loader, json_str(R->new_loader));
    json_object_foreach(m, k, v) {
        if (json_object_get(m, json_string_value(v))) {
            json_decref(m);
            return json_object();
        }
    }
    return m;
}

int hsa_relabel(json_t *messages, const json_t *oldh, const json_t *newh,
                const json_t *skill_map, const char **why)
{
    json_t *empty = json_object();
    relabel R = {
        .oldh = oldh, .newh = newh, .skill_map = skill_map ? skill_map : empty,
        .old_loader = harness_loader_name(oldh), .new_loader = harness_loader_name(newh),
        .old_arg = harness_loader_argument(oldh), .new_arg = harness_loader_argument(newh),
        .pending = json_array(),
    };
    if (!R.old_loader) R.old_loader = "";
    if (!R.new_loader) R.new_loader = R.old_loader;
    if (!R.new_arg) R.new_arg = R.old_arg ? R.old_arg : "skill";
    R.names = name_map(&R);
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        const char *role = str(m, "role"), *hook = str(m, "hook");
        if (!role) continue;
        if (!strcmp(role, "assistant")) {
            size_t j;
            json_t *tc;
            json_array_foreach(json_object_get(m, "tool_calls"), j, tc) {
                json_t *fn = json_object_get(tc, "function");
                if (str(fn, "name")) relabel_call(&R, fn);
            }
            relabel_reasoning(&R, m);
        } else if (!strcmp(role, "tool")) {
            relabel_tool_msg(&R, m);
        } else if (!strcmp(role, "user") && hook) {
            relabel_hook_user(&R, m, hook);
        }
    }
    json_decref(R.names);
    json_decref(R.pending);
    json_decref(empty);
    *why = R.why;
    return R.why ? -1 : 0;
}
