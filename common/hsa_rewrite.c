/* hsa_rewrite.c — the built-in rewriter of HSA: task-preserving rewording of
 * any instruction text, driven by rewrite.json of the vocabulary (man 5
 * hsa-vocab), never by whole example sentences.
 *
 * A text is first cut into protected spans — numbers and number words,
 * {placeholders}, names of the harness's skills, tools and parameters,
 * identifier-like tokens, quoted strings and `code` — which are masked so
 * that no pattern or synonym can touch them, then into pieces (sentences
 * and clauses after ':' or ';').  Each piece gets its structural
 * alternatives (the patterns: negation, modal and imperative frames, "at
 * most N", conditional clause order, lists, headers) and, in each
 * alternative, the sites where a synonym applies.  That analysis depends
 * only on the text and the harness's names, so it is cached per harness
 * (hsa_cache) and a variant only draws from it: cheap enough to rewrite
 * every text of every trajectory line.
 *
 * hsa_protected and hsa_rewrite_check are the one definition of "what a
 * rewrite must keep", shared by this rewriter and the external one
 * (hsa_bank.c). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "hsa.h"
#include "util.h"

#include <ctype.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

/* Probability that a piece takes a structural alternative, and that a
 * synonym site is used: a rewrite changes a few things, not every word. */
#define P_STRUCT 0.5
#define P_SITE   0.35
#define MAX_SPANS 240

typedef struct {
    char       *op;
    pcre2_code *re;
    json_t     *to;      /* array of replacement strings with $1..$9 */
    char        end;     /* the piece must end with this character; 0 any */
} rw_pattern;

struct hsa_rewriter {
    char       *split;
    rw_pattern *pat;
    int         npat;
    json_t     *syn;     /* lowercase word or phrase → array of alternatives */
    int         maxwords;
};

/* ---- protection ----------------------------------------------------------- */

static const struct { const char *w; size_t n; } number_words[] = {
#define W(s) { s, sizeof s - 1 }
    W("zero"), W("one"), W("two"), W("three"), W("four"), W("five"), W("six"), W("seven"),
    W("eight"), W("nine"), W("ten"), W("eleven"), W("twelve"), W("twenty"), W("hundred"),
    W("thousand"), W("once"), W("twice"), W("half"),
#undef W
};

static int is_number_word(const char *s, size_t n)
{
    if (n < 3 || n > 8) return 0;
    for (size_t i = 0; i < sizeof number_words / sizeof number_words[0]; i++)
        if (number_words[i].n == n && tolower((unsigned char)s[0]) == number_words[i].w[0] &&
            !strncasecmp(s, number_words[i].w, n))
            return 1;
    return 0;
}

static int alnum(char c) { return isalnum((unsigned char)c); }

/* Length of the token at s: letters, digits, '_', a leading '@', and
 * '-' '.' '/' '+' between alphanumerics; a trailing '%' joins a number. */
static size_t token_len(const char *s)
{
    size_t i = s[0] == '@' ? 1 : 0;
    while (s[i] && (alnum(s[i]) || s[i] == '_' ||
                    (strchr("-./+", s[i]) && i && alnum(s[i - 1]) && alnum(s[i + 1]))))
        i++;
    if (s[i] == '%' && i && isdigit((unsigned char)s[i - 1])) i++;
    return i;
}

/* An identifier rather than a word: snake_case, camelCase, digits, '@'. */
int hsa_identifier_like(const char *s, size_t n)
{
    if (n && s[0] == '@') return 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_' || isdigit((unsigned char)s[i])) return 1;
        if (i && isupper((unsigned char)s[i]) && islower((unsigned char)s[i - 1])) return 1;
    }
    return 0;
}

static int all_caps(const char *s, size_t n)
{
    int up = 0;
    for (size_t i = 0; i < n; i++) {
        if (islower((unsigned char)s[i])) return 0;
        up += isupper((unsigned char)s[i]) != 0;
    }
    return up >= 2;
}

static int is_name(const json_t *names, const char *s, size_t n)
{
    if (!names) return 0;
    char buf[128];
    if (n >= sizeof buf) return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    return json_object_get(names, buf) != NULL;
}

/* A quoted span starting at s (straight or curly quotes, `code`), its
 * length or 0.  A single quote only opens after a space or '(' and only
 * closes before a non-letter, so "viewer's" is not a quote. */
static size_t quote_len(const char *text, const char *s)
{
    const char *close = NULL;
    if (*s == '"' || *s == '`') close = strchr(s + 1, *s);
    else if (!strncmp(s, "\xe2\x80\x9c", 3)) close = strstr(s + 3, "\xe2\x80\x9d");
    else if (!strncmp(s, "\xe2\x80\x98", 3)) close = strstr(s + 3, "\xe2\x80\x99");
    else if (*s == '\'' && (s == text || s[-1] == ' ' || s[-1] == '(')) {
        for (const char *q = s + 1; (q = strchr(q, '\'')); q++)
            if (!isalpha((unsigned char)q[1])) { close = q; break; }
    }
    if (!close) return 0;
    size_t closelen = (unsigned char)*close == 0xe2 ? 3 : 1;
    return (size_t)(close - s) + closelen;
}

int hsa_protected(const char *s, const json_t *names, hsa_span *out, int max)
{
    int n = 0;
    for (size_t i = 0; s[i];) {
        size_t l = 0;
        if (s[i] == '{') l = hsa_placeholder_len(s + i);
        if (!l) l = quote_len(s, s + i);
        if (l) {
            if (n < max) out[n] = (hsa_span){ i, l };
            n++;
            i += l;
            continue;
        }
        if (alnum(s[i]) || s[i] == '_' || s[i] == '@') {
            l = token_len(s + i);
            if (!l) l = 1;
            if (hsa_identifier_like(s + i, l) || is_number_word(s + i, l) ||
                all_caps(s + i, l) || is_name(names, s + i, l)) {
                if (n < max) out[n] = (hsa_span){ i, l };
                n++;
            }
            i += l;
            continue;
        }
        i++;
    }
    return n;
}

/* A protected span as text, for comparing two texts' spans as multisets
 * without copying them. */
typedef struct { const char *s; size_t n; } span_text;

static int cmp_span(const void *a, const void *b)
{
    const span_text *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static int span_texts(const char *s, const json_t *names, span_text *out)
{
    hsa_span sp[MAX_SPANS];
    int k = hsa_protected(s, names, sp, MAX_SPANS);
    if (k > MAX_SPANS) k = MAX_SPANS;
    for (int i = 0; i < k; i++) out[i] = (span_text){ s + sp[i].start, sp[i].len };
    qsort(out, (size_t)k, sizeof *out, cmp_span);
    return k;
}

int hsa_rewrite_check(const char *orig, const char *alt, const json_t *names, char **why)
{
    *why = NULL;
    if (!strcmp(orig, alt)) { *why = xstrdup("repeats the text"); return 0; }
    if (!*alt) { *why = xstrdup("is empty"); return 0; }
    span_text *a = xmalloc(2 * MAX_SPANS * sizeof *a), *b = a + MAX_SPANS;
    int na = span_texts(orig, names, a), nb = span_texts(alt, names, b);
    int i = 0, j = 0;
    while (!*why && (i < na || j < nb)) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_span(&a[i], &b[j]);
        if (c < 0) *why = xasprintf("drops or changes '%.*s'", (int)a[i].n, a[i].s);
        else if (c > 0) *why = xasprintf("adds '%.*s'", (int)b[j].n, b[j].s);
        else i++, j++;
    }
    free(a);
    return *why == NULL;
}

/* ---- masking -------------------------------------------------------------- */

/* A protected span becomes \x01, its index in hex digits \x10..\x1f, \x02:
 * bytes no pattern's \w or literal can match, so edits go around it. */
static char *mask(const char *s, const json_t *names, json_t *spans)
{
    hsa_span sp[MAX_SPANS];
    int k = hsa_protected(s, names, sp, MAX_SPANS);
    if (k > MAX_SPANS) k = MAX_SPANS;
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    size_t at = 0;
    for (int i = 0; i < k; i++) {
        sbuf_add(&b, s + at, sp[i].start - at);
        json_array_append_new(spans, json_stringn(s + sp[i].start, sp[i].len));
        sbuf_putc(&b, '\x01');
        char hex[8];
        int hn = snprintf(hex, sizeof hex, "%x", (unsigned)i);
        for (int h = 0; h < hn; h++)
            sbuf_putc(&b, (char)(0x10 + (isdigit((unsigned char)hex[h]) ? hex[h] - '0' : hex[h] - 'a' + 10)));
        sbuf_putc(&b, '\x02');
        at = sp[i].start + sp[i].len;
    }
    sbuf_puts(&b, s + at);
    return sbuf_detach(&b);
}

static void unmask_into(sbuf *b, const char *m, const json_t *spans)
{
    for (const char *p = m; *p; p++) {
        if (*p != '\x01') { sbuf_putc(b, *p); continue; }
        unsigned idx = 0;
        for (p++; *p && *p != '\x02'; p++) idx = idx * 16 + (unsigned)(*p - 0x10);
        const char *s = json_string_value(json_array_get(spans, idx));
        if (s) sbuf_puts(b, s);
        if (!*p) break;
    }
}

/* ---- loading -------------------------------------------------------------- */

/* Expand @V (the verb list) and @K (one masked span) in a pattern. */
static char *expand(const char *re, const json_t *verbs)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    for (const char *p = re; *p; p++) {
        if (p[0] == '@' && p[1] == 'V') {
            sbuf_puts(&b, "(?:");
            size_t i;
            json_t *v;
            json_array_foreach(verbs, i, v) {
                if (i) sbuf_putc(&b, '|');
                sbuf_puts(&b, json_string_value(v) ? json_string_value(v) : "");
            }
            sbuf_putc(&b, ')');
            p++;
        } else if (p[0] == '@' && p[1] == 'K') {
            sbuf_puts(&b, "\\x01[\\x10-\\x1f]+\\x02");
            p++;
        } else {
            sbuf_putc(&b, *p);
        }
    }
    return sbuf_detach(&b);
}

/* An alternative must not bring protected material of its own. */
static int alt_ok(const char *a)
{
    hsa_span sp[4];
    return *a && hsa_protected(a, NULL, sp, 4) == 0;
}

hsa_rewriter *hsa_rewriter_load(const json_t *j, const char *file)
{
    hsa_rewriter *w = xcalloc(1, sizeof *w);
    const char *split = json_string_value(json_object_get(j, "split"));
    w->split = xstrdup(split ? split : "train");
    const json_t *pats = json_object_get(j, "patterns"), *verbs = json_object_get(j, "verbs");
    w->pat = xcalloc(json_array_size(pats) + 1, sizeof *w->pat);
    int bad = 0;
    size_t i;
    json_t *e;
    json_array_foreach(pats, i, e) {
        const char *re = json_string_value(json_object_get(e, "match"));
        const json_t *to = json_object_get(e, "to");
        if (!re || !json_array_size(to)) {
            hat_errat(file, 0, "patterns[%zu]: needs \"match\" and a non-empty \"to\"", i);
            bad = 1;
            continue;
        }
        char *x = expand(re, verbs);
        int code;
        PCRE2_SIZE off;
        pcre2_code *c = pcre2_compile((PCRE2_SPTR)x, PCRE2_ZERO_TERMINATED, PCRE2_CASELESS,
                                      &code, &off, NULL);
        free(x);
        if (!c) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(code, msg, sizeof msg);
            hat_errat(file, 0, "patterns[%zu]: bad regex at %zu: %s", i, (size_t)off, (char *)msg);
            bad = 1;
            continue;
        }
        rw_pattern *p = &w->pat[w->npat++];
        const char *op = json_string_value(json_object_get(e, "op"));
        const char *end = json_string_value(json_object_get(e, "end"));
        p->op = xstrdup(op ? op : "pattern");
        p->re = c;
        p->to = json_incref((json_t *)to);
        p->end = end ? end[0] : 0;
    }
    w->syn = json_object();
    const char *k;
    json_t *alts;
    json_object_foreach(json_object_get(j, "synonyms"), k, alts) {
        int words = 1;
        for (const char *s = k; *s; s++) {
            words += *s == ' ';
            if (isupper((unsigned char)*s)) bad = 1;
        }
        size_t ai;
        json_t *a;
        json_array_foreach(alts, ai, a)
            if (!json_is_string(a) || !alt_ok(json_string_value(a))) {
                hat_errat(file, 0, "synonyms/%s: alternative %zu is not plain words", k, ai);
                bad = 1;
            }
        if (!alt_ok(k)) { hat_errat(file, 0, "synonyms: '%s' is not plain lowercase words", k); bad = 1; }
        if (words > w->maxwords) w->maxwords = words;
        json_object_set(w->syn, k, alts);
    }
    if (bad) { hsa_rewriter_free(w); return NULL; }
    return w;
}

void hsa_rewriter_free(hsa_rewriter *w)
{
    if (!w) return;
    for (int i = 0; i < w->npat; i++) {
        free(w->pat[i].op);
        pcre2_code_free(w->pat[i].re);
        json_decref(w->pat[i].to);
    }
    free(w->pat);
    json_decref(w->syn);
    free(w->split);
    free(w);
}

const char *hsa_rewriter_split(const hsa_rewriter *w) { return w->split; }

json_t *hsa_rewriter_alternatives(const hsa_rewriter *w)
{
    json_t *out = json_object();
    const char *k;
    json_t *alts;
    json_object_foreach(w->syn, k, alts) {
        size_t i;
        json_t *a;
        json_array_foreach(alts, i, a) json_object_set_new(out, json_string_value(a), json_true());
    }
    return out;
}

/* ---- analysis -------------------------------------------------------------- */

static int wordc(char c) { return isalpha((unsigned char)c) || c == '\''; }

/* Synonym sites of a masked piece: [[offset, length, alternatives], ...].
 * A site is whole words not glued to '-', '_' or a masked span. */
/* The alternatives that bring in no protected word (a synonym that is a
 * name in this harness, "item" where a parameter is called item). */
static json_t *usable(const json_t *alts, const json_t *names, const char *prev)
{
    json_t *out = json_array();
    size_t i;
    json_t *a;
    hsa_span sp[2];
    json_array_foreach(alts, i, a) {
        const char *t = json_string_value(a);
        size_t pl = prev ? strcspn(prev, " ") : 0;
        /* "Body height" must not become "Body body height". */
        int repeats = pl && !strncasecmp(t, prev, pl) && (!t[pl] || t[pl] == ' ');
        if (!repeats && !hsa_protected(t, names, sp, 2)) json_array_append(out, a);
    }
    return out;
}

/* The word just before offset i of s, or NULL. */
static const char *prev_word(const char *s, size_t i)
{
    if (i < 2 || s[i - 1] != ' ' || !isalpha((unsigned char)s[i - 2])) return NULL;
    size_t j = i - 1;
    while (j && isalpha((unsigned char)s[j - 1])) j--;
    return s + j;
}

static json_t *sites(const hsa_rewriter *w, const char *s, const json_t *names)
{
    json_t *out = json_array();
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (!isalpha((unsigned char)s[i]) || (i && (isalnum((unsigned char)s[i - 1]) ||
                                                    strchr("-_\x02", s[i - 1])))) {
            i++;
            continue;
        }
        size_t best = 0;
        const json_t *alts = NULL;
        size_t j = i;
        for (int words = 1; words <= w->maxwords && j < n; words++) {
            while (j < n && isalpha((unsigned char)s[j])) j++;
            if (j < n && (isalnum((unsigned char)s[j]) || strchr("-_\x01", s[j]))) break;
            char *k = xstrndup(s + i, j - i);
            for (char *c = k; *c; c++) *c = (char)tolower((unsigned char)*c);
            const json_t *a = json_object_get(w->syn, k);
            free(k);
            if (a) { best = j - i; alts = a; }
            if (s[j] != ' ' || !isalpha((unsigned char)s[j + 1])) break;
            j++;
        }
        json_t *ok = alts ? usable(alts, names, prev_word(s, i)) : NULL;
        if (ok && json_array_size(ok)) {
            json_array_append_new(out, json_pack("[I,I,O]", (json_int_t)i, (json_int_t)best, ok));
            i += best;
        } else {
            while (i < n && wordc(s[i])) i++;
        }
        json_decref(ok);
    }
    return out;
}

/* A replacement with $1..$9 from the match; a group that started the
 * piece loses its capital when it moves inside (unless an acronym). */
static char *substitute(const char *subj, const char *repl, PCRE2_SIZE *ov, int ng)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    sbuf_add(&b, subj, ov[0]);
    size_t piece_start = b.len;
    for (const char *r = repl; *r; r++) {
        if (r[0] == '$' && r[1] >= '1' && r[1] <= '9' && r[1] - '0' < ng) {
            int g = r[1] - '0';
            size_t gs = ov[2 * g], ge = ov[2 * g + 1];
            r++;
            if (gs == PCRE2_UNSET) continue;
            size_t at = b.len;
            sbuf_add(&b, subj + gs, ge - gs);
            if (gs == 0 && at > piece_start && ge - gs > 1 && isupper((unsigned char)b.s[at]) &&
                !isupper((unsigned char)b.s[at + 1]))
                b.s[at] = (char)tolower((unsigned char)b.s[at]);
        } else {
            sbuf_putc(&b, *r);
        }
    }
    sbuf_puts(&b, subj + ov[1]);
    return sbuf_detach(&b);
}

/* Structural alternatives of one masked piece ending with `end`. */
static void piece_bases(const hsa_rewriter *w, const char *s, char end, json_t *bases,
                        const json_t *names)
{
    pcre2_match_data *md = NULL;
    for (int i = 0; i < w->npat; i++) {
        const rw_pattern *p = &w->pat[i];
        if (p->end && p->end != end) continue;
        if (!md) md = pcre2_match_data_create(10, NULL);
        int rc = pcre2_match(p->re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
        if (rc <= 0) continue;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t k;
        json_t *t;
        json_array_foreach(p->to, k, t) {
            char *alt = substitute(s, json_string_value(t), ov, rc);
            if (strcmp(alt, s))
                json_array_append_new(bases, json_pack("{s:s, s:o}", "text", alt, "sites", sites(w, alt, names)));
            free(alt);
        }
    }
    if (md) pcre2_match_data_free(md);
}

/* Cut a masked text into pieces at sentence ends and ':' ';', keeping the
 * separators; "e.g." and single-letter abbreviations do not end one. */
static json_t *analyse(const hsa_rewriter *w, const char *m, const json_t *names)
{
    json_t *pieces = json_array();
    size_t n = strlen(m), start = 0;
    for (size_t i = 0; i <= n; i++) {
        int cut = i == n;
        if (!cut && strchr(".!?:;", m[i]) && (m[i + 1] == ' ' || !m[i + 1])) {
            int abbrev = m[i] == '.' && i >= 1 && isalpha((unsigned char)m[i - 1]) &&
                         (i < 2 || !isalpha((unsigned char)m[i - 2]));
            cut = !abbrev;
        }
        if (!cut) continue;
        size_t end = i, sep = i;
        if (i < n) sep++;
        while (sep < n && m[sep] == ' ') sep++;
        if (end > start || sep > start) {
            char *body = xstrndup(m + start, end - start);
            json_t *bases = json_array();
            json_array_append_new(bases, json_pack("{s:s, s:o}", "text", body, "sites", sites(w, body, names)));
            if (*body) piece_bases(w, body, i < n ? m[i] : 0, bases, names);
            json_array_append_new(pieces, json_pack("{s:o, s:s%}", "bases", bases, "sep",
                                                    m + end, sep - end));
            free(body);
        }
        start = sep;
        i = sep ? sep - 1 : 0;
        if (sep >= n) break;
    }
    return pieces;
}

json_t *hsa_rewrite_analyse(const hsa_rewriter *w, const char *text, const json_t *names)
{
    json_t *spans = json_array();
    char *m = mask(text, names, spans);
    json_t *a = json_pack("{s:o, s:o}", "spans", spans, "pieces", analyse(w, m, names));
    free(m);
    return a;
}

/* ---- drawing --------------------------------------------------------------- */

/* "a" or "an" just before a word that replaces another: made to fit it
 * ("a reply" → "an answer"). */
static void fix_article(sbuf *b, const char *next)
{
    int vowel = strchr("aeiouAEIOU", next[0]) != NULL;
    size_t n = b->len;
    const char *s = b->s;
    int word_start_a = n >= 2 && s[n - 1] == ' ' && (s[n - 2] == 'a' || s[n - 2] == 'A') &&
                       (n == 2 || !isalpha((unsigned char)s[n - 3]));
    int word_start_an = n >= 3 && s[n - 1] == ' ' && s[n - 2] == 'n' &&
                        (s[n - 3] == 'a' || s[n - 3] == 'A') && (n == 3 || !isalpha((unsigned char)s[n - 4]));
    if (vowel && word_start_a) {
        b->s[n - 1] = 'n';
        sbuf_putc(b, ' ');
    } else if (!vowel && word_start_an) {
        b->s[n - 2] = ' ';
        b->len--;
        b->s[b->len] = 0;
    }
}

static void put_piece(sbuf *b, const json_t *base, const int *use, rng_t *r, int first_upper)
{
    const char *s = json_string_value(json_object_get(base, "text"));
    const json_t *st = json_object_get(base, "sites");
    size_t at = 0, start = b->len, i;
    json_t *site;
    json_array_foreach(st, i, site) {
        if (!use[i]) continue;
        size_t off = (size_t)json_integer_value(json_array_get(site, 0));
        size_t len = (size_t)json_integer_value(json_array_get(site, 1));
        const json_t *alts = json_array_get(site, 2);
        const char *alt = json_string_value(json_array_get(alts, rng_below(r, json_array_size(alts))));
        sbuf_add(b, s + at, off - at);
        fix_article(b, alt);
        size_t a0 = b->len;
        sbuf_puts(b, alt);
        if (isupper((unsigned char)s[off])) b->s[a0] = (char)toupper((unsigned char)b->s[a0]);
        at = off + len;
    }
    sbuf_puts(b, s + at);
    if (b->len > start && isalpha((unsigned char)b->s[start]))
        b->s[start] = (char)(first_upper ? toupper((unsigned char)b->s[start])
                                         : tolower((unsigned char)b->s[start]));
}

char *hsa_rewrite_draw(const json_t *a, rng_t *r)
{
    const json_t *pieces = json_object_get(a, "pieces");
    size_t np = json_array_size(pieces);
    if (!np) return NULL;
    size_t *base = xcalloc(np, sizeof *base);
    int **use = xcalloc(np, sizeof *use);
    size_t changes = 0, options = 0;
    for (size_t i = 0; i < np; i++) {
        const json_t *bases = json_object_get(json_array_get(pieces, i), "bases");
        size_t nb = json_array_size(bases);
        options += nb - 1 + json_array_size(json_object_get(json_array_get(bases, 0), "sites"));
        if (nb > 1 && rng_chance(r, P_STRUCT)) base[i] = 1 + rng_below(r, nb - 1), changes++;
        size_t ns = json_array_size(json_object_get(json_array_get(bases, base[i]), "sites"));
        use[i] = xcalloc(ns + 1, sizeof **use);
        for (size_t k = 0; k < ns; k++) changes += (use[i][k] = rng_chance(r, P_SITE));
    }
    char *out = NULL;
    if (!changes && options) {   /* at least one change: one option, uniformly */
        size_t pick = rng_below(r, options);
        for (size_t i = 0; i < np; i++) {
            const json_t *bases = json_object_get(json_array_get(pieces, i), "bases");
            size_t nb = json_array_size(bases);
            size_t ns = json_array_size(json_object_get(json_array_get(bases, 0), "sites"));
            if (pick < nb - 1) { base[i] = 1 + pick; break; }
            pick -= nb - 1;
            if (pick < ns) { use[i][pick] = 1; break; }
            pick -= ns;
        }
        changes = 1;
    }
    if (changes) {
        sbuf m;
        sbuf_init(&m);
        sbuf_puts(&m, "");
        for (size_t i = 0; i < np; i++) {
            const json_t *pc = json_array_get(pieces, i);
            const json_t *b0 = json_array_get(json_object_get(pc, "bases"), 0);
            const char *orig = json_string_value(json_object_get(b0, "text"));
            /* A piece keeps the case its first letter had ("always read
             * them" after a colon stays lower case). */
            int upper = isupper((unsigned char)orig[0]) || !isalpha((unsigned char)orig[0]);
            put_piece(&m, json_array_get(json_object_get(pc, "bases"), base[i]), use[i], r, upper);
            sbuf_puts(&m, json_string_value(json_object_get(pc, "sep")));
        }
        sbuf b;
        sbuf_init(&b);
        sbuf_puts(&b, "");
        unmask_into(&b, m.s, json_object_get(a, "spans"));
        sbuf_free(&m);
        out = sbuf_detach(&b);
    }
    for (size_t i = 0; i < np; i++) free(use[i]);
    free(use);
    free(base);
    return out;
}
