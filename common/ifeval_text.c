/* ifeval_text.c — the text machinery under the IFEval checkers: Python `re`
 * semantics on PCRE2, Python string predicates on utf8proc, nltk's word
 * counter, nltk's Punkt sentence tokenizer (PunktSentenceTokenizer.tokenize
 * with the English punkt_tab parameters) and nltk.word_tokenize.
 *
 * Python's `re` on str and PCRE2 in UTF+UCP mode agree on \w, \d and \b
 * (letters, numbers, underscore); they differ on \s, which in Python also
 * matches U+001C..U+001F and not U+180E.  Every pattern goes through
 * py_translate, which spells \s and \S out as Python's set.  `.`, `^` and `$`
 * agree once the newline convention is LF only. */
#include "ifeval.h"
#include "util.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Python's str.isspace() set, as the inside of a character class. */
#define PY_SPACE_SET "\\t\\n\\x0b\\f\\r\\x1c-\\x1f \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}" \
                     "\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}"

int ifv_isspace(int c)
{
    if (c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f)) return 1;
    if (c < 0x85) return 0;
    return c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
           c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Decode one code point at s[i] (bytes left n); invalid bytes read as
 * U+FFFD one byte long, so scanning always advances. */
int ifv_utf8_at(const char *s, size_t n, size_t i, size_t *len)
{
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    if (k <= 0) { *len = 1; return 0xFFFD; }
    *len = (size_t)k;
    return c;
}

/* Start of the code point before byte i (i > 0). */
size_t ifv_utf8_prev(const char *s, size_t i)
{
    do i--; while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

/* ---- regex cache ------------------------------------------------------- */

typedef struct rx_entry {
    char *pat;
    int flags;
    pcre2_code *code;
    struct rx_entry *next;
} rx_entry;

static rx_entry *rx_table[512];
static pcre2_match_data *rx_md;

/* Spell \s and \S as Python's set (outside and inside classes). */
static char *py_translate(const char *p)
{
    sbuf b;
    sbuf_init(&b);
    int in_class = 0;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\' && p[i + 1]) {
            char c = p[i + 1];
            if (c == 's') sbuf_puts(&b, in_class ? PY_SPACE_SET : "[" PY_SPACE_SET "]");
            else if (c == 'S' && !in_class) sbuf_puts(&b, "[^" PY_SPACE_SET "]");
            else { sbuf_putc(&b, '\\'); sbuf_putc(&b, c); }
            i++;
            continue;
        }
        if (!in_class && p[i] == '[') {
            in_class = 1;
            sbuf_putc(&b, '[');
            if (p[i + 1] == '^') sbuf_putc(&b, p[++i]);
            if (p[i + 1] == ']') sbuf_putc(&b, p[++i]);   /* literal ] first */
            continue;
        }
        if (in_class && p[i] == ']') in_class = 0;
        sbuf_putc(&b, p[i]);
    }
    return sbuf_detach(&b);
}

static pcre2_code *rx_get(const char *pat, int flags)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *q = pat; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211ull;
    h ^= (uint64_t)flags;
    rx_entry **slot = &rx_table[h % 512];
    for (rx_entry *e = *slot; e; e = e->next)
        if (e->flags == flags && !strcmp(e->pat, pat)) return e->code;
    char *tp = py_translate(pat);
    uint32_t opt = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
    if (flags & IFV_I) opt |= PCRE2_CASELESS;
    if (flags & IFV_M) opt |= PCRE2_MULTILINE;
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)tp, PCRE2_ZERO_TERMINATED, opt, &ec, &eo, cc);
    pcre2_compile_context_free(cc);
    free(tp);
    if (!code) return NULL;
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    rx_entry *e = xcalloc(1, sizeof *e);
    e->pat = xstrdup(pat);
    e->flags = flags;
    e->code = code;
    e->next = *slot;
    *slot = e;
    return code;
}

static pcre2_match_data *md(void)
{
    if (!rx_md) rx_md = pcre2_match_data_create(32, NULL);
    return rx_md;
}

/* Next match at or after *pos following Python's rule for empty matches
 * (an empty match may not follow at the same place as the last match).
 * Fills ov[0..1]; returns the number of pairs or 0 at the end. */
static int rx_next(pcre2_code *re, const char *s, size_t n, size_t *pos, int *last_empty_at, PCRE2_SIZE **ov)
{
    while (*pos <= n) {
        uint32_t opts = 0;
        if (*last_empty_at == (int)*pos) opts = PCRE2_NOTEMPTY_ATSTART;
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, *pos, opts, md(), NULL);
        /* no match: with NOTEMPTY_ATSTART an empty match further on would
         * still have been found, so there is nothing left either way */
        if (rc < 0) return 0;
        *ov = pcre2_get_ovector_pointer(md());
        size_t st = (*ov)[0], en = (*ov)[1];
        *last_empty_at = st == en ? (int)en : -1;
        *pos = en;
        return rc == 0 ? 1 : rc;
    }
    return 0;
}

long ifeval_re_count(const char *pattern, int flags, const char *s)
{
    pcre2_code *re = rx_get(pattern, flags);
    if (!re) return -1;
    size_t n = strlen(s), pos = 0;
    int le = -1;
    long k = 0;
    PCRE2_SIZE *ov;
    while (rx_next(re, s, n, &pos, &le, &ov)) k++;
    return k;
}

int ifeval_re_search(const char *pattern, int flags, const char *s)
{
    pcre2_code *re = rx_get(pattern, flags);
    if (!re) return -1;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md(), NULL);
    return rc >= 0;
}

char *ifeval_re_sub(const char *pattern, int flags, const char *repl, const char *s)
{
    pcre2_code *re = rx_get(pattern, flags);
    if (!re) return NULL;
    size_t n = strlen(s);
    PCRE2_SIZE cap = n * 2 + 64;
    for (;;) {
        char *out = xmalloc(cap);
        PCRE2_SIZE olen = cap;
        int rc = pcre2_substitute(re, (PCRE2_SPTR)s, n, 0,
                                  PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                                  md(), NULL, (PCRE2_SPTR)repl, PCRE2_ZERO_TERMINATED,
                                  (PCRE2_UCHAR *)out, &olen);
        if (rc >= 0) return out;
        free(out);
        if (rc != PCRE2_ERROR_NOMEMORY) return NULL;
        cap = olen + 1;
    }
}

char **ifeval_re_split(const char *pattern, int flags, const char *s, long *np)
{
    pcre2_code *re = rx_get(pattern, flags);
    if (!re) return NULL;
    size_t n = strlen(s), pos = 0, from = 0, cap = 8;
    long k = 0;
    int le = -1;
    char **v = xmalloc(cap * sizeof *v);
    PCRE2_SIZE *ov;
    while (rx_next(re, s, n, &pos, &le, &ov)) {
        if ((size_t)k + 2 >= cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[k++] = xstrndup(s + from, ov[0] - from);
        from = ov[1];
    }
    if ((size_t)k + 2 >= cap) v = xrealloc(v, (cap += 2) * sizeof *v);
    v[k++] = xstrndup(s + from, n - from);
    v[k] = NULL;
    if (np) *np = k;
    return v;
}

char **ifeval_re_findall(const char *pattern, int flags, const char *s, long *np)
{
    pcre2_code *re = rx_get(pattern, flags);
    if (!re) return NULL;
    size_t n = strlen(s), pos = 0, cap = 8;
    long k = 0;
    int le = -1;
    char **v = xmalloc(cap * sizeof *v);
    PCRE2_SIZE *ov;
    while (rx_next(re, s, n, &pos, &le, &ov)) {
        if ((size_t)k + 2 >= cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[k++] = xstrndup(s + ov[0], ov[1] - ov[0]);
    }
    v[k] = NULL;
    if (np) *np = k;
    return v;
}

void ifeval_strv_free(char **v)
{
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}

/* ---- Python string predicates ------------------------------------------ */

static int cp_lower(int32_t c) { return utf8proc_category(c) == UTF8PROC_CATEGORY_LL; }
static int cp_upper(int32_t c) { return utf8proc_category(c) == UTF8PROC_CATEGORY_LU; }
static int cp_title(int32_t c) { return utf8proc_category(c) == UTF8PROC_CATEGORY_LT; }

int ifeval_isupper(const char *s, size_t n)
{
    int cased = 0;
    for (size_t i = 0, k; i < n; i += k) {
        int32_t c = ifv_utf8_at(s, n, i, &k);
        if (cp_lower(c) || cp_title(c)) return 0;
        if (cp_upper(c)) cased = 1;
    }
    return cased;
}

int ifeval_islower(const char *s, size_t n)
{
    int cased = 0;
    for (size_t i = 0, k; i < n; i += k) {
        int32_t c = ifv_utf8_at(s, n, i, &k);
        if (cp_upper(c) || cp_title(c)) return 0;
        if (cp_lower(c)) cased = 1;
    }
    return cased;
}

char *ifeval_strip(const char *s, size_t n)
{
    size_t a = 0, b = n, k;
    while (a < b && ifv_isspace(ifv_utf8_at(s, n, a, &k))) a += k;
    while (b > a) {
        size_t p = ifv_utf8_prev(s, b);
        if (!ifv_isspace(ifv_utf8_at(s, n, p, &k))) break;
        b = p;
    }
    return xstrndup(s + a, b - a);
}

char *ifeval_lower(const char *s)
{
    size_t n = strlen(s);
    sbuf b;
    sbuf_init(&b);
    for (size_t i = 0, k; i < n; i += k) {
        int32_t c = ifv_utf8_at(s, n, i, &k);
        if (c == 0xFFFD && k == 1 && (unsigned char)s[i] >= 0x80) { sbuf_add(&b, s + i, 1); continue; }
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t m = utf8proc_encode_char(utf8proc_tolower(c), enc);
        sbuf_add(&b, (const char *)enc, (size_t)m);
    }
    return sbuf_detach(&b);
}

static int is_word_cp(int32_t c)   /* Python \w: letters, numbers, underscore */
{
    if (c == '_') return 1;
    int cat = utf8proc_category(c);
    return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
           (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

long ifeval_count_words(const char *s)
{
    size_t n = strlen(s);
    long words = 0;
    int in = 0;
    for (size_t i = 0, k; i < n; i += k) {
        int w = is_word_cp(ifv_utf8_at(s, n, i, &k));
        if (w && !in) words++;
        in = w;
    }
    return words;
}

/* ---- Punkt parameters ---------------------------------------------------- */

/* A string → int map (open addressing) for the parameter sets. */
typedef struct { char **keys; int *vals; size_t cap, n; } strmap;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void map_put(strmap *m, const char *k, int v);
static void map_grow(strmap *m)
{
    strmap old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->vals = xcalloc(m->cap, sizeof *m->vals);
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) { map_put(m, old.keys[i], old.vals[i]); free(old.keys[i]); }
    free(old.keys);
    free(old.vals);
}

static void map_put(strmap *m, const char *k, int v)
{
    if ((m->n + 1) * 2 > m->cap) map_grow(m);
    size_t i = str_hash(k) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], k)) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) { m->keys[i] = xstrdup(k); m->n++; }
    m->vals[i] = v;
}

static int map_get(const strmap *m, const char *k, int dflt)
{
    if (!m->cap) return dflt;
    size_t i = str_hash(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], k)) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return dflt;
}

static struct {
    int loaded;
    strmap abbrev, colloc, starters, ortho;
} P;

enum { BEG_UC = 1 << 1, MID_UC = 1 << 2, UNK_UC = 1 << 3, BEG_LC = 1 << 4, MID_LC = 1 << 5, UNK_LC = 1 << 6 };
#define ORTHO_UC (BEG_UC | MID_UC | UNK_UC)
#define ORTHO_LC (BEG_LC | MID_LC | UNK_LC)

/* Read one punkt_tab file: each line a key (tab-separated fields kept),
 * an optional integer value after the last tab when with_value. */
static int load_tab(const char *dir, const char *name, strmap *m, int with_value, char **err)
{
    char *path = xasprintf("%s/%s", dir, name);
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) { *err = xasprintf("cannot read %s", path); free(path); return -1; }
    free(path);
    for (char *line = buf, *nl; line < buf + len; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(buf + len - line));
        if (!nl) nl = buf + len;
        *nl = 0;
        if (nl > line && nl[-1] == '\r') nl[-1] = 0;
        if (!*line) continue;
        int v = 1;
        if (with_value) {
            char *tab = strrchr(line, '\t');
            if (tab) { *tab = 0; v = atoi(tab + 1); }
        }
        map_put(m, line, v);
    }
    free(buf);
    return 0;
}

int ifeval_punkt_load(const char *dir, char **err)
{
    if (P.loaded) return 0;
    char *owned = NULL;
    if (!dir) {
        owned = hat_data_path("ifeval/punkt_english/abbrev_types.txt");
        if (!owned) { *err = xstrdup("data file ifeval/punkt_english/abbrev_types.txt not found"); return -1; }
        *strrchr(owned, '/') = 0;
        dir = owned;
    }
    int rc = load_tab(dir, "abbrev_types.txt", &P.abbrev, 0, err) ||
             load_tab(dir, "collocations.tab", &P.colloc, 0, err) ||
             load_tab(dir, "sent_starters.txt", &P.starters, 0, err) ||
             load_tab(dir, "ortho_context.tab", &P.ortho, 1, err);
    free(owned);
    if (rc) return -1;
    P.loaded = 1;
    return 0;
}

/* ---- Punkt tokens -------------------------------------------------------- */

typedef struct {
    char *tok, *type;
    unsigned period_final : 1, sentbreak : 1, abbr : 1, ellipsis : 1;
} ptok;

#define NONWORD "(?:[)\\\";}\\]\\*:@\\'\\({\\[?!])"
#define MULTICHAR "(?:\\-{2,}|\\.{2,}|(?:\\.\\s){2,}\\.)"
static const char RE_PUNKT_WORD[] =
    MULTICHAR "|(?=[^\\(\\\"\\`{\\[:;&\\#\\*@\\)}\\]\\-,])\\S+?(?=\\s|$|" NONWORD "|" MULTICHAR
    "|,(?=$|\\s|" NONWORD "|" MULTICHAR "))|\\S";
static const char RE_PERIOD_CONTEXT[] = "[\\.\\?!](?=(" NONWORD "|\\s+(\\S+)))";
static const char RE_NUMERIC[] = "^-?[\\.,]?\\d[\\d,\\.-]*\\.?$";

static void ptok_init(ptok *t, const char *s, size_t n)
{
    memset(t, 0, sizeof *t);
    t->tok = xstrndup(s, n);
    char *low = ifeval_lower(t->tok);
    if (ifeval_re_search(RE_NUMERIC, 0, low) == 1) { free(low); low = xstrdup("##number##"); }
    t->type = low;
    t->period_final = n > 0 && s[n - 1] == '.';
}

static void ptoks_free(ptok *v, size_t n)
{
    for (size_t i = 0; i < n; i++) { free(v[i].tok); free(v[i].type); }
    free(v);
}

/* _tokenize_words: per line, the punkt word regex; blank lines skipped. */
static ptok *punkt_words(const char *text, size_t len, size_t *np)
{
    pcre2_code *re = rx_get(RE_PUNKT_WORD, 0);
    size_t cap = 16, n = 0;
    ptok *v = xmalloc(cap * sizeof *v);
    for (size_t a = 0; a <= len;) {
        const char *nl = memchr(text + a, '\n', len - a);
        size_t b = nl ? (size_t)(nl - text) : len;
        char *line = xstrndup(text + a, b - a);
        size_t ln = b - a, pos = 0;
        int le = -1;
        PCRE2_SIZE *ov;
        while (rx_next(re, line, ln, &pos, &le, &ov)) {
            if (ov[1] == ov[0]) continue;
            if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
            ptok_init(&v[n++], line + ov[0], ov[1] - ov[0]);
        }
        free(line);
        if (!nl) break;
        a = b + 1;
    }
    *np = n;
    return v;
}

static void first_pass(ptok *t)
{
    const char *s = t->tok;
    size_t n = strlen(s);
    if (!strcmp(s, ".") || !strcmp(s, "?") || !strcmp(s, "!")) { t->sentbreak = 1; return; }
    if (n >= 2 && ifeval_re_search("^\\.\\.+$", 0, s) == 1) { t->ellipsis = 1; return; }
    if (t->period_final && !(n >= 2 && s[n - 2] == '.')) {
        char *stem = xstrndup(s, n - 1);
        char *low = ifeval_lower(stem);
        const char *dash = strrchr(low, '-');
        if (map_get(&P.abbrev, low, 0) || map_get(&P.abbrev, dash ? dash + 1 : low, 0)) t->abbr = 1;
        else t->sentbreak = 1;
        free(stem);
        free(low);
    }
}

/* type_no_period / type_no_sentperiod into buf (malloc'd). */
static char *type_no_period(const ptok *t)
{
    size_t n = strlen(t->type);
    if (n > 1 && t->type[n - 1] == '.') return xstrndup(t->type, n - 1);
    return xstrdup(t->type);
}

static char *type_no_sentperiod(const ptok *t)
{
    return t->sentbreak ? type_no_period(t) : xstrdup(t->type);
}

static int first_upper(const ptok *t)
{
    size_t k;
    return t->tok[0] && cp_upper(ifv_utf8_at(t->tok, strlen(t->tok), 0, &k));
}

static int first_lower(const ptok *t)
{
    size_t k;
    return t->tok[0] && cp_lower(ifv_utf8_at(t->tok, strlen(t->tok), 0, &k));
}

enum { ORTHO_FALSE = 0, ORTHO_TRUE = 1, ORTHO_UNKNOWN = 2 };

static int ortho_heuristic(const ptok *t)
{
    const char *s = t->tok;
    if (strlen(s) == 1 && strchr(";:,.!?", s[0])) return ORTHO_FALSE;
    char *typ = type_no_sentperiod(t);
    int oc = map_get(&P.ortho, typ, 0);
    free(typ);
    if (first_upper(t) && (oc & ORTHO_LC) && !(oc & MID_UC)) return ORTHO_TRUE;
    if (first_lower(t) && ((oc & ORTHO_UC) || !(oc & BEG_LC))) return ORTHO_FALSE;
    return ORTHO_UNKNOWN;
}

static int is_initial(const ptok *t)   /* [^\W\d]\.$ */
{
    return ifeval_re_search("^[^\\W\\d]\\.$", 0, t->tok) == 1;
}

static void second_pass(ptok *t1, const ptok *t2)
{
    if (!t1->period_final) return;
    char *typ = type_no_period(t1), *next = type_no_sentperiod(t2);
    int initial = is_initial(t1);
    char *pair = xasprintf("%s\t%s", typ, next);
    int colloc = map_get(&P.colloc, pair, 0);
    free(pair);
    if (colloc) { t1->sentbreak = 0; t1->abbr = 1; goto out; }
    if ((t1->abbr || t1->ellipsis) && !initial) {
        if (ortho_heuristic(t2) == ORTHO_TRUE) { t1->sentbreak = 1; goto out; }
        if (first_upper(t2) && map_get(&P.starters, next, 0)) { t1->sentbreak = 1; goto out; }
    }
    if (initial || !strcmp(typ, "##number##")) {
        int o = ortho_heuristic(t2);
        if (o == ORTHO_FALSE) { t1->sentbreak = 0; t1->abbr = 1; goto out; }
        if (o == ORTHO_UNKNOWN && initial && first_upper(t2) && !(map_get(&P.ortho, next, 0) & ORTHO_LC)) {
            t1->sentbreak = 0;
            t1->abbr = 1;
        }
    }
out:
    free(typ);
    free(next);
}

/* text_contains_sentbreak: a sentence break on any token but the last. */
static int contains_sentbreak(const char *text, size_t len)
{
    size_t n;
    ptok *v = punkt_words(text, len, &n);
    /* the original's generators: token i is first-pass annotated before the
     * second pass looks at it as the follower of token i-1 */
    for (size_t i = 0; i < n; i++) first_pass(&v[i]);
    int found = 0, result = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n) second_pass(&v[i], &v[i + 1]);
        if (found) { result = 1; break; }
        if (v[i].sentbreak) found = 1;
    }
    ptoks_free(v, n);
    return result;
}

/* ---- Punkt sentences --------------------------------------------------- */

typedef struct { size_t st, en, after_st, after_en; long next_st; } pmatch;

/* text[:i].rsplit(maxsplit=1): sets the last word's span and the length of
 * the part before it; returns 0 when there is no word at all. */
static int rsplit1(const char *s, size_t i, size_t *ws, size_t *we, size_t *left)
{
    size_t k;
    size_t e = i;
    while (e > 0) {
        size_t p = ifv_utf8_prev(s, e);
        if (!ifv_isspace(ifv_utf8_at(s, i, p, &k))) break;
        e = p;
    }
    if (e == 0) return 0;
    size_t b = e;
    while (b > 0) {
        size_t p = ifv_utf8_prev(s, b);
        if (ifv_isspace(ifv_utf8_at(s, i, p, &k))) break;
        b = p;
    }
    *ws = b;
    *we = e;
    size_t l = b;
    while (l > 0) {
        size_t p = ifv_utf8_prev(s, l);
        if (!ifv_isspace(ifv_utf8_at(s, i, p, &k))) break;
        l = p;
    }
    *left = l;
    return 1;
}

long ifeval_punkt_spans(const char *text, size_t **spans_out)
{
    char *err = NULL;
    if (ifeval_punkt_load(NULL, &err)) { hat_warn("%s", err); free(err); return -1; }
    size_t len = strlen(text);
    pcre2_code *re = rx_get(RE_PERIOD_CONTEXT, 0);
    size_t cap = 16, n = 0, pos = 0;
    int le = -1;
    pmatch *m = xmalloc(cap * sizeof *m);
    PCRE2_SIZE *ov;
    int rc;
    while ((rc = rx_next(re, text, len, &pos, &le, &ov))) {
        if (n == cap) m = xrealloc(m, (cap *= 2) * sizeof *m);
        pmatch x = { ov[0], ov[1], ov[2], ov[3], -1 };
        if (rc > 2 && ov[4] != PCRE2_UNSET) x.next_st = (long)ov[4];
        m[n++] = x;
    }
    /* _match_potential_end_contexts: right to left, dropping overlaps */
    char **ctx = xcalloc(n ? n : 1, sizeof *ctx);
    size_t before_start = 0;
    int any = 0;
    for (size_t j = n; j-- > 0;) {
        if (any && m[j].en > before_start) continue;
        size_t ws = 0, we = 0, left = 0;
        int has = rsplit1(text, m[j].st, &ws, &we, &left);
        before_start = has ? left : 0;
        sbuf b;
        sbuf_init(&b);
        if (has) sbuf_add(&b, text + ws, we - ws);
        sbuf_add(&b, text + m[j].st, m[j].en - m[j].st);
        sbuf_add(&b, text + m[j].after_st, m[j].after_en - m[j].after_st);
        ctx[j] = sbuf_detach(&b);
        any = 1;
    }
    /* _slices_from_text */
    size_t scap = 16, ns = 0, last = 0;
    size_t *sl = xmalloc(scap * 2 * sizeof *sl);
    for (size_t j = 0; j < n; j++) {
        if (!ctx[j]) continue;
        if (contains_sentbreak(ctx[j], strlen(ctx[j]))) {
            if (ns == scap) sl = xrealloc(sl, (scap *= 2) * 2 * sizeof *sl);
            sl[2 * ns] = last;
            sl[2 * ns + 1] = m[j].en;
            ns++;
            last = m[j].next_st >= 0 ? (size_t)m[j].next_st : m[j].en;
        }
        free(ctx[j]);
    }
    free(ctx);
    free(m);
    char *rs = ifeval_strip(text, len);   /* len(text.rstrip()) */
    size_t lead = 0, k;
    while (lead < len && ifv_isspace(ifv_utf8_at(text, len, lead, &k))) lead += k;
    size_t rlen = rs[0] ? lead + strlen(rs) : 0;
    free(rs);
    if (ns == scap) sl = xrealloc(sl, (scap += 1) * 2 * sizeof *sl);
    sl[2 * ns] = last;
    sl[2 * ns + 1] = rlen;
    ns++;
    /* _realign_boundaries */
    size_t *out = xmalloc(ns * 2 * sizeof *out);
    long nout = 0;
    size_t realign = 0;
    for (size_t j = 0; j < ns; j++) {
        size_t s1 = sl[2 * j] + realign, e1 = sl[2 * j + 1];
        if (j + 1 == ns) {
            if (s1 < e1) { out[2 * nout] = s1; out[2 * nout + 1] = e1; nout++; }
            continue;
        }
        size_t s2 = sl[2 * j + 2], e2 = sl[2 * j + 3];
        char *sub = xstrndup(text + s2, e2 > s2 ? e2 - s2 : 0);
        pcre2_code *rre = rx_get("[\"\\')\\]}]+?(?:\\s+|(?=--)|$)", IFV_M);
        int r = pcre2_match(rre, (PCRE2_SPTR)sub, strlen(sub), 0, PCRE2_ANCHORED, md(), NULL);
        if (r >= 0) {
            PCRE2_SIZE *o = pcre2_get_ovector_pointer(md());
            size_t mlen = o[1] - o[0];
            char *g = xstrndup(sub + o[0], mlen);
            size_t glen = mlen;
            while (glen > 0) {
                size_t p = ifv_utf8_prev(g, glen);
                if (!ifv_isspace(ifv_utf8_at(g, mlen, p, &k))) break;
                glen = p;
            }
            free(g);
            out[2 * nout] = s1;
            out[2 * nout + 1] = s2 + glen;
            nout++;
            realign = o[1];
        } else {
            realign = 0;
            if (s1 < e1) { out[2 * nout] = s1; out[2 * nout + 1] = e1; nout++; }
        }
        free(sub);
    }
    free(sl);
    if (spans_out) *spans_out = out; else free(out);
    return nout;
}

long ifeval_count_sentences(const char *text)
{
    return ifeval_punkt_spans(text, NULL);
}

/* ---- nltk.word_tokenize ------------------------------------------------- */

typedef struct { const char *re, *repl; int flags; } subst;

/* NLTKWordTokenizer, in its order (Python "\1" → "$1", "\g<0>" → "$0"). */
static const subst STARTING[] = {
    { "([«“‘„]|[`]+)", " $1 ", 0 },
    { "^\\\"", "``", 0 },
    { "(``)", " $1 ", 0 },
    { "([ \\(\\[{<])(\\\"|\\'{2})", "$1 `` ", 0 },
    { "(?i)(?<!\\w)(\\')(?!(?:re|ve|ll|m|t|s|d|n)\\b)(?=\\w)", "$1 ", 0 },
};
static const subst PUNCT[] = {
    { "([^\\.])(\\.)([\\]\\)}>\"\\'»”’ ]*)\\s*$", "$1 $2 $3 ", 0 },
    { "([:,])([^\\d])", " $1 $2", 0 },
    { "([:,])$", " $1 ", 0 },
    { "\\.{2,}", " $0 ", 0 },
    { "[;@#$%&]", " $0 ", 0 },
    { "[\\x{2012}-\\x{2015}]", " $0 ", 0 },
    { "([^\\.])(\\.)([\\]\\)}>\"\\']*)\\s*$", "$1 $2$3 ", 0 },
    { "[?!]", " $0 ", 0 },
    { "([^'])' ", "$1 ' ", 0 },
    { "[*]", " $0 ", 0 },
    { "[\\]\\[\\(\\)\\{\\}\\<\\>]", " $0 ", 0 },
    { "--", " -- ", 0 },
};
static const subst ENDING[] = {
    { "([»”’])", " $1 ", 0 },
    { "''", " '' ", 0 },
    { "\"", " '' ", 0 },
    { "\\s+", " ", 0 },
    { "([^' ])('[sS]|'[mM]|'[dD]|') ", "$1 $2 ", 0 },
    { "([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", "$1 $2 ", 0 },
    { "(?i)\\b(can)(?#X)(not)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(d)(?#X)('ye)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(gim)(?#X)(me)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(gon)(?#X)(na)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(got)(?#X)(ta)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(lem)(?#X)(me)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(more)(?#X)('n)\\b", " $1 $2 ", 0 },
    { "(?i)\\b(wan)(?#X)(na)(?=\\s)", " $1 $2 ", 0 },
    { "(?i) ('t)(?#X)(is)\\b", " $1 $2 ", 0 },
    { "(?i) ('t)(?#X)(was)\\b", " $1 $2 ", 0 },
};

static char *apply(char *text, const subst *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *r = ifeval_re_sub(t[i].re, t[i].flags, t[i].repl, text);
        if (!r) hat_die("internal: bad word-tokenizer pattern %s", t[i].re);
        free(text);
        text = r;
    }
    return text;
}

/* NLTKWordTokenizer.tokenize on one sentence, tokens appended to v. */
static void treebank(const char *sent, size_t len, char ***v, long *n, size_t *cap)
{
    char *t = xstrndup(sent, len);
    t = apply(t, STARTING, sizeof STARTING / sizeof *STARTING);
    t = apply(t, PUNCT, sizeof PUNCT / sizeof *PUNCT);
    char *sp = xasprintf(" %s ", t);
    free(t);
    t = apply(sp, ENDING, sizeof ENDING / sizeof *ENDING);
    size_t tl = strlen(t), k;
    for (size_t i = 0; i < tl;) {   /* str.split() */
        while (i < tl && ifv_isspace(ifv_utf8_at(t, tl, i, &k))) i += k;
        size_t b = i;
        while (i < tl && !ifv_isspace(ifv_utf8_at(t, tl, i, &k))) i += k;
        if (i > b) {
            if ((size_t)*n + 2 >= *cap) *v = xrealloc(*v, (*cap *= 2) * sizeof **v);
            (*v)[(*n)++] = xstrndup(t + b, i - b);
        }
    }
    free(t);
}

char **ifeval_word_tokenize(const char *text, long *np)
{
    size_t *sp = NULL, cap = 16;
    long ns = ifeval_punkt_spans(text, &sp);
    char **v = xmalloc(cap * sizeof *v);
    long n = 0;
    for (long i = 0; i < ns; i++) treebank(text + sp[2 * i], sp[2 * i + 1] - sp[2 * i], &v, &n, &cap);
    free(sp);
    v[n] = NULL;
    if (np) *np = n;
    return v;
}
