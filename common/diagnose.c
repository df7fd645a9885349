/* diagnose.c — failures grouped by reason and harness element, and the
 * harness evolution check (diagnose.h). */
#include "diagnose.h"

#include "jsonl.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct diag {
    json_t *map;        /* data/eval/diagnose.json */
    int     max_ex;
    long    verdicts, failed;
    json_t *by_reason;  /* code → {"component","count","elements":{key:n},"examples":[...]} */
    json_t *by_elem;    /* key → {element..., "count","names":{},"reasons":{},"examples":[...]} */
};

diag *diag_new(int max_examples, char **err)
{
    char *p = hat_data_path("eval/diagnose.json");
    json_t *map = p ? json_load_path(p) : NULL;
    free(p);
    if (!json_is_object(json_object_get(map, "reasons"))) {
        json_decref(map);
        *err = xstrdup("data file eval/diagnose.json not found or without \"reasons\" (set HAT_DATA)");
        return NULL;
    }
    diag *d = xcalloc(1, sizeof *d);
    d->map = map;
    d->max_ex = max_examples;
    d->by_reason = json_object();
    d->by_elem = json_object();
    return d;
}

void diag_free(diag *d)
{
    if (!d) return;
    json_decref(d->map);
    json_decref(d->by_reason);
    json_decref(d->by_elem);
    free(d);
}

/* ---- finding elements ----------------------------------------------------------- */

/* Is w a whole word of s (words: letters, digits, '_', '.', '-')? */
static int has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    if (!n) return 0;
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w)) {
        int l = p == s || !(isalnum((unsigned char)p[-1]) || strchr("_.-", p[-1]));
        int r = !(isalnum((unsigned char)p[n]) || (p[n] && strchr("_.-", p[n])));
        if (l && r) return 1;
    }
    return 0;
}

/* The element of array (tools or skills) with key == val, or NULL. */
static const json_t *find_by(const json_t *arr, const char *key, const char *val)
{
    size_t i;
    json_t *x;
    if (!val) return NULL;
    json_array_foreach(arr, i, x)
        if (!strcmp(json_string_value(json_object_get(x, key)) ?: "", val)) return x;
    return NULL;
}

/* The element of arr whose function occurs as a word in s. */
static const json_t *find_function_in(const json_t *arr, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        const char *f = json_string_value(json_object_get(x, "function"));
        if (f && has_word(s, f)) return x;
    }
    return NULL;
}

static char *quoted(const char *s)
{
    const char *a = strchr(s, '\''), *b = a ? strchr(a + 1, '\'') : NULL;
    return b ? xstrndup(a + 1, (size_t)(b - a - 1)) : NULL;
}

static char *first_word(const char *s)
{
    size_t n = strcspn(s, " :(");
    return n ? xstrndup(s, n) : NULL;
}

static const char *last_word(const char *s)
{
    const char *sp = strrchr(s, ' ');
    return sp ? sp + 1 : s;
}

/* The block declaring a prompt parameter. */
static const char *param_block(const json_t *h, const char *param)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, b)
        if (json_object_get(json_object_get(b, "params"), param)) return json_string_value(json_object_get(b, "id"));
    return NULL;
}

/* A tool or skill element: keyed by function when known. */
static json_t *named_element(const char *kind, const json_t *x, const char *name, const char *function)
{
    if (x) {
        name = json_string_value(json_object_get(x, "name"));
        function = json_string_value(json_object_get(x, "function"));
    }
    json_t *e = json_pack("{s:s,s:s}", "key", "", "kind", kind);
    char *key = xasprintf("%s:%s", kind, function ? function : name ? name : "?");
    json_object_set_new(e, "key", json_string(key));
    free(key);
    if (function) json_object_set_new(e, "function", json_string(function));
    if (name) json_object_set_new(e, "name", json_string(name));
    return e;
}

json_t *diag_element(const diag *d, const char *code, const char *detail, const json_t *h, const char *intent)
{
    const json_t *rule = json_object_get(json_object_get(d->map, "reasons"), code);
    const char *kind = json_string_value(json_object_get(rule, "kind"));
    if (!detail) detail = "";
    if (!kind) return json_pack("{s:s,s:s}", "key", "unknown", "kind", "unknown");
    const char *by = json_string_value(json_object_get(rule, "by")) ?: "";
    const json_t *tools = json_object_get(h, "tools"), *skills = json_object_get(h, "skills");
    const json_t *arr = !strcmp(kind, "tool") ? tools : skills;
    if (!strcmp(kind, "tool") || !strcmp(kind, "skill")) {
        const char *fn = json_string_value(json_object_get(rule, "function"));
        if (fn) return named_element(kind, find_by(arr, "function", fn), NULL, fn);
        if (!strcmp(by, "intent")) {
            fn = intent ? json_string_value(json_object_get(json_object_get(d->map, "intent_skill"), intent)) : NULL;
            return named_element(kind, find_by(arr, "function", fn), NULL, fn ? fn : "?");
        }
        if (!strcmp(by, "name") || !strcmp(by, "quoted")) {
            char *n = !strcmp(by, "name") ? first_word(detail) : quoted(detail);
            json_t *e = named_element(kind, find_by(arr, "name", n), n, NULL);
            free(n);
            return e;
        }
        /* function or skill_function: a function named in the detail */
        const char *after = json_string_value(json_object_get(rule, "after"));
        const char *s = after && strstr(detail, after) ? strstr(detail, after) + strlen(after) : detail;
        const json_t *x = find_function_in(arr, s);
        if (x) return named_element(kind, x, NULL, NULL);
        char *w = first_word(last_word(s));
        json_t *e = named_element(kind, NULL, NULL, w);
        free(w);
        return e;
    }
    if (!strcmp(kind, "prompt")) {
        const char *param = json_string_value(json_object_get(rule, "param"));
        const char *block = param ? param_block(h, param) : json_string_value(json_object_get(rule, "block"));
        char *key = xasprintf("prompt:%s%s%s", block ? block : "?", param ? "." : "", param ? param : "");
        json_t *e = json_pack("{s:s,s:s}", "key", key, "kind", "prompt");
        if (block) json_object_set_new(e, "block", json_string(block));
        if (param) json_object_set_new(e, "param", json_string(param));
        free(key);
        return e;
    }
    const char *name = json_string_value(json_object_get(rule, "name"));
    if (!strcmp(by, "hook_in_detail")) name = last_word(detail);
    char *key = name ? xasprintf("%s:%s", kind, name) : xstrdup(kind);
    json_t *e = json_pack("{s:s,s:s}", "key", key, "kind", kind);
    if (name) json_object_set_new(e, "name", json_string(name));
    free(key);
    return e;
}

/* ---- grouping ----------------------------------------------------------------- */

static void count(json_t *obj, const char *key)
{
    json_object_set_new(obj, key, json_integer(json_integer_value(json_object_get(obj, key)) + 1));
}

static void example(const diag *d, json_t *g, const char *id, const char *code, const char *detail)
{
    json_t *ex = json_object_get(g, "examples");
    if ((int)json_array_size(ex) < d->max_ex)
        json_array_append_new(ex, json_pack("{s:s,s:s,s:s}", "id", id ? id : "", "code", code, "detail", detail ? detail : ""));
}

int diag_add(diag *d, const json_t *line, const json_t *h, char **err)
{
    *err = NULL;
    const json_t *v = json_object_get(line, "verdict");
    if (!json_is_object(v)) v = line;
    const json_t *pass = json_object_get(v, "pass"), *reasons = json_object_get(v, "reasons");
    if (!json_is_boolean(pass) || !json_is_array(reasons)) {
        *err = xstrdup("a verdict needs \"pass\" and \"reasons\" (judge(1), or rollout --judge)");
        return -1;
    }
    d->verdicts++;
    if (json_is_true(pass)) return 0;
    d->failed++;
    const char *id = json_string_value(json_object_get(line, "id"));
    const char *intent = json_string_value(json_object_get(line, "intent"));
    if (!intent) intent = json_string_value(json_object_get(json_object_get(line, "meta"), "intent"));
    size_t i;
    json_t *r;
    json_array_foreach(reasons, i, r) {
        const char *code = json_string_value(json_object_get(r, "code")) ?: "?";
        const char *detail = json_string_value(json_object_get(r, "detail"));
        json_t *e = diag_element(d, code, detail, h, intent);
        const char *ekey = json_string_value(json_object_get(e, "key"));
        json_t *g = json_object_get(d->by_reason, code);
        if (!g) {
            g = json_pack("{s:s,s:s,s:O,s:i,s:{},s:[]}", "group", "reason", "key", code, "component",
                          json_object_get(r, "component") ?: json_null(), "count", 0, "elements", "examples");
            json_object_set_new(d->by_reason, code, g);
        }
        count(g, "count");
        count(json_object_get(g, "elements"), ekey);
        example(d, g, id, code, detail);
        json_t *ge = json_object_get(d->by_elem, ekey);
        if (!ge) {
            ge = json_deep_copy(e);
            json_object_del(ge, "name");
            json_object_set_new(ge, "group", json_string("element"));
            json_t *fresh = json_pack("{s:i,s:{},s:{},s:[]}", "count", 0, "names", "reasons", "examples");
            json_object_update(ge, fresh);
            json_decref(fresh);
            json_object_set_new(d->by_elem, ekey, ge);
        }
        count(ge, "count");
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (nm) count(json_object_get(ge, "names"), nm);
        count(json_object_get(ge, "reasons"), code);
        example(d, ge, id, code, detail);
        json_decref(e);
    }
    return 0;
}

static int by_count(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    long cx = (long)json_integer_value(json_object_get(x, "count")), cy = (long)json_integer_value(json_object_get(y, "count"));
    if (cx != cy) return cx > cy ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "key")), json_string_value(json_object_get(y, "key")));
}

/* The groups of obj sorted, with share = count / failed verdicts. */
static void append_sorted(json_t *out, const json_t *obj, long failed)
{
    size_t n = json_object_size(obj), i = 0;
    json_t **v = xmalloc((n + 1) * sizeof *v), *x;
    const char *k;
    json_object_foreach((json_t *)obj, k, x) v[i++] = x;
    qsort(v, n, sizeof *v, by_count);
    for (i = 0; i < n; i++) {
        json_t *g = json_deep_copy(v[i]);
        json_t *ex = json_incref(json_object_get(g, "examples"));
        json_object_del(g, "examples");   /* keep examples last */
        json_object_set_new(g, "share", json_real(failed ? (double)json_integer_value(json_object_get(g, "count")) / failed : 0));
        json_object_set_new(g, "examples", ex);
        json_array_append_new(out, g);
    }
    free(v);
}

json_t *diag_groups(const diag *d)
{
    json_t *out = json_array();
    json_array_append_new(out, json_pack("{s:s,s:I,s:I,s:f}", "group", "summary", "verdicts", (json_int_t)d->verdicts,
                                         "failed", (json_int_t)d->failed,
                                         "pass_rate", d->verdicts ? 1.0 - (double)d->failed / d->verdicts : 0.0));
    append_sorted(out, d->by_reason, d->failed);
    append_sorted(out, d->by_elem, d->failed);
    return out;
}

static void counts_text(sbuf *b, const json_t *obj)
{
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)obj, k, v) {
        sbuf_printf(b, "%s%s %lld", first ? "" : ", ", k, (long long)json_integer_value(v));
        first = 0;
    }
}

char *diag_text(const json_t *groups)
{
    sbuf b;
    sbuf_init(&b);
    size_t i;
    json_t *g;
    const char *last = "";
    json_array_foreach(groups, i, g) {
        const char *kind = json_string_value(json_object_get(g, "group"));
        if (!strcmp(kind, "summary")) {
            long n = (long)json_integer_value(json_object_get(g, "verdicts")), f = (long)json_integer_value(json_object_get(g, "failed"));
            sbuf_printf(&b, "%ld verdicts, %ld failed (%.1f%%)\n", n, f, n ? 100.0 * f / n : 0.0);
            continue;
        }
        if (strcmp(kind, last)) sbuf_printf(&b, "\nBy %s:\n", !strcmp(kind, "reason") ? "judge reason" : "harness element");
        last = kind;
        sbuf_printf(&b, "%6lld  %-28s ", (long long)json_integer_value(json_object_get(g, "count")),
                    json_string_value(json_object_get(g, "key")));
        if (!strcmp(kind, "reason")) {
            sbuf_printf(&b, "(%s) -> ", json_string_value(json_object_get(g, "component")) ?: "-");
            counts_text(&b, json_object_get(g, "elements"));
        } else {
            counts_text(&b, json_object_get(g, "reasons"));
            if (json_object_size(json_object_get(g, "names"))) {
                sbuf_puts(&b, "; names: ");
                counts_text(&b, json_object_get(g, "names"));
            }
        }
        sbuf_putc(&b, '\n');
        size_t j;
        json_t *ex;
        json_array_foreach(json_object_get(g, "examples"), j, ex)
            sbuf_printf(&b, "          e.g. %s: %s%s%s\n", json_string_value(json_object_get(ex, "id")),
                        strcmp(kind, "reason") ? json_string_value(json_object_get(ex, "code")) : "",
                        strcmp(kind, "reason") ? ": " : "", json_string_value(json_object_get(ex, "detail")));
    }
    return sbuf_detach(&b);
}

/* ---- the evolution check ------------------------------------------------------ */

/* Play the cases under h: pass[i] (1/0; -1 when the case has no task) and
 * reason counts.  0, or -1 with *err. */
static int play(const diag_evolve_opts *o, const json_t *cases, const json_t *h, int *pass,
                json_t *reasons, char **err)
{
    rollout *r = rollout_open(o->m, o->t, o->w, o->batch > 0 ? o->batch : 8, 0, o->dev, err);
    if (!r) return -1;
    rollout_set_judge(r, o->j);
    if (o->policy) rollout_set_policy(r, o->policy, o->policy_ctx);
    size_t n = json_array_size(cases), next = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) pass[i] = -1;
    while (!rc) {
        while (next < n) {   /* fill free places */
            const json_t *task = json_object_get(json_array_get(cases, next), "task");
            if (!json_is_object(task)) { next++; continue; }
            if (rollout_add(r, task, h, o->seed, next, &o->p, (void *)(intptr_t)next, err)) {
                if (*err) rc = -1;
                break;
            }
            next++;
        }
        if (rc) break;
        int running = rollout_step(r);
        for (rollout_result *x; (x = rollout_take(r)); rollout_result_free(x)) {
            size_t i = (size_t)(intptr_t)x->user;
            pass[i] = x->judged && x->verdict.pass;
            if (!x->judged) { count(reasons, x->finish == ROLLOUT_ERROR ? "rollout_error" : "not_judged"); continue; }
            if (!x->verdict.pass) {
                size_t k;
                json_t *re;
                json_array_foreach(x->verdict.reasons, k, re)
                    count(reasons, json_string_value(json_object_get(re, "code")) ?: "?");
            }
        }
        if (!running && !rollout_pending(r) && next >= n) break;
    }
    rollout_free(r);
    return rc;
}

static json_t *side(long played, long ok, json_t *reasons)
{
    return json_pack("{s:I,s:I,s:f,s:o}", "pass", (json_int_t)ok, "errors", (json_int_t)(played - ok),
                     "error_rate", played ? (double)(played - ok) / played : 0.0, "reasons", reasons);
}

json_t *diag_evolve(const diag_evolve_opts *o, const json_t *cases, const json_t *h,
                    const json_t *edited, char **err)
{
    *err = NULL;
    size_t n = json_array_size(cases);
    int *a = xcalloc(n + 1, sizeof *a), *b = xcalloc(n + 1, sizeof *b);
    json_t *ra = json_object(), *rb = json_object(), *out = NULL;
    if (play(o, cases, h, a, ra, err) || play(o, cases, edited, b, rb, err)) {
        json_decref(ra);
        json_decref(rb);
        goto done;
    }
    long played = 0, pa = 0, pb = 0, fixed = 0, broken = 0;
    json_t *per = json_array();
    for (size_t i = 0; i < n; i++) {
        if (a[i] < 0) continue;
        played++;
        pa += a[i];
        pb += b[i];
        fixed += !a[i] && b[i];
        broken += a[i] && !b[i];
        json_array_append_new(per, json_pack("{s:O,s:b,s:b}", "id", json_object_get(json_array_get(cases, i), "id") ?: json_null(),
                                             "before", a[i], "after", b[i]));
    }
    long ea = played - pa, eb = played - pb;
    out = json_pack("{s:I,s:o,s:o,s:o,s:I,s:I,s:o}", "cases", (json_int_t)played, "before", side(played, pa, ra),
                    "after", side(played, pb, rb),
                    "error_reduction", ea ? json_real((double)(ea - eb) / ea) : json_null(),
                    "fixed", (json_int_t)fixed, "broken", (json_int_t)broken, "per_case", per);
done:
    free(a);
    free(b);
    return out;
}
