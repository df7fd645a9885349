/* hsa_text.c — the wording strings of a harness and what HSA does to them:
 * which strings are wording (one list, used by the rewrite dimensions,
 * hsa-bank, the name-mention lint and the tests' change rates), the one
 * rewrite entry point every dimension calls (per-harness bank, exact bank,
 * built-in rewriter, counted in hsa_stats), and keeping names in step:
 * after a variant renames skills, tools, parameters or the loader, every
 * mention of an old name in the texts is renamed too. */
#include "hsa.h"
#include "harness.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* ---- the wording strings --------------------------------------------------- */

/* JSON paths cost an allocation per text: built only when asked for
 * (HSA_TEXTS_PATHS); NULL otherwise, passed on as "". */
static _Thread_local int want_paths;

static char *path_key(const char *parent, const char *key)
{
    return want_paths ? xasprintf("%s/%s", parent, key) : NULL;
}

static char *path_idx(const char *parent, size_t i)
{
    return want_paths ? xasprintf("%s/%zu", parent, i) : NULL;
}

static void field(json_t *o, const char *key, const char *kind, const char *path,
                  hsa_text_fn fn, void *ud)
{
    const char *t = str(o, key);
    if (!t) return;
    char *p = path_key(path, key);
    fn(o, key, 0, t, kind, p ? p : "", ud);
    free(p);
}

static void items(json_t *a, const char *kind, const char *path, hsa_text_fn fn, void *ud)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (!json_is_string(e)) continue;
        char *p = path_idx(path, i);
        fn(a, NULL, i, json_string_value(e), kind, p ? p : "", ud);
        free(p);
    }
}

static void texts(json_t *h, int hooks, hsa_text_fn fn, void *ud)
{
    size_t i;
    json_t *e;
    char *p;
    json_array_foreach(json_object_get(h, "skills"), i, e) {
        p = path_idx("/skills", i);
        field(e, "description", "skill_description", p, fn, ud);
        char *r = path_key(p, "rules");
        items(json_object_get(e, "rules"), "rule", r, fn, ud);
        free(r);
        free(p);
    }
    json_array_foreach(json_object_get(h, "tools"), i, e) {
        p = path_idx("/tools", i);
        field(e, "description", "tool_description", p, fn, ud);
        const char *k;
        json_t *prop;
        json_object_foreach(json_object_get(json_object_get(e, "parameters"), "properties"), k, prop) {
            char *pr = path_key(p, "parameters/properties"), *pp = path_key(pr, k);
            free(pr);
            field(prop, "description", "param_description", pp, fn, ud);
            free(pp);
        }
        free(p);
    }
    json_t *l = json_object_get(h, "skill_loader");
    field(l, "description", "loader", "/skill_loader", fn, ud);
    field(l, "argument_description", "loader", "/skill_loader", fn, ud);
    field(l, "preamble", "loader", "/skill_loader", fn, ud);
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, e) {
        p = path_idx("/system_prompt/blocks", i);
        field(e, "text", "block", p, fn, ud);
        char *r = path_key(p, "items");
        items(json_object_get(e, "items"), "block", r, fn, ud);
        free(r);
        free(p);
    }
    if (!hooks) return;
    const char *hk;
    json_t *hv;
    json_object_foreach(json_object_get(h, "hooks"), hk, hv) {
        p = path_key("/hooks", hk);
        if (json_is_string(hv)) fn(json_object_get(h, "hooks"), hk, 0, json_string_value(hv), "hook",
                                   p ? p : "", ud);
        field(hv, "message", "hook", p, fn, ud);
        field(hv, "on_violation", "hook", p, fn, ud);
        free(p);
    }
}

void hsa_texts(json_t *h, int flags, hsa_text_fn fn, void *ud)
{
    /* Thread-local: variants are drawn in parallel. */
    int saved = want_paths;
    want_paths = (flags & HSA_TEXTS_PATHS) != 0;
    texts(h, flags & HSA_TEXTS_HOOKS, fn, ud);
    want_paths = saved;
}

static void set_text(json_t *parent, const char *key, size_t idx, const char *s)
{
    if (key) json_object_set_new(parent, key, json_string(s));
    else json_array_set_new(parent, idx, json_string(s));
}

/* ---- names ----------------------------------------------------------------- */

json_t *hsa_harness_names(const json_t *h)
{
    json_t *t = hsa_taken_names(h);
    const char *arg = harness_loader_argument(h);
    if (arg) json_object_set_new(t, arg, json_true());
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(h, "tools"), i, e) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(json_object_get(e, "parameters"), "properties"), k, v)
            json_object_set_new(t, k, json_true());
    }
    return t;
}

static int word_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_' || ch == '-';
}

static int plain_word(const char *s)
{
    for (; *s; s++)
        if (!islower((unsigned char)*s)) return 0;
    return 1;
}

/* A plain-word name ("clarify", "item") is only taken for a name where the
 * text points at it as one: in quotes or backticks, or beside the words
 * skill, tool or loader.  Everywhere else it is an ordinary word. */
static int reference_context(const char *text, size_t at, size_t len)
{
    char before = at ? text[at - 1] : 0, after = text[at + len];
    if (strchr("`\"'", before ? before : 1) && before == after) return 1;
    const char *next = text + at + len;
    static const char *const nouns[] = { " skill", " tool", " loader", " parameter", NULL };
    for (int i = 0; nouns[i]; i++) {
        size_t n = strlen(nouns[i]);
        if (!strncmp(next, nouns[i], n) && !isalpha((unsigned char)next[n])) return 1;
    }
    for (int i = 0; nouns[i]; i++) {
        size_t n = strlen(nouns[i]) - 1;
        if (at > n && !strncmp(text + at - n - 1, nouns[i] + 1, n) && text[at - 1] == ' ' &&
            (at == n + 1 || !isalpha((unsigned char)text[at - n - 2])))
            return 1;
    }
    return 0;
}

/* The renamed text, or NULL when nothing in s is renamed (the common
 * case, found without copying). */
static char *rename_or_null(const char *s, const json_t *map, const unsigned char *first)
{
    sbuf b;
    int changed = 0;
    size_t n = strlen(s), done = 0;
    for (size_t i = 0; i < n;) {
        if (!word_char(s[i]) || (i && word_char(s[i - 1])) || (first && !first[(unsigned char)s[i]])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && word_char(s[j])) j++;
        size_t wl = j - i;
        while (wl && s[i + wl - 1] == '-') wl--;   /* "item-" : the name is "item" */
        const json_t *to = json_object_getn(map, s + i, wl);
        if (to) {
            char *w = xstrndup(s + i, wl);
            int take = !plain_word(w) || reference_context(s, i, wl);
            free(w);
            if (take) {
                if (!changed) { sbuf_init(&b); sbuf_puts(&b, ""); changed = 1; }
                sbuf_add(&b, s + done, i - done);
                sbuf_puts(&b, json_string_value(to));
                done = i + wl;
            }
        }
        i = j;
    }
    if (!changed) return NULL;
    sbuf_puts(&b, s + done);
    return sbuf_detach(&b);
}

char *hsa_rename_mentions(const char *s, const json_t *map)
{
    char *r = rename_or_null(s, map, NULL);
    return r ? r : xstrdup(s);
}

typedef struct {
    const json_t *map;
    unsigned char first[256];   /* first characters of the old names */
} rename_job;

static void rename_cb(json_t *parent, const char *key, size_t idx, const char *text,
                      const char *kind, const char *path, void *ud)
{
    (void)kind; (void)path;
    const rename_job *job = ud;
    char *now = rename_or_null(text, job->map, job->first);
    if (now) set_text(parent, key, idx, now);
    free(now);
}

/* The renames a variant made, old name → new, from its operations. */
static json_t *rename_map(const json_t *ops)
{
    json_t *m = json_object();
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op) {
        const char *o = str(op, "op"), *from = str(op, "from"), *to = str(op, "to");
        if (!o || !from || !to) continue;
        if (!strcmp(o, "rename") || !strcmp(o, "rename_tool") || !strcmp(o, "rename_loader") ||
            !strcmp(o, "rename_loader_argument") ||
            (!strcmp(o, "rename_param") && !json_object_get(m, from)))
            json_object_set_new(m, from, json_string(to));
    }
    return m;
}

void hsa_keep_names(hsa_ctx *c)
{
    json_t *m = rename_map(c->ops);
    rename_job job = { .map = m };
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) job.first[(unsigned char)k[0]] = 1;
    if (json_object_size(m)) hsa_texts(c->h, HSA_TEXTS_HOOKS, rename_cb, &job);
    json_decref(m);
}

/* ---- mentions of names a harness does not define ---------------------------- */

/* Words a text may use that look like identifiers without being names of
 * this harness: functions, their parameters, prompt params, hooks, fault
 * codes (data/functions.json) and the block ids. */
static void add_keys(json_t *set, const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) json_object_set_new(set, k, json_true());
}

json_t *hsa_known_words(const json_t *h)
{
    json_t *set = hsa_harness_names(h);
    const json_t *fns = harness_functions();
    add_keys(set, json_object_get(fns, "skill_functions"));
    add_keys(set, json_object_get(fns, "tool_functions"));
    add_keys(set, json_object_get(fns, "prompt_params"));
    add_keys(set, json_object_get(fns, "fault_codes"));
    add_keys(set, json_object_get(fns, "hook_templates"));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(fns, "hooks"), i, e)
        json_object_set_new(set, json_string_value(e), json_true());
    const char *k;
    json_t *tf;
    json_object_foreach(json_object_get(fns, "tool_functions"), k, tf)
        add_keys(set, json_object_get(tf, "params"));
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, e) {
        const char *id = str(e, "id");
        if (id) json_object_set_new(set, id, json_true());
        add_keys(set, json_object_get(e, "params"));
    }
    json_t *env = json_object_get(json_object_get(h, "hooks"), "result_envelope");
    json_object_foreach(env, k, tf)
        if (json_is_string(tf)) json_object_set_new(set, json_string_value(tf), json_true());
    return set;
}

json_t *hsa_unknown_mentions(const char *text, const json_t *known)
{
    json_t *out = json_array();
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        size_t l = text[i] == '{' ? hsa_placeholder_len(text + i) : 0;
        if (l) { i += l; continue; }
        int code = text[i] == '`';
        size_t s = i + code;
        if (!(isalpha((unsigned char)text[s]) || text[s] == '_') || (i && word_char(text[i - 1]))) {
            i++;
            continue;
        }
        size_t j = s;
        while (j < n && (isalnum((unsigned char)text[j]) || text[j] == '_' ||
                         (text[j] == '-' && isalnum((unsigned char)text[j + 1]))))
            j++;
        size_t len = j - s;
        /* Identifier-like (snake_case, camelCase past a two-letter head),
         * or anything written as `code`. */
        int ident = 0;
        for (size_t k = 0; k < len; k++) {
            if (text[s + k] == '_' && k && k + 1 < len) ident = 1;
            if (k >= 2 && isupper((unsigned char)text[s + k]) && islower((unsigned char)text[s + k - 1]))
                ident = 1;
        }
        int coded = code && text[j] == '`';
        if ((ident || coded) && len) {
            char *w = xstrndup(text + s, len);
            if (!json_object_get(known, w)) json_array_append_new(out, json_string(w));
            free(w);
        }
        i = j ? j : i + 1;
    }
    return out;
}

/* ---- rewriting one text ------------------------------------------------------ */

#define REDRAWS 4

/* With a cache that lives across variants (hsa_cache: one per thread of
 * hsa-augment, one per grpo run), each text's rewrites are drawn once into
 * a pool from a stream of the text's own (seeded by its hash, so the same
 * for any batching), and a variant picks from the pool: a pick instead of
 * a draw per text per variant.  Without one (evalset) each variant draws. */
#define POOL 32

static const json_t *analysis(hsa_ctx *c, const char *text)
{
    const hsa_rewriter *w = hsa_vocab_rewriter(c->v);
    if (!w || !c->acache) return NULL;
    json_t *a = json_object_get(c->acache, text);
    if (!a) {
        a = hsa_rewrite_analyse(w, text, c->names);
        if (c->pooled) {
            char *hx = hsa_text_hash(text);
            rng_t r;
            rng_derive(&r, strtoull(hx, NULL, 16), 0x9001);
            free(hx);
            json_t *pool = json_array();
            for (int i = 0; i < POOL; i++) {
                char *o = hsa_rewrite_draw(a, &r);
                if (o) json_array_append_new(pool, json_string(o));
                free(o);
            }
            json_object_set_new(a, "pool", pool);
        }
        json_object_set_new(c->acache, text, a);
    }
    return a;
}

/* One built-in rewrite of a text: from its pool, or drawn. */
static char *builtin(hsa_ctx *c, const json_t *a)
{
    const json_t *pool = json_object_get(a, "pool");
    if (!pool) return hsa_rewrite_draw(a, c->r);
    size_t n = json_array_size(pool);
    return n ? xstrdup(json_string_value(json_array_get(pool, rng_below(c->r, n)))) : NULL;
}

/* hsa_rewrite_check of a bank alternative, remembered per harness: the
 * banks are finite, the variants many. */
static int bank_ok(hsa_ctx *c, const char *text, const char *alt)
{
    char *key = xasprintf("\x03%s\x04%s", text, alt);
    json_t *v = c->acache ? json_object_get(c->acache, key) : NULL;
    int ok;
    if (v) ok = json_is_true(v);
    else {
        char *why = NULL;
        ok = hsa_rewrite_check(text, alt, c->names, &why);
        free(why);
        if (c->acache) json_object_set_new(c->acache, key, json_boolean(ok));
    }
    free(key);
    return ok;
}

static void note_stuck(hsa_ctx *c, int dim, const char *text)
{
    if (!c->stats) return;
    c->stats->unrewritable[dim]++;
    if (!c->stats->stuck) c->stats->stuck = json_object();
    if (json_object_size(c->stats->stuck) < 64)
        json_object_set_new(c->stats->stuck, text, json_string(hsa_dim_names[dim]));
}

char *hsa_rewrite_text(hsa_ctx *c, int dim, const char *section, const char *text)
{
    if (!*text) return NULL;   /* nothing to reword, nothing to report */
    if (c->stats) c->stats->texts[dim]++;
    /* The sources of a rewrite — the per-harness bank, the exact bank, the
     * built-in rewriter — tried in a random order; the first whose rewrite
     * keeps every protected span wins. */
    const json_t *bank = hsa_vocab_bank(c->v, text);
    const char *para = section ? hsa_paraphrase(c->v, c->r, section, text) : NULL;
    const json_t *a = analysis(c, text);
    char src[3];
    int n = 0;
    if (bank) src[n++] = 'b';
    if (para) src[n++] = 'p';
    if (a) src[n++] = 'r';
    rng_shuffle(c->r, src, (size_t)n, 1);
    char *out = NULL;
    for (int i = 0; i < n && !out; i++) {
        /* A draw may bring in a word that is a name here ("item" as a
         * synonym where a parameter is called item): draw again. */
        for (int tries = src[i] == 'r' ? REDRAWS : 1; tries-- && !out;) {
            if (src[i] == 'r') out = builtin(c, a);
            else if (src[i] == 'p') out = xstrdup(para);
            else out = xstrdup(json_string_value(json_array_get(bank, rng_below(c->r, json_array_size(bank)))));
            /* The built-in rewriter keeps the protected spans by
             * construction (masked; tested in test_hsa_rewrite): only the
             * banks' alternatives are checked here. */
            if (out && src[i] != 'r' && !bank_ok(c, text, out)) {
                free(out);
                out = NULL;
            }
        }
    }
    if (!out) note_stuck(c, dim, text);
    else if (c->stats) c->stats->rewritten[dim]++;
    return out;
}

/* ---- statistics --------------------------------------------------------------- */

void hsa_stats_add(hsa_stats *to, const hsa_stats *from)
{
    to->variants += from->variants;
    for (int d = 0; d < HSA_NDIMS; d++) {
        to->ops[d] += from->ops[d];
        to->texts[d] += from->texts[d];
        to->rewritten[d] += from->rewritten[d];
        to->unrewritable[d] += from->unrewritable[d];
    }
    if (from->stuck) {
        if (!to->stuck) to->stuck = json_object();
        json_object_update_missing(to->stuck, from->stuck);
    }
}

void hsa_stats_count_ops(hsa_stats *st, const json_t *ops)
{
    size_t i;
    json_t *op;
    st->variants++;
    json_array_foreach(ops, i, op) {
        const char *d = str(op, "dim");
        for (int k = 0; d && k < HSA_NDIMS; k++)
            if (!strcmp(d, hsa_dim_names[k])) st->ops[k]++;
    }
}

json_t *hsa_stats_json(const hsa_stats *st, const hsa_opts *o)
{
    json_t *dims = json_object();
    for (int d = 0; d < HSA_NDIMS; d++) {
        json_t *e = json_pack("{s:f, s:I, s:I, s:I, s:I}", "p", o->p[d], "ops", (json_int_t)st->ops[d],
                              "texts", (json_int_t)st->texts[d], "rewritten",
                              (json_int_t)st->rewritten[d], "unrewritable",
                              (json_int_t)st->unrewritable[d]);
        if (o->p[d] > 0 && st->variants && !st->ops[d])
            json_object_set_new(e, "note", json_string("applied no operation: nothing it can change in this harness"));
        json_object_set_new(dims, hsa_dim_names[d], e);
    }
    json_t *stuck = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(st->stuck, k, v)
        json_array_append_new(stuck, json_pack("{s:O, s:s}", "dim", v, "text", k));
    return json_pack("{s:s, s:I, s:o, s:o}", "metric", "hsa", "variants", (json_int_t)st->variants,
                     "dims", dims, "unrewritable", stuck);
}

void hsa_stats_free(hsa_stats *st)
{
    json_decref(st->stuck);
    st->stuck = NULL;
}
