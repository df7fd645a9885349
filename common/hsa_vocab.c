/* hsa_vocab.c — the name generators and paraphrase banks of HSA.
 *
 * A vocabulary is three JSON files in one directory (man 5 hsa-vocab):
 * names.json (word banks per function, composed into snake_case,
 * camelCase, kebab-case or pinyin-like names), paraphrases.json (texts of
 * the harness → alternative wordings) and hooks.json (error formats,
 * envelope keys, hook message templates).  data/hsa/train/ and
 * data/hsa/heldout/ use disjoint words and wordings, so a model trained on
 * one can be tested on names and texts it never saw.  Loading checks the
 * banks (words are lowercase tokens, paraphrases keep their placeholders)
 * so a bad edit is caught at once, not as a broken variant later. */
#include "hsa.h"
#include "jsonl.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct hsa_vocab {
    char   *name;
    json_t *names, *para, *hooks;
    hsa_rewriter *rw;   /* rewrite.json; NULL when the directory has none */
    json_t *added;      /* rules.json's "added"; NULL when the directory has none */
    json_t *bank;       /* hsa-bank files: hash → alternatives of this split */
};

/* ---- templates ---------------------------------------------------------- */

/* Length of a {placeholder} at s (including braces), 0 if s is not one. */
size_t hsa_placeholder_len(const char *s)
{
    if (s[0] != '{' || !(isalpha((unsigned char)s[1]) || s[1] == '_')) return 0;
    size_t i = 2;
    while (isalnum((unsigned char)s[i]) || s[i] == '_') i++;
    return s[i] == '}' ? i + 1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *hsa_template_keys(const char *tmpl)
{
    char *keys[64];
    int n = 0;
    for (const char *s = tmpl; *s && n < 64; s++) {
        size_t l = hsa_placeholder_len(s);
        if (!l) continue;
        char *k = xstrndup(s + 1, l - 2);
        int dup = 0;
        for (int i = 0; i < n; i++) dup |= !strcmp(keys[i], k);
        if (dup) free(k); else keys[n++] = k;
        s += l - 1;
    }
    qsort(keys, n, sizeof *keys, cmp_str);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    for (int i = 0; i < n; i++) {
        if (i) sbuf_putc(&b, ',');
        sbuf_puts(&b, keys[i]);
        free(keys[i]);
    }
    return sbuf_detach(&b);
}

/* Backtracking match: literals must match exactly, a placeholder takes the
 * shortest text that lets the rest match (a repeated one must repeat).
 * Literal runs are compared in a loop and a placeholder followed by a
 * literal only tries the places where that literal occurs: relabelling
 * matches every hook message of every trajectory. */
static int match_at(const char *t, const char *s, json_t *vars)
{
    size_t l = 0;
    while (*t && !(*t == '{' && (l = hsa_placeholder_len(t)))) {
        if (*t != *s) return 0;
        t++, s++;
    }
    if (!*t) return !*s;
    char *key = xstrndup(t + 1, l - 2);
    const char *known = json_string_value(json_object_get(vars, key)), *rest = t + l;
    int ok = 0;
    if (known) {
        size_t kl = strlen(known);
        ok = !strncmp(s, known, kl) && match_at(rest, s + kl, vars);
    } else if (!*rest) {   /* last in the template: takes the rest of the text */
        json_object_set_new(vars, key, json_string(s));
        ok = 1;
    } else {
        /* The next literal character, if the rest starts with one. */
        char next = *rest == '{' && hsa_placeholder_len(rest) ? 0 : *rest;
        for (const char *p = s; !ok; p++) {
            if (next && !(p = strchr(p, next))) break;
            json_object_set_new(vars, key, json_stringn(s, (size_t)(p - s)));
            ok = match_at(rest, p, vars);
            if (!ok) json_object_del(vars, key);
            if (!*p) break;
        }
    }
    free(key);
    return ok;
}

int hsa_template_match(const char *tmpl, const char *text, json_t *vars)
{
    return tmpl && text && match_at(tmpl, text, vars);
}

/* ---- naming ------------------------------------------------------------- */

char *hsa_style_join(int style, const char *const *words, int n)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        if (!*w) continue;
        if (b.len && style != HSA_CAMEL) sbuf_putc(&b, style == HSA_KEBAB ? '-' : '_');
        if (style == HSA_CAMEL && b.len) {
            sbuf_putc(&b, (char)toupper((unsigned char)w[0]));
            sbuf_puts(&b, w + 1);
        } else {
            sbuf_puts(&b, w);
        }
    }
    return sbuf_detach(&b);
}

static const char *pick(rng_t *r, const json_t *arr)
{
    size_t n = json_array_size(arr);
    return n ? json_string_value(json_array_get(arr, rng_below(r, n))) : NULL;
}

/* A generator: lists of words, one word from each, joined in a style drawn
 * from `styles`.  pinyin_lists replace the lists for HSA_PINYIN. */
typedef struct {
    const json_t *lists[3];
    int nlists;
    const json_t *pinyin[2];
    int styles;   /* bitmask of allowed styles */
} generator;

static char *gen_draw(const generator *g, rng_t *r)
{
    int styles[4], ns = 0;
    for (int s = 0; s < 4; s++)
        if (g->styles & (1 << s) && (s != HSA_PINYIN || g->pinyin[0])) styles[ns++] = s;
    if (!ns) return NULL;
    int style = styles[rng_below(r, ns)];
    const char *w[3];
    int n = 0;
    if (style == HSA_PINYIN) {
        for (int i = 0; i < 2 && g->pinyin[i]; i++) w[n++] = pick(r, g->pinyin[i]);
        style = HSA_SNAKE;
    } else {
        for (int i = 0; i < g->nlists; i++) w[n++] = pick(r, g->lists[i]);
    }
    for (int i = 0; i < n; i++) if (!w[i]) return NULL;
    return hsa_style_join(style, w, n);
}

static char *gen_fresh(const generator *g, rng_t *r, const json_t *taken)
{
    for (int tries = 0; tries < 64; tries++) {
        char *s = gen_draw(g, r);
        if (!s) return NULL;
        if (*s && !json_object_get(taken, s)) return s;
        free(s);
    }
    return NULL;
}

/* Every output of a generator, into the set `out`. */
static void gen_all(const generator *g, json_t *out)
{
    for (int s = 0; s < 4; s++) {
        if (!(g->styles & (1 << s))) continue;
        const json_t *const *lists = s == HSA_PINYIN ? g->pinyin : g->lists;
        int nl = s == HSA_PINYIN ? (g->pinyin[1] ? 2 : g->pinyin[0] ? 1 : 0) : g->nlists;
        if (!nl) continue;
        size_t idx[3] = { 0, 0, 0 };
        for (;;) {
            const char *w[3];
            for (int i = 0; i < nl; i++) w[i] = json_string_value(json_array_get(lists[i], idx[i]));
            int okw = 1;
            for (int i = 0; i < nl; i++) okw &= w[i] != NULL;
            if (okw) {
                char *name = hsa_style_join(s == HSA_PINYIN ? HSA_SNAKE : s, w, nl);
                if (*name) json_object_set_new(out, name, json_true());
                free(name);
            }
            int i = nl - 1;
            while (i >= 0 && ++idx[i] >= json_array_size(lists[i])) idx[i--] = 0;
            if (i < 0) break;
        }
    }
}

#define ALL_STYLES ((1 << HSA_SNAKE) | (1 << HSA_CAMEL) | (1 << HSA_KEBAB) | (1 << HSA_PINYIN))
#define CODE_STYLES ((1 << HSA_SNAKE) | (1 << HSA_CAMEL))

static int skill_gen(const hsa_vocab *v, const char *function, generator *g)
{
    memset(g, 0, sizeof *g);
    const json_t *e = json_object_get(json_object_get(v->names, "skills"), function);
    if (!e) return -1;
    g->lists[0] = json_object_get(e, "heads");
    g->lists[1] = json_object_get(v->names, "skill_tails");
    g->nlists = 2;
    g->pinyin[0] = json_object_get(e, "pinyin");
    g->pinyin[1] = g->pinyin[0] ? json_object_get(v->names, "skill_tails_pinyin") : NULL;
    g->styles = ALL_STYLES;
    return 0;
}

static int tool_gen(const hsa_vocab *v, const char *function, generator *g)
{
    memset(g, 0, sizeof *g);
    const json_t *e = function ? json_object_get(json_object_get(v->names, "tools"), function)
                               : json_object_get(v->names, "loader");
    if (!e) return -1;
    g->lists[0] = json_object_get(e, "verbs");
    g->lists[1] = json_object_get(e, "nouns");
    g->nlists = 2;
    g->styles = CODE_STYLES;
    return 0;
}

static int param_gen(const hsa_vocab *v, const char *xfunction, generator *g)
{
    memset(g, 0, sizeof *g);
    const json_t *e = json_object_get(json_object_get(v->names, "params"), xfunction);
    if (!e) return -1;
    g->lists[0] = json_object_get(e, "heads");
    g->lists[1] = json_object_get(e, "tails");
    g->nlists = 2;
    g->styles = CODE_STYLES;
    return 0;
}

static int distractor_gen(const hsa_vocab *v, const json_t *entry, generator *g)
{
    memset(g, 0, sizeof *g);
    g->lists[0] = json_object_get(entry, "heads");
    g->lists[1] = json_object_get(v->names, "skill_tails");
    g->nlists = 2;
    g->styles = (1 << HSA_SNAKE) | (1 << HSA_CAMEL) | (1 << HSA_KEBAB);
    return 0;
}

char *hsa_name_skill(const hsa_vocab *v, rng_t *r, const char *function, const json_t *taken)
{
    generator g;
    if (!strcmp(function, "distractor")) {
        const json_t *d = json_object_get(v->names, "distractors");
        size_t n = json_array_size(d);
        if (!n) return NULL;
        distractor_gen(v, json_array_get(d, rng_below(r, n)), &g);
        return gen_fresh(&g, r, taken);
    }
    return skill_gen(v, function, &g) ? NULL : gen_fresh(&g, r, taken);
}

char *hsa_name_tool(const hsa_vocab *v, rng_t *r, const char *function, const json_t *taken)
{
    generator g;
    return tool_gen(v, function, &g) ? NULL : gen_fresh(&g, r, taken);
}

char *hsa_name_loader(const hsa_vocab *v, rng_t *r, const json_t *taken)
{
    generator g;
    return tool_gen(v, NULL, &g) ? NULL : gen_fresh(&g, r, taken);
}

char *hsa_name_param(const hsa_vocab *v, rng_t *r, const char *xfunction, const json_t *taken)
{
    generator g;
    return param_gen(v, xfunction, &g) ? NULL : gen_fresh(&g, r, taken);
}

json_t *hsa_name_space(const hsa_vocab *v, const char *kind, const char *function)
{
    json_t *out = json_object();
    generator g;
    if (!strcmp(kind, "skill") && !skill_gen(v, function, &g)) gen_all(&g, out);
    else if (!strcmp(kind, "tool") && !tool_gen(v, function, &g)) gen_all(&g, out);
    else if (!strcmp(kind, "loader") && !tool_gen(v, NULL, &g)) gen_all(&g, out);
    else if (!strcmp(kind, "param") && !param_gen(v, function, &g)) gen_all(&g, out);
    else if (!strcmp(kind, "distractor")) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(v->names, "distractors"), i, e) {
            distractor_gen(v, e, &g);
            gen_all(&g, out);
        }
    }
    return out;
}

const json_t *hsa_paraphrases(const hsa_vocab *v, const char *section, const char *text)
{
    const json_t *sec;
    if (!strncmp(section, "blocks/", 7))
        sec = json_object_get(json_object_get(v->para, "blocks"), section + 7);
    else
        sec = json_object_get(v->para, section);
    return json_object_get(sec, text);
}

const char *hsa_paraphrase(const hsa_vocab *v, rng_t *r, const char *section, const char *text)
{
    const json_t *alts = hsa_paraphrases(v, section, text);
    return alts ? pick(r, alts) : NULL;
}

/* ---- loading and checking ---------------------------------------------- */

static int word_ok(const char *w)
{
    for (const char *s = w; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s))) return 0;
    return 1;
}

/* Every string in every array below j must be a word ("" allowed only in
 * param tails). */
static int check_words(const json_t *j, const char *file, const char *where)
{
    int bad = 0;
    if (json_is_array(j)) {
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e) {
            const char *w = json_string_value(e);
            if (w && !word_ok(w)) {
                hat_errat(file, 0, "%s: '%s' is not a lowercase word", where, w);
                bad = 1;
            }
            if (!w && !json_is_object(e)) {
                hat_errat(file, 0, "%s: entry %zu is not a string", where, i);
                bad = 1;
            }
        }
    } else if (json_is_object(j)) {
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)j, k, e) {
            if (!strcmp(k, "descriptions") || !strcmp(k, "rules") || !strcmp(k, "kind")) continue;
            char *w2 = xasprintf("%s/%s", where, k);
            bad |= check_words(e, file, w2);
            free(w2);
        }
    }
    return bad;
}

static int check_para_section(const json_t *sec, const char *file, const char *where)
{
    int bad = 0;
    const char *text;
    json_t *alts;
    json_object_foreach((json_t *)sec, text, alts) {
        if (!json_is_array(alts)) {
            hat_errat(file, 0, "%s: \"%s\": not an array of paraphrases", where, text);
            bad = 1;
            continue;
        }
        char *want = hsa_template_keys(text);
        size_t i;
        json_t *a;
        json_array_foreach(alts, i, a) {
            const char *s = json_string_value(a);
            char *got = s ? hsa_template_keys(s) : NULL;
            if (!s || strcmp(got, want) || !strcmp(s, text)) {
                hat_errat(file, 0, "%s: paraphrase %zu of \"%s\" %s", where, i, text,
                          !s ? "is not a string" : !strcmp(s, text) ? "repeats the text"
                                                                   : "changes its placeholders");
                bad = 1;
            }
            free(got);
        }
        free(want);
    }
    return bad;
}

static json_t *load_part(const char *dir, const char *file, char **path_out)
{
    char *p = xasprintf("%s/%s", dir, file);
    json_t *j = json_load_path(p);
    if (j && !json_is_object(j)) {
        hat_errat(p, 0, "not a JSON object");
        json_decref(j);
        j = NULL;
    }
    *path_out = p;
    return j;
}

/* "NAME+BANK.json": the vocabulary NAME with a per-harness bank. */
static hsa_vocab *load_with_bank(const char *name)
{
    const char *plus = strrchr(name, '+');
    char *base = xstrndup(name, (size_t)(plus - name));
    hsa_vocab *v = hsa_vocab_load(base);
    free(base);
    if (v && hsa_vocab_add_bank(v, plus + 1) < 0) {
        hsa_vocab_free(v);
        return NULL;
    }
    return v;
}

/* An optional file of a vocabulary directory: 0 with *j NULL when there is
 * none, -1 when it does not load (the diagnostic names it).  *path is
 * dir/file, for the caller's messages, to free. */
static int load_optional(const char *dir, const char *file, json_t **j, char **path)
{
    struct stat st;
    *path = xasprintf("%s/%s", dir, file);
    int there = stat(*path, &st) == 0;
    *j = there ? json_load_path(*path) : NULL;
    return there && !*j ? -1 : 0;
}

/* rewrite.json is optional in a vocabulary directory of one's own. */
static int load_rewriter(hsa_vocab *v, const char *dir)
{
    json_t *j;
    char *p;
    int rc = load_optional(dir, "rewrite.json", &j, &p);
    if (j && !(v->rw = hsa_rewriter_load(j, p))) rc = -1;
    json_decref(j);
    free(p);
    return rc;
}

/* The first reason a rules.json entry is refused, or NULL. */
static const char *bad_rule(const json_t *r, const json_t *seen)
{
    const char *t = json_string_value(r);
    return !t ? "not a string"
         : !*t || strlen(t) > 200 ? "empty or over 200 bytes"
         : strpbrk(t, "0123456789{}\n") ? "holds a digit, a brace or a newline"
         : json_object_get(seen, t) ? "repeats an earlier rule" : NULL;
}

/* rules.json is optional too: {"added": [rule, ...]}, rules that skill-content
 * may add to a skill.  They are harness text the judge never reads, so they
 * must not look like a limit or a template: no digits, no braces, one line. */
static int load_added_rules(hsa_vocab *v, const char *dir)
{
    json_t *j;
    char *p;
    int rc = load_optional(dir, "rules.json", &j, &p);
    json_t *a = json_object_get(j, "added"), *seen = json_object();
    if (j && !json_is_array(a)) {
        hat_errat(p, 0, "\"added\": not an array of rules");
        rc = -1;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rc ? NULL : a, i, r) {
        const char *why = bad_rule(r, seen);
        if (why) {
            hat_errat(p, 0, "added[%zu]: %s", i, why);
            rc = -1;
            break;
        }
        json_object_set_new(seen, json_string_value(r), json_true());
    }
    if (!rc && a) v->added = json_incref(a);
    json_decref(seen);
    json_decref(j);
    free(p);
    return rc;
}

const json_t *hsa_vocab_added_rules(const hsa_vocab *v) { return v->added; }

hsa_vocab *hsa_vocab_load(const char *name)
{
    char *dir = NULL;
    struct stat st;
    if (strchr(name, '+') && stat(name, &st) != 0) return load_with_bank(name);
    if (strchr(name, '/') || (stat(name, &st) == 0 && S_ISDIR(st.st_mode))) {
        dir = xstrdup(name);
    } else {
        char *rel = xasprintf("hsa/%s/names.json", name);
        char *p = hat_data_path(rel);
        free(rel);
        if (!p) {
            hat_errat(NULL, 0, "no vocabulary '%s' (looked for data/hsa/%s/names.json)", name, name);
            return NULL;
        }
        *strrchr(p, '/') = 0;
        dir = p;
    }
    hsa_vocab *v = xcalloc(1, sizeof *v);
    v->name = xstrdup(name);
    char *pn, *pp, *ph;
    v->names = load_part(dir, "names.json", &pn);
    v->para = load_part(dir, "paraphrases.json", &pp);
    v->hooks = load_part(dir, "hooks.json", &ph);
    int bad = !v->names || !v->para || !v->hooks;
    if (!bad) bad = load_rewriter(v, dir) < 0 || load_added_rules(v, dir) < 0;
    if (!bad) {
        bad |= check_words(v->names, pn, "names");
        const char *k;
        json_t *sec;
        json_object_foreach(v->para, k, sec) {
            if (strcmp(k, "blocks")) { bad |= check_para_section(sec, pp, k); continue; }
            const char *id;
            json_t *b;
            json_object_foreach(sec, id, b) bad |= check_para_section(b, pp, id);
        }
    }
    free(pn); free(pp); free(ph); free(dir);
    if (bad) {
        hsa_vocab_free(v);
        return NULL;
    }
    return v;
}

void hsa_vocab_free(hsa_vocab *v)
{
    if (!v) return;
    json_decref(v->names);
    json_decref(v->para);
    json_decref(v->hooks);
    hsa_rewriter_free(v->rw);
    json_decref(v->added);
    json_decref(v->bank);
    free(v->name);
    free(v);
}

const char *hsa_vocab_name(const hsa_vocab *v) { return v->name; }

const hsa_rewriter *hsa_vocab_rewriter(const hsa_vocab *v) { return v->rw; }

const char *hsa_vocab_split(const hsa_vocab *v)
{
    if (v->rw) return hsa_rewriter_split(v->rw);
    return strstr(v->name, "heldout") ? "heldout" : "train";
}

int hsa_vocab_add_bank(hsa_vocab *v, const char *path)
{
    json_t *b = hsa_bank_load(path);
    if (!b) return -1;
    if (!v->bank) v->bank = json_object();
    const char *hash;
    json_t *e;
    json_object_foreach(json_object_get(b, "texts"), hash, e) {
        json_t *alts = json_object_get(e, hsa_vocab_split(v));
        if (json_array_size(alts)) json_object_set(v->bank, hash, alts);
    }
    json_decref(b);
    return 0;
}

const json_t *hsa_vocab_bank(const hsa_vocab *v, const char *text)
{
    if (!v->bank) return NULL;
    char *h = hsa_text_hash(text);
    const json_t *alts = json_object_get(v->bank, h);
    free(h);
    return alts;
}

const json_t *hsa_vocab_json(const hsa_vocab *v, const char *file)
{
    if (!strcmp(file, "names")) return v->names;
    if (!strcmp(file, "paraphrases")) return v->para;
    if (!strcmp(file, "hooks")) return v->hooks;
    return NULL;
}

json_t *hsa_distractor(const hsa_vocab *v, rng_t *r, const json_t *taken)
{
    const json_t *d = json_object_get(v->names, "distractors");
    size_t n = json_array_size(d);
    if (!n) return NULL;
    const json_t *e = json_array_get(d, rng_below(r, n));
    generator g;
    distractor_gen(v, e, &g);
    char *name = gen_fresh(&g, r, taken);
    const char *desc = pick(r, json_object_get(e, "descriptions"));
    const json_t *pool = json_object_get(e, "rules");
    if (!name || !desc || json_array_size(pool) < 1) { free(name); return NULL; }
    /* Two or three of the entry's rules, in bank order. */
    size_t nr = json_array_size(pool), want = 2 + rng_below(r, 2);
    if (want > nr) want = nr;
    json_t *rules = json_array();
    for (size_t i = 0, left = nr; i < nr; i++, left--)
        if (rng_below(r, left) < want - json_array_size(rules))
            json_array_append(rules, json_array_get(pool, i));
    const char *kind = json_string_value(json_object_get(e, "kind"));
    json_t *s = json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", name, "function", "distractor",
                          "kind", kind ? kind : "strategy", "description", desc, "rules", rules);
    free(name);
    return s;
}
