/* ifeval_lang.c — the language detector behind language:response_language
 * and change_case:english_capital / english_lowercase.
 *
 * The original calls langdetect (seeded), a naive-Bayes vote over sampled
 * character n-grams.  This is a deterministic stand-in that keeps the parts
 * of langdetect that decide the benchmark's cases and replaces the n-gram
 * model by explicit evidence from data/ifeval/languages.tsv:
 *   1. like langdetect: URLs and e-mail addresses are removed; words in
 *      capitals (two or more upper-case letters, no lower case) carry no
 *      evidence; when Latin letters are fewer than half the other letters
 *      they are dropped;
 *   2. the script with the most letters wins (a response that is mostly
 *      English with one line of Hindi is English);
 *   3. within the script, each word found in a language's function-word list
 *      scores 2 and each letter typical of the language scores 1; the best
 *      score wins, ties going to the first language of the script.
 * A text with no letters has "no features" (NULL), as in langdetect.
 * Where it can differ from langdetect: short texts mixing two languages of
 * one script in similar amounts, languages outside the table, and texts
 * whose words are all in capitals (used here, lower-cased, as a fallback). */
#include "ifeval.h"
#include "util.h"

#include <utf8proc.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


#define MAX_LANGS 64
#define MAX_SCRIPTS 24

typedef struct {
    char code[8];
    int script;
    int32_t *letters;      /* sorted code points */
    size_t nletters;
    char **words;          /* sorted */
    size_t nwords;
} lang;

static const char *const SCRIPTS[] = {
    "Latin", "Cyrillic", "Arabic", "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Tamil",
    "Telugu", "Kannada", "Malayalam", "Thai", "Hangul", "Hebrew", "Greek", "Kana", "Han", NULL,
};
enum { S_LATIN, S_CYRILLIC, S_ARABIC, S_DEVANAGARI, S_BENGALI, S_GURMUKHI, S_GUJARATI, S_TAMIL,
       S_TELUGU, S_KANNADA, S_MALAYALAM, S_THAI, S_HANGUL, S_HEBREW, S_GREEK, S_KANA, S_HAN, S_OTHER };

static lang L[MAX_LANGS];
static int nlang = -1;

/* Script of a code point by Unicode block; S_OTHER for the rest. */
static int script_of(int32_t c)
{
    static const struct { int32_t lo, hi; int s; } R[] = {
        { 0x41, 0x5A, S_LATIN }, { 0x61, 0x7A, S_LATIN }, { 0xC0, 0x24F, S_LATIN },
        { 0x1E00, 0x1EFF, S_LATIN }, { 0x370, 0x3FF, S_GREEK }, { 0x400, 0x52F, S_CYRILLIC },
        { 0x590, 0x5FF, S_HEBREW }, { 0x600, 0x6FF, S_ARABIC }, { 0x750, 0x77F, S_ARABIC },
        { 0xFB50, 0xFDFF, S_ARABIC }, { 0xFE70, 0xFEFF, S_ARABIC }, { 0x900, 0x97F, S_DEVANAGARI },
        { 0x980, 0x9FF, S_BENGALI }, { 0xA00, 0xA7F, S_GURMUKHI }, { 0xA80, 0xAFF, S_GUJARATI },
        { 0xB80, 0xBFF, S_TAMIL }, { 0xC00, 0xC7F, S_TELUGU }, { 0xC80, 0xCFF, S_KANNADA },
        { 0xD00, 0xD7F, S_MALAYALAM }, { 0xE00, 0xE7F, S_THAI }, { 0x1100, 0x11FF, S_HANGUL },
        { 0x3130, 0x318F, S_HANGUL }, { 0xAC00, 0xD7AF, S_HANGUL }, { 0x3040, 0x30FF, S_KANA },
        { 0x3400, 0x4DBF, S_HAN }, { 0x4E00, 0x9FFF, S_HAN },
    };
    for (size_t i = 0; i < sizeof R / sizeof *R; i++)
        if (c >= R[i].lo && c <= R[i].hi) return R[i].s;
    return S_OTHER;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int parse_line(lang *g, char *line, char **err, const char *path, long lno)
{
    char *f[4];
    int nf = 0;
    for (char *p = line; nf < 4;) {
        f[nf++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = 0;
        p = t + 1;
    }
    if (nf != 4) { *err = xasprintf("%s:%ld: expected 4 tab-separated fields", path, lno); return -1; }
    if (strlen(f[0]) >= sizeof g->code) { *err = xasprintf("%s:%ld: code too long", path, lno); return -1; }
    strcpy(g->code, f[0]);
    g->script = -1;
    for (int s = 0; SCRIPTS[s]; s++) if (!strcmp(SCRIPTS[s], f[1])) g->script = s;
    if (g->script < 0) { *err = xasprintf("%s:%ld: unknown script \"%s\"", path, lno, f[1]); return -1; }
    size_t n = strlen(f[2]);
    g->letters = xmalloc((n + 1) * sizeof *g->letters);
    if (strcmp(f[2], "-"))
        for (size_t i = 0, k; i < n; i += k) g->letters[g->nletters++] = ifv_utf8_at(f[2], n, i, &k);
    qsort(g->letters, g->nletters, sizeof *g->letters, cmp_i32);
    size_t cap = 8;
    g->words = xmalloc(cap * sizeof *g->words);
    if (strcmp(f[3], "-"))
        for (char *w = strtok(f[3], " "); w; w = strtok(NULL, " ")) {
            if (g->nwords == cap) g->words = xrealloc(g->words, (cap *= 2) * sizeof *g->words);
            g->words[g->nwords++] = xstrdup(w);
        }
    qsort(g->words, g->nwords, sizeof *g->words, cmp_str);
    return 0;
}

int ifeval_lang_load(const char *path, char **err)
{
    if (nlang >= 0) return 0;
    char *owned = NULL;
    if (!path) {
        owned = hat_data_path("ifeval/languages.tsv");
        if (!owned) { *err = xstrdup("data file ifeval/languages.tsv not found"); return -1; }
        path = owned;
    }
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) { *err = xasprintf("cannot read %s", path); free(owned); return -1; }
    int n = 0, rc = 0;
    long lno = 0;
    for (char *line = buf, *nl; line < buf + len && !rc; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(buf + len - line));
        if (!nl) nl = buf + len;
        *nl = 0;
        lno++;
        if (!*line || *line == '#') continue;
        if (n == MAX_LANGS) { *err = xasprintf("%s:%ld: too many languages", path, lno); rc = -1; break; }
        rc = parse_line(&L[n], line, err, path, lno);
        if (!rc) n++;
    }
    free(buf);
    free(owned);
    if (rc) return -1;
    nlang = n;
    return 0;
}

/* One word of the text: its bytes, script and whether it is in capitals. */
typedef struct { size_t at, len, letters; int script, caps; } word;

static int is_letter(int32_t c)
{
    int cat = utf8proc_category(c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_ME);
}

static word *split_words(const char *s, size_t n, size_t *nw)
{
    size_t cap = 32, k;
    word *v = xmalloc(cap * sizeof *v);
    *nw = 0;
    for (size_t i = 0; i < n;) {
        int32_t c = ifv_utf8_at(s, n, i, &k);
        if (!is_letter(c)) { i += k; continue; }
        word w = { i, 0, 0, script_of(c), 0 };
        int upper = 0, lower = 0;
        while (i < n && is_letter(c = ifv_utf8_at(s, n, i, &k))) {
            int cat = utf8proc_category(c);
            upper += cat == UTF8PROC_CATEGORY_LU;
            lower += cat == UTF8PROC_CATEGORY_LL;
            w.letters++;
            i += k;
        }
        w.len = i - w.at;
        w.caps = upper >= 2 && lower == 0;
        if (*nw == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[(*nw)++] = w;
    }
    return v;
}

/* langdetect removes URLs and e-mail addresses before looking. */
static char *clean(const char *text)
{
    char *a = ifeval_re_sub("https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}", 0, " ", text);
    char *b = ifeval_re_sub("[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}", 0, " ", a);
    free(a);
    return b;
}

static int has_word(const lang *g, const char *w)
{
    return bsearch(&w, g->words, g->nwords, sizeof *g->words, cmp_str) != NULL;
}

static int has_letter(const lang *g, int32_t c)
{
    return bsearch(&c, g->letters, g->nletters, sizeof *g->letters, cmp_i32) != NULL;
}

/* Pick a language among those of script sc from the usable words. */
static const char *pick_in_script(const char *s, const word *w, size_t nw, const char *use, int sc)
{
    long score[MAX_LANGS] = { 0 };
    for (size_t i = 0; i < nw; i++) {
        if (!use[i] || w[i].script != sc) continue;
        char *t = xstrndup(s + w[i].at, w[i].len), *low = ifeval_lower(t);
        size_t ln = strlen(low), k;
        for (int g = 0; g < nlang; g++) {
            if (L[g].script != sc) continue;
            if (has_word(&L[g], low)) score[g] += 2;
            for (size_t j = 0; j < w[i].len; j += k)
                if (has_letter(&L[g], ifv_utf8_at(s + w[i].at, w[i].len, j, &k))) score[g]++;
        }
        (void)ln;
        free(t);
        free(low);
    }
    int best = -1;
    for (int g = 0; g < nlang; g++)
        if (L[g].script == sc && (best < 0 || score[g] > score[best])) best = g;
    return best < 0 ? NULL : L[best].code;
}

static const char *detect_words(const char *s, const word *w, size_t nw, const char *use)
{
    long mass[MAX_SCRIPTS] = { 0 };
    for (size_t i = 0; i < nw; i++)
        if (use[i] && w[i].script != S_OTHER) mass[w[i].script] += (long)w[i].letters;
    if (mass[S_KANA]) { mass[S_KANA] += mass[S_HAN]; mass[S_HAN] = 0; }   /* Japanese */
    int best = -1;
    for (int sc = 0; sc < S_OTHER; sc++)
        if (mass[sc] > 0 && (best < 0 || mass[sc] > mass[best])) best = sc;
    if (best < 0) return NULL;
    if (best == S_KANA) return "ja";
    return pick_in_script(s, w, nw, use, best);
}

const char *ifeval_detect_language(const char *text)
{
    char *err = NULL;
    if (ifeval_lang_load(NULL, &err)) { hat_warn("%s", err); free(err); return NULL; }
    char *s = clean(text);
    size_t n = strlen(s), nw;
    word *w = split_words(s, n, &nw);
    char *use = xcalloc(nw + 1, 1);
    long latin = 0, other = 0;
    for (size_t i = 0; i < nw; i++) {
        if (w[i].script == S_LATIN) latin += (long)w[i].letters;
        else other += (long)w[i].letters;
    }
    for (size_t i = 0; i < nw; i++)
        use[i] = !w[i].caps && !(latin * 2 < other && w[i].script == S_LATIN);
    const char *r = detect_words(s, w, nw, use);
    if (!r) {   /* only capitals: let them speak after all */
        for (size_t i = 0; i < nw; i++) use[i] = !(latin * 2 < other && w[i].script == S_LATIN);
        r = detect_words(s, w, nw, use);
    }
    free(use);
    free(w);
    free(s);
    return r;
}
