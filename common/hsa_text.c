/* hsa_text.c — the wording strings of a harness and what HSA does to them:
 * which strings are wording (one list, used by the rewrite dimensions,
 * hsa-bank, the name-mention lint and the tests' change rates), the one
 * rewrite entry point every dimension calls (per-harness bank, exact bank,
 * built-in rewriter, counted in hsa_stats), and keeping names in step:
 * after a variant renames skills, tools, parameters or the loader, every
 * mention of an old name in the texts is renamed too. */
#include "hsa.h"
#include "jsonl.h"
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
    if (key) json_object_set_new(parent, key, json_str(s));
    else json_array_set_new(parent, idx, json_str(s));
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

/* Where s mentions a word of `set` as a name: [[offset, length], ...]. */
static json_t *find_mentions(const char *s, const json_t *set)
{
    json_t *out = json_array();
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (!word_char(s[i]) || (i && word_char(s[i - 1]))) { i++; continue; }
        size_t j = i;
        while (j < n && word_char(s[j])) j++;
        size_t wl = j - i;
        while (wl && s[i + wl - 1] == '-') wl--;   /* "item-" : the name is "item" */
        if (json_object_getn(set, s + i, wl)) {
            char *w = xstrndup(s + i, wl);
            if (!plain_word(w) || reference_context(s, i, wl))
                json_array_append_new(out, json_pack("[I,I]", (json_int_t)i, (json_int_t)wl));
            free(w);
        }
        i = j;
    }
    return out;
}

/* s with the mentions (find_mentions) whose name is in map renamed; NULL
 * when none is. */
static char *apply_renames(const char *s, const json_t *mentions, const json_t *map)
{
    sbuf b;
    int changed = 0;
    size_t done = 0, i;
    json_t *m;
    json_array_foreach(mentions, i, m) {
        size_t off = (size_t)json_integer_value(json_array_get(m, 0));
        size_t len = (size_t)json_integer_value(json_array_get(m, 1));
        const json_t *to = json_object_getn(map, s + off, len);
        if (!to) continue;
        if (!changed) { sbuf_init(&b); sbuf_puts(&b, ""); changed = 1; }
        sbuf_add(&b, s + done, off - done);
        sbuf_puts(&b, json_string_value(to));
        done = off + len;
    }
    if (!changed) return NULL;
    sbuf_puts(&b, s + done);
    return sbuf_detach(&b);
}

char *hsa_rename_mentions(const char *s, const json_t *map)
{
    json_t *m = find_mentions(s, map);
    char *r = apply_renames(s, m, map);
    json_decref(m);
    return r ? r : xstrdup(s);
}

typedef struct {
    hsa_ctx      *c;
    const json_t *map;
} rename_job;

static json_t *cache_entry(hsa_ctx *c, const char *text);

static void rename_cb(json_t *parent, const char *key, size_t idx, const char *text,
                      const char *kind, const char *path, void *ud)
{
    (void)kind; (void)path;
    const rename_job *job = ud;
    /* Where a text mentions the input harness's names is remembered: the
     * texts come from finite pools, the variants are many. */
    json_t *e = cache_entry(job->c, text), *m = e ? json_object_get(e, "m") : NULL, *own = NULL;
    if (!m) {
        m = own = find_mentions(text, e ? job->c->names : job->map);
        if (e) json_object_set_new(e, "m", own), own = NULL;
    }
    char *now = apply_renames(text, m, job->map);
    json_decref(own);
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
            json_object_set_new(m, from, json_str(to));
    }
    return m;
}

void hsa_keep_names(hsa_ctx *c)
{
    json_t *m = rename_map(c->ops);
    rename_job job = { c, m };
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
            if (!json_object_get(known, w)) json_array_append_new(out, json_str(w));
            free(w);
        }
        i = j ? j : i + 1;
    }
    return out;
}

/* ---- rewriting one text ------------------------------------------------------ */

/* A text's built-in rewrites form a pool of POOL: rewrite k is drawn from
 * the stream (hash of the text, k), and a variant picks k.  So a rewrite
 * is the same whether or not a cache remembers it (hsa_augment_record
 * gives the same bytes with and without hsa_cache), and with one — a
 * thread of hsa-augment, a grpo run — each is drawn once, not once per
 * variant. */
#define POOL 32

/* What is remembered about one text, in acache: "a" its analysis (with
 * "pool"), "m" where it mentions names, and per bank the alternatives that
 * pass the check.  NULL without a cache. */
static json_t *cache_entry(hsa_ctx *c, const char *text)
{
    if (!c->acache) return NULL;
    json_t *e = json_object_get(c->acache, text);
    if (!e) {
        e = json_object();
        json_object_set_new(c->acache, text, e);
    }
    return e;
}

static const json_t *analysis(hsa_ctx *c, const char *text)
{
    const hsa_rewriter *w = hsa_vocab_rewriter(c->v);
    json_t *e = w ? cache_entry(c, text) : NULL;
    if (!e) return NULL;
    json_t *a = json_object_get(e, "a");
    if (!a) {
        a = hsa_rewrite_analyse(w, text, c->names);
        json_t *pool = json_array();
        for (int i = 0; i < POOL; i++) json_array_append_new(pool, json_null());
        json_object_set_new(a, "pool", pool);
        json_object_set_new(e, "a", a);
    }
    return a;
}

static uint64_t text_seed(const char *text)
{
    char *hx = hsa_text_hash(text);
    uint64_t h = strtoull(hx, NULL, 16);
    free(hx);
    return h;
}

/* One built-in rewrite of a text: pool entry k, drawn if not yet. */
static char *builtin(hsa_ctx *c, const json_t *a, const char *text)
{
    uint64_t k = rng_below(c->r, POOL);
    json_t *pool = json_object_get(a, "pool"), *slot = json_array_get(pool, k);
    if (json_is_string(slot)) return xstrdup(json_string_value(slot));
    if (json_is_false(slot)) return NULL;   /* drawn before: nothing */
    rng_t r;
    rng_derive(&r, text_seed(text), k);
    char *out = hsa_rewrite_draw(a, &r);
    json_array_set_new(pool, k, out ? json_str(out) : json_false());
    return out;
}

/* The alternatives of a bank (the per-harness one or the exact one) that
 * keep what text must keep: checked once per text and harness and
 * remembered in the text's cache entry under `slot` (the bank's name or
 * the paraphrase section).  A new reference, or NULL for none. */
static json_t *usable_alts(hsa_ctx *c, json_t *e, const char *slot, const char *text,
                           const json_t *(*lookup)(hsa_ctx *, const char *, const char *))
{
    json_t *ok = e ? json_object_get(e, slot) : NULL;
    if (ok) {
        json_incref(ok);   /* the caller's reference */
    } else {
        ok = json_array();
        const json_t *alts = lookup(c, slot, text);
        size_t i;
        json_t *a;
        json_array_foreach(alts, i, a) {
            char *why = NULL;
            if (json_is_string(a) && hsa_rewrite_check(text, json_string_value(a), c->names, &why))
                json_array_append(ok, a);
            free(why);
        }
        if (e) json_object_set(e, slot, ok);
    }
    if (!json_array_size(ok)) { json_decref(ok); return NULL; }
    return ok;
}

static const json_t *from_bank(hsa_ctx *c, const char *slot, const char *text)
{
    (void)slot;
    return hsa_vocab_bank(c->v, text);
}

static const json_t *from_paraphrases(hsa_ctx *c, const char *slot, const char *text)
{
    return hsa_paraphrases(c->v, slot, text);
}

static void note_stuck(hsa_ctx *c, int dim, const char *text)
{
    if (!c->stats) return;
    c->stats->unrewritable[dim]++;
    if (!c->stats->stuck) c->stats->stuck = json_object();
    if (json_object_size(c->stats->stuck) < 64)
        json_object_set_new(c->stats->stuck, text, json_str(hsa_dim_names[dim]));
}

char *hsa_rewrite_text(hsa_ctx *c, int dim, const char *section, const char *text)
{
    if (!*text) return NULL;   /* nothing to reword, nothing to report */
    if (c->stats) c->stats->texts[dim]++;
    /* The sources of a rewrite — the per-harness bank, the exact bank, the
     * built-in rewriter — each equally likely when it has something for
     * the text.  The banks' alternatives are checked (usable_alts); the
     * built-in rewriter keeps the protected spans by construction (masked;
     * tested in test_hsa_rewrite). */
    json_t *e = cache_entry(c, text);
    json_t *bank = usable_alts(c, e, "bank", text, from_bank);
    json_t *para = section ? usable_alts(c, e, section, text, from_paraphrases) : NULL;
    const json_t *a = analysis(c, text);
    const json_t *src[3];
    int n = 0;
    if (bank) src[n++] = bank;
    if (para) src[n++] = para;
    char *out = NULL;
    uint64_t pick = rng_below(c->r, (uint64_t)n + (a != NULL));
    if (pick < (uint64_t)n)
        out = xstrdup(json_string_value(json_array_get(src[pick], rng_below(c->r, json_array_size(src[pick])))));
    else if (a)
        out = builtin(c, a, text);
    if (!out && n)   /* the rewriter had nothing: a bank has */
        out = xstrdup(json_string_value(json_array_get(src[0], rng_below(c->r, json_array_size(src[0])))));
    json_decref(bank);
    json_decref(para);
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
            json_object_set_new(e, "note", json_str("applied no operation: nothing it can change in this harness"));
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
