/* harness_compile.c — the compiled harness (see harness_compile.h): lint,
 * the content hash, indexes by name and function, resolved limits, and the
 * one reply measure every stage counts characters and emoji with. */
#include "harness_compile.h"
#include "harness.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- the reply measure ------------------------------------------------------ */

/* What one grapheme cluster holds, as the emoji rule needs it. */
typedef struct { int pict, text_pict, fe0f, keycap, ri; } cluster;

static int cluster_is_emoji(const cluster *k)
{
    return k->pict || (k->text_pict && k->fe0f) || k->keycap || k->ri >= 2;
}

static void cluster_add(cluster *k, utf8proc_int32_t c)
{
    int bc = utf8proc_get_property(c)->boundclass;
    /* Extended_Pictographic below U+2190 (©, ®, ‼, ™, ...) shows as text
     * unless U+FE0F asks for the emoji form. */
    if (bc == UTF8PROC_BOUNDCLASS_EXTENDED_PICTOGRAPHIC) {
        if (c >= 0x2190) k->pict = 1;
        else k->text_pict = 1;
    }
    if (bc == UTF8PROC_BOUNDCLASS_REGIONAL_INDICATOR) k->ri++;
    if (c == 0xFE0F) k->fe0f = 1;
    if (c == 0x20E3) k->keycap = 1;
}

void harness_measure_text(const char *text, harness_measure *m)
{
    m->chars = m->emoji = m->invalid = 0;
    if (!text) return;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)text;
    utf8proc_int32_t prev = 0, state = 0, c;
    cluster k = { 0 };
    int open = 0;                      /* a cluster has begun */
    int clean = 1;                     /* k is all zero: no emoji, nothing to clear */
    while (*p) {
        /* ASCII, most of a reply, decoded here: what utf8proc_iterate gives */
        utf8proc_ssize_t n = *p < 0x80 ? (c = *p, 1) : utf8proc_iterate(p, -1, &c);
        if (n <= 0) {
            /* An invalid byte: one character (shown as U+FFFD) that ends
             * the cluster before it and is no emoji. */
            m->chars++;
            m->invalid++;
            p++;
            if (open && cluster_is_emoji(&k)) m->emoji++;
            memset(&k, 0, sizeof k);
            clean = 1;
            open = 0;
            state = 0;
            continue;
        }
        p += n;
        m->chars++;
        if (c < 0x80) {
            /* ASCII extends no cluster (but LF after CR): it ends the one
             * before and starts its own, which holds no pictograph */
            if (open && !(prev == '\r' && c == '\n') && !clean) {
                if (cluster_is_emoji(&k)) m->emoji++;
                memset(&k, 0, sizeof k);
                clean = 1;
            }
            state = 0;
            open = 1;
            prev = c;
            continue;
        }
        if (open && utf8proc_grapheme_break_stateful(prev, c, &state)) {
            if (cluster_is_emoji(&k)) m->emoji++;
            memset(&k, 0, sizeof k);
        }
        cluster_add(&k, c);
        clean = 0;
        open = 1;
        prev = c;
    }
    if (open && cluster_is_emoji(&k)) m->emoji++;
}

/* ---- limits ------------------------------------------------------------------ */

static long param_long(const json_t *h, const char *name)
{
    double v;
    return name && !harness_param(h, name, &v) ? (long)v : -1;
}

void harness_resolve_limits(const json_t *h, harness_limits *L)
{
    const json_t *hooks = json_object_get(h, "hooks");
    const json_t *rf = json_object_get(hooks, "reply_format");
    const char *pc = json_string_value(json_object_get(rf, "max_chars_param"));
    const char *pe = json_string_value(json_object_get(rf, "max_emoji_param"));
    L->max_chars = param_long(h, pc ? pc : "max_chars");
    L->max_emoji = param_long(h, pe ? pe : "max_emoji");
    L->max_tool_calls = param_long(h, "max_tool_calls");
    L->max_turns = param_long(h, "max_turns");
    const json_t *mr = json_object_get(json_object_get(hooks, "tool_retry"), "max_retries");
    L->max_retries = json_is_integer(mr) ? (long)json_integer_value(mr) : 0;
    L->format_hook = rf != NULL;
}

char *harness_limits_broken(const harness_limits *L, const char *text)
{
    if (L->max_chars < 0 && L->max_emoji < 0) return NULL;
    harness_measure m;
    harness_measure_text(text, &m);
    if (L->max_chars >= 0 && m.chars > L->max_chars)
        return xasprintf("%ld characters, at most %ld allowed", m.chars, L->max_chars);
    if (L->max_emoji >= 0 && m.emoji > L->max_emoji)
        return xasprintf("%ld emoji, at most %ld allowed", m.emoji, L->max_emoji);
    return NULL;
}

/* ---- the compiled view --------------------------------------------------------- */

typedef struct {
    const json_t *v;
    const char   *name, *function;
    harness_tool  tool;          /* tools only */
} entry;

typedef struct {
    entry  *e;
    size_t  n;
} index_t;

struct harness_compiled {
    json_t        *h;
    char          *canon;          /* compact, keys sorted: what the hash is of */
    size_t         canon_len;
    uint64_t       hash;
    harness_limits lim;
    index_t        tools, skills;
    const json_t  *hooks, *banned, *retry_on;
    const char    *loader, *loader_arg;
    int            has_reply_skill;
};

/* A tool's parameters.properties, in order, as read at each call. */
static void tool_params(harness_tool *t, const json_t *tool)
{
    const json_t *schema = json_object_get(tool, "parameters"), *props = json_object_get(schema, "properties");
    t->function = json_string_value(json_object_get(tool, "function"));
    t->required = json_object_get(schema, "required");
    t->nparams = json_object_size(props);
    harness_prop *p = t->nparams ? xcalloc(t->nparams, sizeof *p) : NULL;
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v)
        p[i++] = (harness_prop){ k, json_string_value(json_object_get(v, "type")),
                                  json_string_value(json_object_get(v, "x-function")),
                                  json_object_get(v, "minimum"), json_object_get(v, "maximum"),
                                  json_object_get(v, "enum") };
    t->params = p;
}

static void index_list(index_t *x, const json_t *list, int tools)
{
    x->n = json_array_size(list);
    x->e = xcalloc(x->n + 1, sizeof *x->e);
    for (size_t i = 0; i < x->n; i++) {
        const json_t *v = json_array_get(list, i);
        x->e[i] = (entry){ v, json_string_value(json_object_get(v, "name")),
                           json_string_value(json_object_get(v, "function")), { 0 } };
        if (tools) tool_params(&x->e[i].tool, v);
    }
}

/* The first entry whose name (by_function 0) or function matches. */
static const entry *find_entry(const index_t *x, const char *key, int by_function)
{
    if (!key) return NULL;
    for (size_t i = 0; i < x->n; i++) {
        const char *k = by_function ? x->e[i].function : x->e[i].name;
        if (k && !strcmp(k, key)) return &x->e[i];
    }
    return NULL;
}

static const json_t *find(const index_t *x, const char *key, int by_function)
{
    const entry *e = find_entry(x, key, by_function);
    return e ? e->v : NULL;
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 0x100000001b3ULL; }
    return h;
}

/* The lint errors of h as one message (NULL when none); warnings are
 * moved to *warnings. */
static char *lint_errors(const json_t *h, json_t **warnings)
{
    json_t *probs = harness_lint(h, NULL);
    size_t i, nerr = 0;
    json_t *p;
    char *first = NULL;
    json_array_foreach(probs, i, p) {
        const char *sev = json_string_value(json_object_get(p, "severity"));
        if (sev && !strcmp(sev, "warning")) {
            if (warnings) {
                if (!*warnings) *warnings = json_array();
                json_array_append(*warnings, p);
            }
            continue;
        }
        if (!nerr++) {
            const char *path = json_string_value(json_object_get(p, "path"));
            first = xasprintf("harness%s%s: %s", path && *path ? " " : "", path && *path ? path : "",
                              json_string_value(json_object_get(p, "message")));
        }
    }
    json_decref(probs);
    if (nerr > 1) {
        char *all = xasprintf("%s (and %zu more lint error%s)", first, nerr - 1, nerr > 2 ? "s" : "");
        free(first);
        first = all;
    }
    return first;
}

harness_compiled *harness_compile(const json_t *h, json_t **warnings, char **err)
{
    *err = NULL;
    if (!json_is_object(h)) { *err = xstrdup("a harness must be a JSON object"); return NULL; }
    if ((*err = lint_errors(h, warnings))) return NULL;
    harness_compiled *c = xcalloc(1, sizeof *c);
    c->h = json_incref((json_t *)h);
    c->canon = json_dumps(h, JSON_COMPACT | JSON_SORT_KEYS);
    if (!c->canon) c->canon = xstrdup("");
    c->canon_len = strlen(c->canon);
    c->hash = fnv1a(c->canon, c->canon_len);
    harness_resolve_limits(h, &c->lim);
    index_list(&c->tools, json_object_get(h, "tools"), 1);
    index_list(&c->skills, json_object_get(h, "skills"), 0);
    c->hooks = json_object_get(h, "hooks");
    c->banned = json_object_get(json_object_get(c->hooks, "reply_filter"), "banned");
    c->retry_on = json_object_get(json_object_get(c->hooks, "tool_retry"), "retry_on");
    c->loader = harness_loader_name(h);
    c->loader_arg = harness_loader_argument(h);
    for (size_t i = 0; i < c->skills.n; i++) {
        const char *k = json_string_value(json_object_get(c->skills.e[i].v, "kind"));
        c->has_reply_skill |= k && !strcmp(k, "reply");
    }
    return c;
}

void harness_compiled_free(harness_compiled *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->tools.n; i++) free((void *)c->tools.e[i].tool.params);
    free(c->tools.e);
    free(c->skills.e);
    free(c->canon);
    json_decref(c->h);
    free(c);
}

const json_t *harness_compiled_json(const harness_compiled *c) { return c ? c->h : NULL; }
uint64_t harness_compiled_hash(const harness_compiled *c) { return c->hash; }
const harness_limits *harness_compiled_limits(const harness_compiled *c) { return &c->lim; }

int harness_compiled_same(const harness_compiled *a, const harness_compiled *b)
{
    return a && b && a->hash == b->hash && a->canon_len == b->canon_len
           && !memcmp(a->canon, b->canon, a->canon_len);
}

const json_t *harness_compiled_tool(const harness_compiled *c, const char *name) { return c ? find(&c->tools, name, 0) : NULL; }
const harness_tool *harness_compiled_tool_view(const harness_compiled *c, const char *name)
{
    const entry *e = c ? find_entry(&c->tools, name, 0) : NULL;
    return e ? &e->tool : NULL;
}

const harness_prop *harness_tool_prop(const harness_tool *t, const char *name)
{
    for (size_t i = 0; t && name && i < t->nparams; i++)
        if (!strcmp(t->params[i].name, name)) return &t->params[i];
    return NULL;
}

const json_t *harness_compiled_tool_for(const harness_compiled *c, const char *fn) { return c ? find(&c->tools, fn, 1) : NULL; }
const json_t *harness_compiled_skill(const harness_compiled *c, const char *name) { return c ? find(&c->skills, name, 0) : NULL; }
const json_t *harness_compiled_skill_for(const harness_compiled *c, const char *fn) { return c ? find(&c->skills, fn, 1) : NULL; }

const json_t *harness_compiled_hook(const harness_compiled *c, const char *name)
{
    return c ? json_object_get(c->hooks, name) : NULL;
}

const json_t *harness_compiled_banned(const harness_compiled *c) { return c ? c->banned : NULL; }
const json_t *harness_compiled_retry_on(const harness_compiled *c) { return c ? c->retry_on : NULL; }
const char *harness_compiled_loader(const harness_compiled *c) { return c ? c->loader : NULL; }
const char *harness_compiled_loader_arg(const harness_compiled *c) { return c ? c->loader_arg : NULL; }
int harness_compiled_has_reply_skill(const harness_compiled *c) { return c && c->has_reply_skill; }

/* ---- loading with lint ----------------------------------------------------------- */

void harness_print_problem(FILE *f, const json_t *p)
{
    const char *file = json_string_value(json_object_get(p, "file"));
    const char *path = json_string_value(json_object_get(p, "path"));
    const char *sev = json_string_value(json_object_get(p, "severity"));
    long line = (long)json_integer_value(json_object_get(p, "line"));
    fprintf(f, "%s: %s", hat_prog, file && *file ? file : "-");
    if (line > 0) fprintf(f, ":%ld", line);
    if (path && *path) fprintf(f, ": %s", path);
    fprintf(f, ": %s%s\n", sev && !strcmp(sev, "warning") ? "warning: " : "",
            json_string_value(json_object_get(p, "message")));
}

json_t *harness_load_checked(const char *path)
{
    json_t *origins = NULL;
    json_t *h = harness_load_ex(path, &origins);
    if (!h) return NULL;
    json_t *probs = harness_lint(h, origins);
    int bad = 0;
    size_t i;
    json_t *p;
    json_array_foreach(probs, i, p) {
        const char *sev = json_string_value(json_object_get(p, "severity"));
        bad |= !sev || strcmp(sev, "warning");
        harness_print_problem(stderr, p);
    }
    json_decref(probs);
    json_decref(origins);
    if (bad) {
        json_decref(h);
        return NULL;
    }
    return h;
}
