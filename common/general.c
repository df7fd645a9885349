/* general.c — general-gen's record builder.  A record is drawn in three
 * steps: a task (template + topic) and up to three compatible constraints;
 * a response assembled from building blocks in the shape the constraints
 * ask for (bullets, sections, paragraphs, title, postscript, ...), with
 * count thresholds (words, sentences, letters, capitals) read off the
 * finished text so they hold; and a check of the response with the IFEval
 * checkers (common/ifeval*.c).  A draw that fails the check is redrawn. */
#include "general.h"
#include "ifeval.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <utf8proc.h>

#include <stdlib.h>
#include <string.h>

/* base, opd and eval share constraints.json's phrasings (phrasings[i]
 * belongs to split i mod 3); dev, the split settings are chosen on, has
 * only its own (split_phrasings.dev): a fourth wording of every
 * instruction, none of them the base's, OPD's or the evaluation's. */
static const char *const SPLITS[] = { "base", "opd", "eval", "dev" };
#define NSPLITS 4
#define DEV 3

struct general_gen {
    json_t *tasks, *cons, *blocks;
    char **topics, **words;
    size_t ntopics, nwords;
};

int general_split(const char *name)
{
    for (int i = 0; i < NSPLITS; i++) if (!strcmp(name, SPLITS[i])) return i;
    return -1;
}

static char *data_file(const char *dir, const char *name, char **err)
{
    char *p = dir ? xasprintf("%s/%s", dir, name) : NULL;
    if (!p) {
        char *rel = xasprintf("general/%s", name);
        p = hat_data_path(rel);
        if (!p) *err = xasprintf("data file %s not found", rel);
        free(rel);
    }
    return p;
}

static char **load_lines(const char *path, size_t *n, char **err)
{
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) { *err = xasprintf("cannot read %s", path); return NULL; }
    size_t cap = 64;
    char **v = xmalloc(cap * sizeof *v);
    *n = 0;
    for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
        if (!*s || *s == '#') continue;
        if (*n + 1 >= cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = xstrdup(s);
    }
    free(buf);
    if (!*n) { *err = xasprintf("%s: no entries", path); free(v); return NULL; }
    return v;
}

void general_free(general_gen *g)
{
    if (!g) return;
    json_decref(g->tasks);
    json_decref(g->cons);
    json_decref(g->blocks);
    for (size_t i = 0; i < g->ntopics; i++) free(g->topics[i]);
    for (size_t i = 0; i < g->nwords; i++) free(g->words[i]);
    free(g->topics);
    free(g->words);
    free(g);
}

/* Every phrasing a string, and no phrasing in two splits: a split's own
 * phrasings (split_phrasings) must not repeat one another split draws, or
 * the splits would stop being unseen by one another. */
static int check_phrasings(json_t *cons, char **err)
{
    const char *id;
    json_t *c;
    json_object_foreach(json_object_get(cons, "constraints"), id, c) {
        json_t *ph = json_object_get(c, "phrasings"), *own = json_object_get(c, "split_phrasings");
        if (!json_array_size(ph)) { *err = xasprintf("constraints.json: %s: no phrasings", id); return -1; }
        if (own && !json_is_object(own)) { *err = xasprintf("constraints.json: %s: split_phrasings must be an object", id); return -1; }
        for (size_t a = 0; a < json_array_size(ph); a++)
            for (size_t b = a + 1; b < json_array_size(ph); b++)
                if (a % 3 != b % 3 && json_equal(json_array_get(ph, a), json_array_get(ph, b))) {
                    *err = xasprintf("constraints.json: %s: phrasings[%zu] and [%zu] are the same in splits %s and %s",
                                     id, a, b, SPLITS[a % 3], SPLITS[b % 3]);
                    return -1;
                }
        const char *sp;
        json_t *list;
        json_object_foreach(own, sp, list) {
            int s = general_split(sp);
            if (s < 0 || !json_is_array(list)) {
                *err = xasprintf("constraints.json: %s: split_phrasings.%s: %s", id, sp, s < 0 ? "no such split" : "must be an array");
                return -1;
            }
            size_t i, k;
            json_t *t, *u;
            json_array_foreach(list, i, t) {
                if (!json_is_string(t)) { *err = xasprintf("constraints.json: %s: split_phrasings.%s[%zu] must be a string", id, sp, i); return -1; }
                json_array_foreach(ph, k, u)
                    if ((int)(k % 3) != s && json_equal(t, u)) {
                        *err = xasprintf("constraints.json: %s: split_phrasings.%s[%zu] is phrasings[%zu], which split %s draws",
                                         id, sp, i, k, SPLITS[k % 3]);
                        return -1;
                    }
                const char *sp2;
                json_t *l2;
                json_object_foreach(own, sp2, l2)
                    json_array_foreach(strcmp(sp, sp2) ? l2 : NULL, k, u)
                        if (json_equal(t, u)) {
                            *err = xasprintf("constraints.json: %s: split_phrasings.%s[%zu] is also split %s's", id, sp, i, sp2);
                            return -1;
                        }
            }
        }
        if (!json_array_size(json_object_get(own, SPLITS[DEV]))) {
            *err = xasprintf("constraints.json: %s: no split_phrasings.dev (the dev split draws only its own)", id);
            return -1;
        }
    }
    return 0;
}

general_gen *general_load(const char *dir, char **err)
{
    general_gen *g = xcalloc(1, sizeof *g);
    static const char *const jf[] = { "tasks.json", "constraints.json", "blocks.json" };
    json_t **dst[] = { &g->tasks, &g->cons, &g->blocks };
    for (int i = 0; i < 3; i++) {
        char *p = data_file(dir, jf[i], err);
        if (!p) goto fail;
        *dst[i] = json_load_path(p);
        if (!*dst[i]) { *err = xasprintf("cannot load %s", p); free(p); goto fail; }
        free(p);
    }
    char *p = data_file(dir, "topics.txt", err);
    if (!p || !(g->topics = load_lines(p, &g->ntopics, err))) { free(p); goto fail; }
    free(p);
    p = data_file(dir, "words.txt", err);
    if (!p || !(g->words = load_lines(p, &g->nwords, err))) { free(p); goto fail; }
    free(p);
    for (int s = 0; s < NSPLITS; s++)
        if (!json_array_size(json_object_get(g->tasks, SPLITS[s]))) {
            *err = xasprintf("tasks.json: no templates for split %s", SPLITS[s]);
            goto fail;
        }
    if (check_phrasings(g->cons, err)) goto fail;
    if (ifeval_punkt_load(NULL, err) || ifeval_lang_load(NULL, err)) goto fail;
    return g;
fail:
    general_free(g);
    return NULL;
}

/* ---- small helpers ------------------------------------------------------ */

static const char *pick(rng_t *r, json_t *arr)
{
    size_t n = json_array_size(arr);
    return n ? json_string_value(json_array_get(arr, rng_below(r, n))) : "";
}

static json_t *block(const general_gen *g, const char *name) { return json_object_get(g->blocks, name); }

/* Replace every {key} by its value from a JSON object of strings. */
static char *fill(const char *tmpl, json_t *vars)
{
    sbuf b;
    sbuf_init(&b);
    for (const char *p = tmpl; *p;) {
        const char *e = *p == '{' ? strchr(p, '}') : NULL;
        if (e) {
            char *k = xstrndup(p + 1, (size_t)(e - p - 1));
            const char *v = json_string_value(json_object_get(vars, k));
            free(k);
            if (v) { sbuf_puts(&b, v); p = e + 1; continue; }
        }
        sbuf_putc(&b, *p++);
    }
    return sbuf_detach(&b);
}

static char *map_case(const char *s, int upper)
{
    size_t n = strlen(s), k;
    sbuf b;
    sbuf_init(&b);
    for (size_t i = 0; i < n; i += k) {
        int c = ifv_utf8_at(s, n, i, &k);
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t m = utf8proc_encode_char(upper ? utf8proc_toupper(c) : utf8proc_tolower(c), enc);
        sbuf_add(&b, (const char *)enc, (size_t)m);
    }
    return sbuf_detach(&b);
}

static char *capitalise(const char *s)
{
    char *t = xstrdup(s);
    if (t[0] >= 'a' && t[0] <= 'z') t[0] = (char)(t[0] - 'a' + 'A');
    return t;
}

/* A sentence from blocks[name] for the topic. */
static char *sentence(const general_gen *g, rng_t *r, const char *name, json_t *vars)
{
    return fill(pick(r, block(g, name)), vars);
}

/* n distinct sentences joined by spaces. */
static void sentences(const general_gen *g, rng_t *r, json_t *vars, int n, sbuf *out)
{
    json_t *all = block(g, "sentences");
    size_t m = json_array_size(all), start = rng_below(r, m), step = 1 + rng_below(r, m - 1);
    while (m % step == 0 && step > 1) step--;   /* step coprime with m keeps them distinct */
    for (int i = 0; i < n; i++) {
        char *s = fill(json_string_value(json_array_get(all, (start + (size_t)i * step) % m)), vars);
        if (i) sbuf_putc(out, ' ');
        sbuf_puts(out, s);
        free(s);
    }
}

/* ---- choosing constraints --------------------------------------------- */

static int excluded(json_t *cons, const char *a, const char *b)
{
    json_t *pair;
    size_t i;
    json_array_foreach(json_object_get(cons, "excludes"), i, pair) {
        const char *x = json_string_value(json_array_get(pair, 0)), *y = json_string_value(json_array_get(pair, 1));
        if ((!strcmp(x, a) && !strcmp(y, b)) || (!strcmp(x, b) && !strcmp(y, a))) return 1;
    }
    return 0;
}

static int is_solo(json_t *cons, const char *id)
{
    json_t *v;
    size_t i;
    json_array_foreach(json_object_get(cons, "solo"), i, v) if (!strcmp(json_string_value(v), id)) return 1;
    return 0;
}

/* Up to k compatible ids (k drawn 0..3). */
static int choose(const general_gen *g, rng_t *r, const char *ids[3])
{
    int k = (int)rng_below(r, 4), n = 0;
    const char *all[IFEVAL_N_INSTRUCTIONS];
    for (int i = 0; i < IFEVAL_N_INSTRUCTIONS; i++) all[i] = ifeval_instruction_ids[i];
    rng_shuffle(r, all, IFEVAL_N_INSTRUCTIONS, sizeof *all);
    for (int i = 0; i < IFEVAL_N_INSTRUCTIONS && n < k; i++) {
        int solo = is_solo(g->cons, all[i]), ok = !(solo && n > 0);
        for (int j = 0; j < n && ok; j++) ok = !excluded(g->cons, all[i], ids[j]) && !is_solo(g->cons, ids[j]);
        if (ok) ids[n++] = all[i];
        if (solo && ok) break;
    }
    return n;
}

/* ---- building one response -------------------------------------------- */

typedef struct {
    const char *ids[3];
    int n;
    json_t *kw[3];       /* kwargs per id */
    json_t *vars[3];     /* placeholders for each constraint's phrasing */
} draw;

static int has(const draw *d, const char *id)
{
    for (int i = 0; i < d->n; i++) if (!strcmp(d->ids[i], id)) return i;
    return -1;
}

static void setint(json_t *o, const char *k, long v) { json_object_set_new(o, k, json_integer(v)); }
static void setstr(json_t *o, const char *k, const char *v) { json_object_set_new(o, k, json_string(v)); }

static void setnum_var(draw *d, int i, long v)
{
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setstr(d->vars[i], "n", b);
}

/* The body of the response in the shape the format constraints ask for. */
static void body(const general_gen *g, rng_t *r, draw *d, json_t *tv, sbuf *out)
{
    int i;
    if ((i = has(d, "detectable_format:number_bullet_lists")) >= 0) {
        long n = 2 + (long)rng_below(r, 4);
        sentences(g, r, tv, 1, out);
        json_t *bl = block(g, "bullets");
        size_t m = json_array_size(bl), s = rng_below(r, m);
        for (long k = 0; k < n; k++) {
            char *b = fill(json_string_value(json_array_get(bl, (s + (size_t)k) % m)), tv);
            sbuf_printf(out, "\n* %s", b);
            free(b);
        }
        setint(d->kw[i], "num_bullets", n);
        setnum_var(d, i, n);
    } else if ((i = has(d, "detectable_format:multiple_sections")) >= 0) {
        long n = 2 + (long)rng_below(r, 3);
        const char *sp = pick(r, block(g, "section_spliters"));
        for (long k = 1; k <= n; k++) {
            sbuf_printf(out, "%s%s %ld\n", k > 1 ? "\n\n" : "", sp, k);
            sentences(g, r, tv, 2, out);
        }
        setstr(d->kw[i], "section_spliter", sp);
        setint(d->kw[i], "num_sections", n);
        setstr(d->vars[i], "spliter", sp);
        setnum_var(d, i, n);
    } else if ((i = has(d, "length_constraints:number_paragraphs")) >= 0) {
        long n = 2 + (long)rng_below(r, 3);
        for (long k = 0; k < n; k++) {
            if (k) sbuf_puts(out, "\n\n***\n\n");
            sentences(g, r, tv, 2, out);
        }
        setint(d->kw[i], "num_paragraphs", n);
        setnum_var(d, i, n);
    } else if ((i = has(d, "length_constraints:nth_paragraph_first_word")) >= 0) {
        long n = 2 + (long)rng_below(r, 3), nth = 1 + (long)rng_below(r, (uint64_t)n);
        const char *w = pick(r, block(g, "first_words"));
        for (long k = 1; k <= n; k++) {
            if (k > 1) sbuf_puts(out, "\n\n");
            if (k == nth) {
                char *cw = capitalise(w);
                sbuf_printf(out, "%s ", cw);
                free(cw);
            }
            sentences(g, r, tv, 2, out);
        }
        setint(d->kw[i], "num_paragraphs", n);
        setint(d->kw[i], "nth_paragraph", nth);
        setstr(d->kw[i], "first_word", w);
        setnum_var(d, i, n);
        char b[32];
        snprintf(b, sizeof b, "%ld", nth);
        setstr(d->vars[i], "nth", b);
        setstr(d->vars[i], "word", w);
    } else {
        int paras = 1 + (int)rng_below(r, 3);
        for (int k = 0; k < paras; k++) {
            if (k) sbuf_puts(out, "\n\n");
            sentences(g, r, tv, 2 + (int)rng_below(r, 2), out);
        }
    }
}

/* Sentences added inside the text: highlights, placeholders, keywords. */
static void inline_parts(const general_gen *g, rng_t *r, draw *d, json_t *tv, sbuf *out)
{
    int i;
    if ((i = has(d, "detectable_format:number_highlighted_sections")) >= 0) {
        long n = 1 + (long)rng_below(r, 3);
        sbuf_puts(out, " Keep in mind");
        for (long k = 0; k < n; k++) sbuf_printf(out, "%s *%s*", k ? " and" : "", g->words[rng_below(r, g->nwords)]);
        sbuf_putc(out, '.');
        setint(d->kw[i], "num_highlights", n);
        setnum_var(d, i, n);
    }
    if ((i = has(d, "detectable_content:number_placeholders")) >= 0) {
        long n = 1 + (long)rng_below(r, 3);
        json_t *ph = block(g, "placeholders");
        size_t s = rng_below(r, json_array_size(ph));
        sbuf_puts(out, " Fill in");
        for (long k = 0; k < n; k++)
            sbuf_printf(out, "%s %s", k ? " and" : "", json_string_value(json_array_get(ph, (s + (size_t)k) % json_array_size(ph))));
        sbuf_puts(out, " before you share this.");
        setint(d->kw[i], "num_placeholders", n);
        setnum_var(d, i, n);
    }
    if ((i = has(d, "keywords:existence")) >= 0) {
        size_t a = rng_below(r, g->nwords), b = (a + 1 + rng_below(r, g->nwords - 1)) % g->nwords;
        sbuf_printf(out, " It also brings to mind words like %s and %s.", g->words[a], g->words[b]);
        json_t *l = json_array();
        json_array_append_new(l, json_string(g->words[a]));
        json_array_append_new(l, json_string(g->words[b]));
        json_object_set_new(d->kw[i], "keywords", l);
        char *s = xasprintf("%s and %s", g->words[a], g->words[b]);
        setstr(d->vars[i], "keywords", s);
        free(s);
    }
    if ((i = has(d, "keywords:frequency")) >= 0) {
        const char *w = g->words[rng_below(r, g->nwords)];
        json_t *v = json_object();
        setstr(v, "kw", w);
        long n = 1 + (long)rng_below(r, 3);
        int less = rng_chance(r, 0.3);
        if (!less)
            for (long k = 0; k < n; k++) {
                char *s = sentence(g, r, "frequency_sentences", v);
                sbuf_printf(out, " %s", s);
                free(s);
            }
        json_decref(v);
        setstr(d->kw[i], "keyword", w);
        setint(d->kw[i], "frequency", n);
        setstr(d->kw[i], "relation", less ? "less than" : "at least");
        setstr(d->vars[i], "keyword", w);
        setstr(d->vars[i], "relation", less ? "less than" : "at least");
        setnum_var(d, i, n);
    }
    if (has(d, "change_case:capital_word_frequency") >= 0 && rng_chance(r, 0.5)) {
        long n = 1 + (long)rng_below(r, 3);
        for (long k = 0; k < n; k++) sbuf_printf(out, " This is a %s point.", pick(r, block(g, "capital_words")));
    }
}

/* Wrappers around the whole text, in the order the checks need. */
static char *wrap(const general_gen *g, rng_t *r, draw *d, json_t *tv, char *text)
{
    sbuf b;
    int i;
    if (has(d, "detectable_format:title") >= 0) {
        char *t = sentence(g, r, "titles", tv);
        char *s = xasprintf("<<%s>>\n%s", t, text);
        free(t); free(text); text = s;
    }
    if ((i = has(d, "detectable_content:postscript")) >= 0) {
        const char *m = rng_chance(r, 0.5) ? "P.S." : "P.P.S";
        char *ps = sentence(g, r, "postscripts", tv);
        char *s = xasprintf("%s\n\n%s %s", text, m, ps);
        free(ps); free(text); text = s;
        setstr(d->kw[i], "postscript_marker", m);
        setstr(d->vars[i], "marker", m);
    }
    if ((i = has(d, "startend:end_checker")) >= 0) {
        const char *p = pick(r, block(g, "end_phrases"));
        char *s = xasprintf("%s %s", text, p);
        free(text); text = s;
        setstr(d->kw[i], "end_phrase", p);
        setstr(d->vars[i], "phrase", p);
    }
    if (has(d, "change_case:english_capital") >= 0) { char *s = map_case(text, 1); free(text); text = s; }
    if (has(d, "change_case:english_lowercase") >= 0) { char *s = map_case(text, 0); free(text); text = s; }
    if (has(d, "punctuation:no_comma") >= 0) {
        sbuf_init(&b);
        for (const char *p = text; *p; p++) if (*p != ',') sbuf_putc(&b, *p);
        free(text);
        text = sbuf_detach(&b);
    }
    if (has(d, "startend:quotation") >= 0) { char *s = xasprintf("\"%s\"", text); free(text); text = s; }
    return text;
}

/* Thresholds read off the finished response so that they hold. */
static void thresholds(const general_gen *g, rng_t *r, draw *d, const char *text)
{
    int i;
    const char *rel = rng_chance(r, 0.5) ? "less than" : "at least";
    int less = rel[0] == 'l';
    if ((i = has(d, "length_constraints:number_words")) >= 0) {
        long w = ifeval_count_words(text);
        long n = less ? (w / 10 + 1 + (long)rng_below(r, 3)) * 10 : (w * 8 / 10 / 10) * 10;
        if (n < 1) n = 1;
        setint(d->kw[i], "num_words", n);
        setstr(d->kw[i], "relation", rel);
        setnum_var(d, i, n);
        setstr(d->vars[i], "relation", rel);
    }
    if ((i = has(d, "length_constraints:number_sentences")) >= 0) {
        long c = ifeval_count_sentences(text);
        long n = less ? c + 1 + (long)rng_below(r, 3) : c - (long)rng_below(r, 2);
        if (n < 1) n = 1;
        setint(d->kw[i], "num_sentences", n);
        setstr(d->kw[i], "relation", rel);
        setnum_var(d, i, n);
        setstr(d->vars[i], "relation", rel);
    }
    if ((i = has(d, "keywords:letter_frequency")) >= 0) {
        static const char common[] = "aeinorst", rare[] = "jqxz";
        char letter[2] = { less ? rare[rng_below(r, 4)] : common[rng_below(r, 8)], 0 };
        char *low = ifeval_lower(text);
        long c = 0;
        for (const char *p = low; *p; p++) c += *p == letter[0];
        free(low);
        long n = less ? c + 1 + (long)rng_below(r, 3) : c - (long)rng_below(r, (uint64_t)(c / 2 + 1));
        if (n < 1) { n = c + 1; rel = "less than"; }
        setstr(d->kw[i], "letter", letter);
        setint(d->kw[i], "let_frequency", n);
        setstr(d->kw[i], "let_relation", rel);
        setstr(d->vars[i], "letter", letter);
        setnum_var(d, i, n);
        setstr(d->vars[i], "relation", rel);
    }
    if ((i = has(d, "change_case:capital_word_frequency")) >= 0) {
        long nt, c = 0;
        char **t = ifeval_word_tokenize(text, &nt);
        for (long k = 0; k < nt; k++) c += ifeval_isupper(t[k], strlen(t[k]));
        ifeval_strv_free(t);
        const char *cr = c > 0 ? "at least" : "less than";
        long n = c > 0 ? c : 1 + (long)rng_below(r, 3);
        setint(d->kw[i], "capital_frequency", n);
        setstr(d->kw[i], "capital_relation", cr);
        setnum_var(d, i, n);
        setstr(d->vars[i], "relation", cr);
    }
    if ((i = has(d, "keywords:forbidden_words")) >= 0) {
        json_t *l = json_array();
        sbuf names;
        sbuf_init(&names);
        for (size_t t = 0, s = rng_below(r, g->nwords); t < g->nwords && json_array_size(l) < 2; t++) {
            const char *w = g->words[(s + t) % g->nwords];
            char *pat = xasprintf("\\b%s\\b", w);
            int hit = ifeval_re_search(pat, IFV_I, text) == 1;
            free(pat);
            if (hit) continue;
            json_array_append_new(l, json_string(w));
            sbuf_printf(&names, "%s%s", names.len ? " and " : "", w);
        }
        json_object_set_new(d->kw[i], "forbidden_words", l);
        setstr(d->vars[i], "forbidden", names.s ? names.s : "");
        sbuf_free(&names);
    }
}

/* Responses for the solo constraints. */
static char *solo_response(const general_gen *g, rng_t *r, draw *d, json_t *tv, const char *topic)
{
    int i;
    sbuf b;
    sbuf_init(&b);
    if ((i = has(d, "language:response_language")) >= 0) {
        json_t *langs = block(g, "languages");
        size_t n = json_object_size(langs), want = rng_below(r, n), k = 0;
        const char *code = NULL;
        json_t *sents = NULL;
        json_object_foreach(langs, code, sents) if (k++ == want) break;
        size_t m = json_array_size(sents);
        for (size_t s = 0; s < m; s++) sbuf_printf(&b, "%s%s", s ? " " : "", json_string_value(json_array_get(sents, s)));
        setstr(d->kw[i], "language", code);
        setstr(d->vars[i], "language", json_string_value(json_object_get(block(g, "language_names"), code)));
    } else if (has(d, "detectable_format:constrained_response") >= 0) {
        sbuf_puts(&b, pick(r, block(g, "answers")));
        sbuf_putc(&b, ' ');
        sentences(g, r, tv, 1, &b);
    } else if (has(d, "detectable_format:json_format") >= 0) {
        json_t *o = json_object();
        setstr(o, "topic", topic);
        sbuf s;
        sbuf_init(&s);
        sentences(g, r, tv, 2, &s);
        setstr(o, "answer", s.s);
        sbuf_free(&s);
        char *js = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        sbuf_printf(&b, rng_chance(r, 0.5) ? "```json\n%s\n```" : "%s", js);
        free(js);
        json_decref(o);
    } else {   /* two responses */
        sentences(g, r, tv, 2, &b);
        sbuf_puts(&b, "\n******\n");
        sentences(g, r, tv, 3, &b);
    }
    return sbuf_detach(&b);
}

/* The prompt: the task and each constraint's phrasing for this split. */
static char *compose_prompt(const general_gen *g, rng_t *r, int split, const draw *d, const char *task, int skip_repeat)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, task);
    for (int i = 0; i < d->n; i++) {
        if (skip_repeat && !strcmp(d->ids[i], "combination:repeat_prompt")) continue;
        json_t *c = json_object_get(json_object_get(g->cons, "constraints"), d->ids[i]);
        json_t *ph = json_object_get(c, "phrasings");
        json_t *own = json_object_get(json_object_get(c, "split_phrasings"), SPLITS[split]);
        /* The split's share: indices split, split+3, ..., then the
         * phrasings only it draws (dev: those alone, checked at load).
         * One draw whatever the count, so a split's own phrasings change
         * no other split's records. */
        size_t n = json_array_size(ph), per = split == DEV ? 0 : (n + 2 - (size_t)split) / 3,
               extra = json_array_size(own);
        size_t k = rng_below(r, per + extra ? per + extra : 1);
        const char *t = k < per ? json_string_value(json_array_get(ph, (size_t)split + 3 * k))
                                : json_string_value(json_array_get(own, k - per));
        char *s = fill(t ? t : json_string_value(json_array_get(ph, (size_t)split)), d->vars[i]);
        sbuf_printf(&b, " %s", s);
        free(s);
    }
    return sbuf_detach(&b);
}

static json_t *message(const char *role, const char *content)
{
    json_t *m = json_object();
    setstr(m, "role", role);
    setstr(m, "content", content);
    return m;
}

static json_t *record(int split, uint64_t seed, long index, const char *prompt, const char *resp, const draw *d)
{
    json_t *o = json_object();
    char *id = xasprintf("general-%s-%llu-%06ld", SPLITS[split], (unsigned long long)seed, index);
    setstr(o, "id", id);
    free(id);
    setstr(o, "split", SPLITS[split]);
    json_t *msgs = json_array();
    json_array_append_new(msgs, message("user", prompt));
    json_array_append_new(msgs, message("assistant", resp));
    json_object_set_new(o, "messages", msgs);
    setstr(o, "prompt", prompt);
    json_t *ids = json_array(), *kws = json_array();
    for (int i = 0; i < d->n; i++) {
        json_array_append_new(ids, json_string(d->ids[i]));
        json_array_append(kws, d->kw[i]);
    }
    json_object_set_new(o, "instruction_id_list", ids);
    json_object_set_new(o, "kwargs", kws);
    return o;
}

/* One draw; the record or NULL when the check fails. */
static json_t *attempt(general_gen *g, rng_t *r, int split, uint64_t seed, long index)
{
    json_t *tasks = json_object_get(g->tasks, SPLITS[split]);
    json_t *t = json_array_get(tasks, rng_below(r, json_array_size(tasks)));
    const char *topic = g->topics[rng_below(r, g->ntopics)];
    json_t *tv = json_object();
    setstr(tv, "topic", topic);
    char *cap = capitalise(topic);
    setstr(tv, "Topic", cap);
    free(cap);
    sbuf passage;
    sbuf_init(&passage);
    sentences(g, r, tv, 2, &passage);
    setstr(tv, "passage", passage.s);
    sbuf_free(&passage);
    char *task = fill(json_string_value(json_object_get(t, "text")), tv);

    draw d = { .n = 0 };
    d.n = choose(g, r, d.ids);
    for (int i = 0; i < d.n; i++) { d.kw[i] = json_object(); d.vars[i] = json_object(); }
    char *text;
    if (d.n == 1 && is_solo(g->cons, d.ids[0])) text = solo_response(g, r, &d, tv, topic);
    else {
        sbuf b;
        sbuf_init(&b);
        body(g, r, &d, tv, &b);
        inline_parts(g, r, &d, tv, &b);
        text = wrap(g, r, &d, tv, sbuf_detach(&b));
        thresholds(g, r, &d, text);
    }
    char *prompt;
    int rp = has(&d, "combination:repeat_prompt");
    if (rp >= 0) {
        char *req = compose_prompt(g, r, split, &d, task, 1);
        setstr(d.kw[rp], "prompt_to_repeat", req);
        char *s = xasprintf("%s\n\n%s", req, text);
        free(text);
        text = s;
        char *full = compose_prompt(g, r, split, &d, task, 0);
        prompt = full;
        free(req);
    } else prompt = compose_prompt(g, r, split, &d, task, 0);

    json_t *rec = record(split, seed, index, prompt, text, &d);
    ifeval_verdict v;
    char *err = NULL;
    int ok = !ifeval_score(json_object_get(rec, "instruction_id_list"), json_object_get(rec, "kwargs"), text, &v, &err);
    for (int i = 0; ok && i < v.n; i++) ok = v.strict[i];
    if (err) free(err); else ifeval_verdict_free(&v);
    for (int i = 0; i < d.n; i++) { json_decref(d.kw[i]); json_decref(d.vars[i]); }
    json_decref(tv);
    free(task);
    free(text);
    free(prompt);
    if (!ok) { json_decref(rec); return NULL; }
    return rec;
}

json_t *general_make(general_gen *g, int split, uint64_t seed, long index, int tries, int *redraws)
{
    rng_t r;
    /* base, opd, eval: streams 3i + split; dev came later and takes
     * streams of their own (top bit set) so that no record of the others
     * changed and none shares a stream with dev's */
    rng_derive(&r, seed, split == DEV ? (uint64_t)index | 1ULL << 63 : (uint64_t)index * 3 + (uint64_t)split);
    *redraws = 0;
    for (int t = 0; t < tries; t++) {
        json_t *rec = attempt(g, &r, split, seed, index);
        if (rec) return rec;
        (*redraws)++;
    }
    return NULL;
}

json_t *general_import(json_t *rec, int split, long index, char **err)
{
    json_t *msgs = json_object_get(rec, "messages");
    if (!json_is_array(msgs) || !json_array_size(msgs)) { *err = xstrdup("no \"messages\" list"); return NULL; }
    json_t *out_msgs = json_array(), *m;
    const char *prompt = NULL;
    size_t i;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        if (!role || !content) {
            *err = xasprintf("messages[%zu] needs string \"role\" and \"content\"", i);
            json_decref(out_msgs);
            return NULL;
        }
        if (!prompt && !strcmp(role, "user")) prompt = content;
        json_array_append_new(out_msgs, message(role, content));
    }
    if (!prompt) { *err = xstrdup("no user message"); json_decref(out_msgs); return NULL; }
    json_t *o = json_object();
    json_t *id = json_object_get(rec, "id");
    if (json_is_string(id)) json_object_set(o, "id", id);
    else {
        char *s = xasprintf("import-%s-%06ld", SPLITS[split], index);
        setstr(o, "id", s);
        free(s);
    }
    setstr(o, "split", SPLITS[split]);
    json_object_set_new(o, "messages", out_msgs);
    setstr(o, "prompt", prompt);
    json_object_set_new(o, "instruction_id_list", json_array());
    json_object_set_new(o, "kwargs", json_array());
    return o;
}
