/* judge_lexicon.c — data/judge/lexicon.json loaded and compiled once (see
 * judge_lexicon.h): each pattern list joined into one PCRE2 alternation,
 * JIT-compiled, and searched with negation left of a match in its clause. */
#include "judge_lexicon.h"
#include "jsonl.h"
#include "util.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LEX_MAX_FAMILIES 16
#define LEX_MAX_WORDS 64
#define LEX_MAX_PRE   256       /* literal branch starts kept per letter */

typedef struct {
    char       *name, *code, *component;
    pcre2_code *re;
} family;

struct judge_lexicon {
    family      fam[LEX_MAX_FAMILIES];
    int         nfam;
    pcre2_code *list[LEX_NLISTS];
    pcre2_code *negation;
    /* every family's patterns in two searches, those that start at a word
     * boundary and the others: most replies claim nothing */
    pcre2_code *any_claim[2];
    /* the word-bounded ones again, by the letter they can start with: at
     * each word start only its letter's few are tried (any_claim[0] holds
     * those whose first letter is not plain) */
    pcre2_code *by_letter[26];
    /* for each letter, the literal text each of those patterns' branches
     * must start with (at least the letter), or npre -1: some branch
     * starts as it likes; a word start that begins with none of them
     * cannot match and is not tried */
    char       *pre[26][LEX_MAX_PRE];
    unsigned char prelen[26][LEX_MAX_PRE];
    int         npre[26];
    char       *arith[LEX_MAX_WORDS];
    int         narith;
    struct { char *w; double v; } nw[LEX_MAX_WORDS];
    int         nnw;
    unsigned char nw_first[256];   /* some number word starts with this byte */
    char       *unit[LEX_MAX_WORDS];
    int         nunit;
    struct { char *facts[8]; int nfacts; pcre2_code *re; } topic[LEX_MAX_FAMILIES];
    int         ntopic;
    struct { char *facts[8]; int nfacts; pcre2_code *re; } status[LEX_MAX_FAMILIES];
    int         nstatus;
    struct { char *w; char *alt[8]; int nalt; } syn[LEX_MAX_WORDS];
    int         nsyn;
    struct { char *method; pcre2_code *re; } care[LEX_MAX_FAMILIES];
    int         ncare;
    struct { char *function; pcre2_code *re; } fclaim[LEX_MAX_FAMILIES];
    int         nfclaim;
};

static judge_lexicon *the_lexicon;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The strings of patterns joined as (?:a)|(?:b)|..., compiled; NULL
 * after a diagnostic naming the list. */
static pcre2_code *compile_list_opts(const json_t *patterns, const char *what, uint32_t caseless);

static pcre2_code *compile_list(const json_t *patterns, const char *what)
{
    return compile_list_opts(patterns, what, PCRE2_CASELESS);
}

static pcre2_code *compile_list_opts(const json_t *patterns, const char *what, uint32_t caseless)
{
    sbuf b;
    sbuf_init(&b);
    size_t i;
    json_t *p;
    /* When every pattern starts at a word boundary, that one \b is
     * tested first, outside the alternation: inside a word the match
     * fails at once instead of trying each alternative's own \b (the
     * same matches, a third of the work on a typical reply). */
    int all_b = json_array_size(patterns) > 0;
    json_array_foreach(patterns, i, p)
        all_b &= json_is_string(p) && !strncmp(json_string_value(p), "\\b", 2);
    if (all_b) sbuf_puts(&b, "\\b(?:");
    size_t start = b.len;
    json_array_foreach(patterns, i, p) {
        if (!json_is_string(p)) continue;
        sbuf_printf(&b, "%s(?:%s)", b.len > start ? "|" : "", json_string_value(p));
    }
    if (all_b) sbuf_putc(&b, ')');
    if (b.len == start) sbuf_puts(&b, "(*FAIL)");
    /* A list in ASCII is matched byte by byte: the same matches (\b and
     * case are ASCII-only either way), without decoding UTF-8 at every
     * step; only a window such as [^.!?]{0,30} counts bytes, not
     * characters, over CJK text. */
    int ascii = 1;
    for (size_t i = 0; i < b.len && ascii; i++) ascii = (unsigned char)b.s[i] < 0x80;
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)b.s, PCRE2_ZERO_TERMINATED, caseless | (ascii ? 0 : PCRE2_UTF),
                                   &ec, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        hat_warn("data/judge/lexicon.json: %s: %s at offset %zu", what, (char *)msg, (size_t)off);
    } else {
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    }
    sbuf_free(&b);
    return re;
}

static int words(const json_t *a, char **out, int max)
{
    int n = 0;
    size_t i;
    json_t *w;
    json_array_foreach(a, i, w)
        if (json_is_string(w) && n < max) out[n++] = xstrdup(json_string_value(w));
    return n;
}

/* The letters (a-z, bit k for 'a' + k) a word-bounded pattern ("\\b...")
 * can start with, or 0 when that is not plain to see: a letter, or a
 * group of alternatives each starting with a letter, not optional. */
static unsigned first_letters(const char *p)
{
    if (strncmp(p, "\\b", 2)) return 0;
    p += 2;
    if (*p >= 'a' && *p <= 'z') return p[1] == '?' || p[1] == '*' || p[1] == '{' ? 0 : 1u << (*p - 'a');
    if (*p != '(' || p[1] == '?') return 0;
    unsigned set = 0;
    int depth = 0, start = 1;
    for (const char *q = p + 1; *q; q++) {
        if (*q == '\\') {
            if (start) return 0;
            if (q[1]) q++;
            continue;
        }
        if (start && depth == 0) {
            if (*q < 'a' || *q > 'z') return 0;
            if (q[1] == '?' || q[1] == '*' || q[1] == '{') return 0;
            set |= 1u << (*q - 'a');
            start = 0;
            continue;
        }
        if (*q == '[') {              /* a class: skip to its end */
            while (q[1] && q[1] != ']') q++;
            continue;
        }
        if (*q == '(') depth++;
        else if (*q == ')') {
            if (depth-- == 0) {       /* the group ends: it must not be optional */
                if (q[1] == '?' || q[1] == '*' || q[1] == '{') return 0;
                return set;
            }
        } else if (*q == '|' && depth == 0) start = 1;
    }
    return 0;
}

/* The literal start of the branch at a (its first letter, then the
 * letters, digits, spaces, '-' and '\'' that must follow), kept for its
 * first letter: appended to L->pre, or the letter made open (npre -1). */
static void add_prefix(judge_lexicon *L, const char *a)
{
    int c = a[0] - 'a';
    if (L->npre[c] < 0) return;
    size_t n = 1;
    while (((a[n] >= 'a' && a[n] <= 'z') || (a[n] >= '0' && a[n] <= '9') || a[n] == ' ' || a[n] == '-' || a[n] == '\'')
           && n < 31) n++;
    /* a quantifier after the last literal makes it optional: leave it out */
    if (a[n] == '?' || a[n] == '*' || a[n] == '{') n--;
    if (L->npre[c] == LEX_MAX_PRE) { L->npre[c] = -1; return; }
    L->prelen[c][L->npre[c]] = (unsigned char)n;
    L->pre[c][L->npre[c]++] = xstrndup(a, n);
}

/* The literal starts of a word-bounded pattern's branches ("\\b" then a
 * letter, or a group of alternatives each starting with one, as
 * first_letters reads it), for the letters fl it can start with.  A
 * top-level '|' (its later branches start anywhere) opens them all. */
static void add_prefixes(judge_lexicon *L, const char *p, unsigned fl)
{
    int depth = 0;
    for (const char *q = p; *q; q++) {
        if (*q == '\\') { if (q[1]) q++; continue; }
        if (*q == '[') { while (q[1] && q[1] != ']') q++; continue; }
        if (*q == '(') depth++;
        else if (*q == ')') depth--;
        else if (*q == '|' && depth == 0) {
            for (int c = 0; c < 26; c++) if (fl & (1u << c)) L->npre[c] = -1;
            return;
        }
    }
    p += 2;                                   /* past \\b */
    if (*p >= 'a' && *p <= 'z') { add_prefix(L, p); return; }
    int start = 1;
    depth = 0;
    for (const char *q = p + 1; *q; q++) {
        if (*q == '\\') { if (q[1]) q++; start = 0; continue; }
        if (start && depth == 0) { add_prefix(L, q); start = 0; continue; }
        if (*q == '[') { while (q[1] && q[1] != ']') q++; continue; }
        if (*q == '(') depth++;
        else if (*q == ')') { if (depth-- == 0) break; }
        else if (*q == '|' && depth == 0) start = 1;
    }
}

static void load(void)
{
    char *path = hat_data_path("judge/lexicon.json");
    if (!path) { hat_warn("cannot find data file judge/lexicon.json (set HAT_DATA)"); return; }
    json_t *d = json_load_path(path);
    free(path);
    if (!d) return;
    judge_lexicon *L = xcalloc(1, sizeof *L);
    int bad = 0;
    size_t i;
    const char *k;
    json_t *v;
    json_t *all[2] = { json_array(), json_array() }, *letter[26];
    for (int c = 0; c < 26; c++) letter[c] = json_array();
    json_object_foreach(json_object_get(d, "families"), k, v) {
        if (L->nfam == LEX_MAX_FAMILIES) break;
        size_t a;
        json_t *pt;
        json_array_foreach(json_object_get(v, "patterns"), a, pt) {
            unsigned fl = json_is_string(pt) ? first_letters(json_string_value(pt)) : 0;
            for (int c = 0; c < 26; c++) if (fl & (1u << c)) json_array_append(letter[c], pt);
            if (fl) add_prefixes(L, json_string_value(pt), fl);
            if (!fl) json_array_append(all[!(json_is_string(pt) && !strncmp(json_string_value(pt), "\\b", 2))], pt);
        }
        family *f = &L->fam[L->nfam];
        const char *code = json_string_value(json_object_get(v, "code"));
        const char *comp = json_string_value(json_object_get(v, "component"));
        f->name = xstrdup(k);
        f->code = xstrdup(code ? code : "banned_claim");
        f->component = xstrdup(comp && !strcmp(comp, "accuracy") ? "accuracy" : "effectiveness");
        L->nfam++;
        if (!(f->re = compile_list(json_object_get(v, "patterns"), k))) bad = 1;
    }
    for (int k = 0; k < 2; k++) {
        /* matched on the text lowered (ASCII), the patterns being lowercase:
         * a caseless match costs more at every byte */
        if (json_array_size(all[k]) && !(L->any_claim[k] = compile_list_opts(all[k], "families", 0))) bad = 1;
        json_decref(all[k]);
    }
    for (int c = 0; c < 26; c++) {
        if (json_array_size(letter[c]) && !(L->by_letter[c] = compile_list_opts(letter[c], "families", PCRE2_ANCHORED))) bad = 1;
        json_decref(letter[c]);
    }
    static const char *const lists[LEX_NLISTS] = { "fault_honest", "success_claim", "decline", "invented_fault",
                                                        "general_knowledge", "greeting", "affirm", "quality", "waiver" };
    for (int i = 0; i < LEX_NLISTS; i++)
        if (!(L->list[i] = compile_list(json_object_get(d, lists[i]), lists[i]))) bad = 1;
    if (!(L->negation = compile_list(json_object_get(d, "negation"), "negation"))) bad = 1;
    json_array_foreach(json_object_get(d, "topics"), i, v) {
        if (L->ntopic == LEX_MAX_FAMILIES) break;
        L->topic[L->ntopic].nfacts = words(json_object_get(v, "facts"), L->topic[L->ntopic].facts, 8);
        if (!(L->topic[L->ntopic++].re = compile_list(json_object_get(v, "patterns"), "topics"))) bad = 1;
    }
    json_array_foreach(json_object_get(d, "statuses"), i, v) {
        if (L->nstatus == LEX_MAX_FAMILIES) break;
        L->status[L->nstatus].nfacts = words(json_object_get(v, "facts"), L->status[L->nstatus].facts, 8);
        if (!(L->status[L->nstatus++].re = compile_list(json_object_get(v, "patterns"), "statuses"))) bad = 1;
    }
    json_object_foreach(json_object_get(d, "care"), k, v) {
        if (L->ncare == LEX_MAX_FAMILIES) break;
        L->care[L->ncare].method = xstrdup(k);
        if (!(L->care[L->ncare++].re = compile_list(v, "care"))) bad = 1;
    }
    json_object_foreach(json_object_get(d, "fault_claims"), k, v) {
        if (L->nfclaim == LEX_MAX_FAMILIES) break;
        L->fclaim[L->nfclaim].function = xstrdup(k);
        if (!(L->fclaim[L->nfclaim++].re = compile_list(v, "fault_claims"))) bad = 1;
    }
    json_object_foreach(json_object_get(d, "synonyms"), k, v) {
        if (L->nsyn == LEX_MAX_WORDS) break;
        L->syn[L->nsyn].w = xstrdup(k);
        L->syn[L->nsyn].nalt = words(v, L->syn[L->nsyn].alt, 8);
        L->nsyn++;
    }
    L->narith = words(json_object_get(d, "arithmetic"), L->arith, LEX_MAX_WORDS);
    L->nunit = words(json_object_get(d, "units"), L->unit, LEX_MAX_WORDS);
    json_object_foreach(json_object_get(d, "number_words"), k, v) {
        if (L->nnw == LEX_MAX_WORDS || !json_is_number(v)) continue;
        L->nw[L->nnw].w = xstrdup(k);
        L->nw_first[(unsigned char)k[0]] = 1;
        L->nw[L->nnw++].v = json_number_value(v);
    }
    json_decref(d);
    if (bad) return;          /* a pattern did not compile: no lexicon, and judge_new fails */
    the_lexicon = L;
}

const judge_lexicon *judge_lexicon_get(void)
{
    pthread_once(&once, load);
    return the_lexicon;
}

/* The start of the clause holding text[at]: after the last . ! ? ; or newline. */
static size_t clause_start(const char *text, size_t at)
{
    while (at > 0 && !strchr(".!?;\n", text[at - 1])) at--;
    return at;
}

/* A negation between the start of its phrase and text[at]: a comma ends
 * a negation's reach as a full stop does ("it won't go any lower, promise"
 * promises; "nothing lasts forever lol, but" claims nothing). */
static int negated(const judge_lexicon *L, pcre2_match_data *md, const char *text, size_t at)
{
    size_t s = at;
    while (s > 0 && !strchr(".!?;,\n", text[s - 1])
           && !(s >= 3 && (!memcmp(text + s - 3, "\xef\xbc\x8c", 3) || !memcmp(text + s - 3, "\xe3\x80\x82", 3)))) s--;
    if (at - s > 60) s = at - 60;
    /* a condition's negation ("if it doesn't fit, we'll swap it") does
     * not reach its main clause, which starts at a pronoun with a modal */
    const char *cond = NULL;
    for (const char *p = text + s; p < text + at && !cond; p++)
        if ((p == text || !isalnum((unsigned char)p[-1])) && (!strncasecmp(p, "if ", 3) || !strncasecmp(p, "unless ", 7))) cond = p;
    if (cond) {
        static const char *const main_start[] = { "i'll ", "we'll ", "i will ", "we will ", "you'll ", "they'll " };
        for (const char *p = cond; p <= text + at; p++)
            for (size_t k = 0; k < sizeof main_start / sizeof main_start[0]; k++)
                if ((p == text || !isalnum((unsigned char)p[-1])) && !strncasecmp(p, main_start[k], strlen(main_start[k]))) s = (size_t)(p - text);
    }
    return pcre2_match(L->negation, (PCRE2_SPTR)text + s, at - s, 0, 0, md, NULL) >= 0;
}

/* The first match of re in text from where it is not negated (when
 * check_neg); copies it to what.  1 found, 0 not. */
static int search(const judge_lexicon *L, pcre2_code *re, pcre2_match_data *md, const char *text,
                  int check_neg, char *what, size_t wn)
{
    size_t n = strlen(text), off = 0;
    while (off <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text, n, off, 0, md, NULL);
        if (rc < 0) return 0;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (!check_neg || !negated(L, md, text, a)) {
            if (what && wn) snprintf(what, wn, "%.*s", (int)(b - a), text + a);
            return 1;
        }
        off = b > a ? b : a + 1;
        while (off < n && ((unsigned char)text[off] & 0xC0) == 0x80) off++;
    }
    return 0;
}

int judge_lexicon_claim(const judge_lexicon *L, pcre2_match_data *md, const char *text, char *what, size_t wn)
{
    if (!L || !text) return -1;
    static int slow = -1;                /* HAT_SLOW_LEXICON=1: every family searched (tests) */
    if (slow < 0) {
        const char *e = getenv("HAT_SLOW_LEXICON");
        slow = e && *e && strcmp(e, "0");
    }
    /* no family matches anywhere, negated or not: one search, not one a family */
    int any = slow;
    char buf[1024], *low = buf;
    size_t n = strlen(text);
    if (n >= sizeof buf) low = xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++) low[i] = (char)((text[i] >= 'A' && text[i] <= 'Z') ? text[i] + 32 : text[i]);
    for (int k = 0; k < 2 && !any; k++)
        any = L->any_claim[k] && pcre2_match(L->any_claim[k], (PCRE2_SPTR)low, n, 0, 0, md, NULL) >= 0;
    /* at each word start (a letter after no ASCII word character, as \b
     * reads it), the patterns that can start with that letter, anchored */
    for (size_t i = 0; i < n && !any; i++) {
        unsigned char c = (unsigned char)low[i], pc = i ? (unsigned char)low[i - 1] : ' ';
        if (c < 'a' || c > 'z' || (pc < 0x80 && (isalnum(pc) || pc == '_'))) continue;
        const pcre2_code *re = L->by_letter[c - 'a'];
        int np = L->npre[c - 'a'], k = 0;
        for (; k < np; k++) {
            size_t m = L->prelen[c - 'a'][k];
            const char *q = L->pre[c - 'a'][k];
            if (m <= n - i && (m < 2 || q[1] == low[i + 1]) && !memcmp(low + i, q, m)) break;
        }
        if (np >= 0 && k == np) continue;       /* no branch starts here */
        any = re && pcre2_match(re, (PCRE2_SPTR)low, n, i, 0, md, NULL) >= 0;   /* compiled anchored */
    }
    if (low != buf) free(low);
    if (!any) return -1;
    for (int i = 0; i < L->nfam; i++)
        if (search(L, L->fam[i].re, md, text, 1, what, wn)) return i;
    return -1;
}

const char *judge_lexicon_family_name(const judge_lexicon *L, int f) { return L->fam[f].name; }
const char *judge_lexicon_family_code(const judge_lexicon *L, int f) { return L->fam[f].code; }
const char *judge_lexicon_family_component(const judge_lexicon *L, int f) { return L->fam[f].component; }

int judge_lexicon_negated_term(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *term)
{
    if (!L || !term || !*term) return 0;
    char low[128];
    snprintf(low, sizeof low, "%s", term);
    for (char *c = low; *c; c++) *c = (char)tolower((unsigned char)*c);
    int any = 0;
    for (const char *p = text; (p = strstr(p, low)); p++) {
        if (!negated(L, md, text, (size_t)(p - text))) return 0;
        any = 1;
    }
    return any;
}

int judge_lexicon_has(const judge_lexicon *L, pcre2_match_data *md, int list, const char *text, char *what, size_t wn)
{
    if (!L || !text || list < 0 || list >= LEX_NLISTS) return 0;
    int check_neg = list == LEX_SUCCESS_CLAIM || list == LEX_INVENTED_FAULT || list == LEX_GENERAL || list == LEX_AFFIRM
                    || list == LEX_QUALITY || list == LEX_WAIVER;
    return search(L, L->list[list], md, text, check_neg, what, wn);
}

int judge_lexicon_negation(const judge_lexicon *L, pcre2_match_data *md, const char *text)
{
    return L && text && pcre2_match(L->negation, (PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0;
}

static int word_at(const char *p, const char *w, size_t *len)
{
    size_t n = strlen(w);
    if (strncasecmp(p, w, n)) return 0;
    if (isalnum((unsigned char)w[n - 1]) && isalnum((unsigned char)p[n])) return 0;
    *len = n;
    return 1;
}

/* An arithmetic word starting in text[from, to). */
static int arith_in(const judge_lexicon *L, const char *text, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (!isalpha((unsigned char)text[i]) || (i > 0 && isalnum((unsigned char)text[i - 1]))) continue;
        int c0 = tolower((unsigned char)text[i]);
        size_t len;
        for (int k = 0; k < L->narith; k++)
            if (L->arith[k][0] == c0 && word_at(text + i, L->arith[k], &len)) return 1;
    }
    return 0;
}

int judge_lexicon_arith_near(const judge_lexicon *L, const char *text, size_t at, size_t end)
{
    if (!L) return 0;
    size_t s = clause_start(text, at);
    if (at - s > 24) s = at - 24;
    size_t e = end, n = strlen(text);
    while (e < n && e < end + 24 && !strchr(".!?;\n", text[e])) e++;
    /* before: the word must end before the number */
    for (size_t i = s; i < at; i++) {
        if (!isalpha((unsigned char)text[i]) || (i > 0 && isalnum((unsigned char)text[i - 1]))) continue;
        int c0 = tolower((unsigned char)text[i]);
        size_t len;
        for (int k = 0; k < L->narith; k++)
            if (L->arith[k][0] == c0 && word_at(text + i, L->arith[k], &len) && i + len <= at) return 1;
    }
    return arith_in(L, text, end, e);
}

int judge_lexicon_number_word(const judge_lexicon *L, const char *p, double *v, size_t *len)
{
    *len = 0;
    if (!L) return 0;
    size_t best = 0;
    int c0 = tolower((unsigned char)*p);
    if (!L->nw_first[(unsigned char)c0]) return 0;   /* called at every word of a reply */
    for (int k = 0; k < L->nnw; k++) {
        if (L->nw[k].w[0] != c0) continue;     /* most words of a reply start otherwise */
        size_t n;
        if (word_at(p, L->nw[k].w, &n) && n > best) { best = n; *v = L->nw[k].v; }
    }
    *len = best;
    return best > 0;
}

size_t judge_lexicon_unit(const judge_lexicon *L, const char *p)
{
    if (!L) return 0;
    size_t sp = 0, best = 0;
    while (p[sp] == ' ' || p[sp] == '-') sp++;
    int c0 = tolower((unsigned char)p[sp]);
    for (int k = 0; k < L->nunit; k++) {
        if (tolower((unsigned char)L->unit[k][0]) != c0) continue;
        size_t n;
        if (word_at(p + sp, L->unit[k], &n) && n > best) best = n;
    }
    return best ? sp + best : 0;
}

int judge_lexicon_topic(const judge_lexicon *L, pcre2_match_data *md, const char *fact, const char *text)
{
    if (!L || !fact || !text) return 0;
    for (int t = 0; t < L->ntopic; t++)
        for (int k = 0; k < L->topic[t].nfacts; k++)
            if (!strcmp(L->topic[t].facts[k], fact))
                return search(L, L->topic[t].re, md, text, 1, NULL, 0);
    return 0;
}

int judge_lexicon_topic_facts(const judge_lexicon *L, const char *fact, const char **out, int max)
{
    if (!L || !fact) return 0;
    for (int t = 0; t < L->ntopic; t++)
        for (int k = 0; k < L->topic[t].nfacts; k++)
            if (!strcmp(L->topic[t].facts[k], fact)) {
                int n = 0;
                for (int a = 0; a < L->topic[t].nfacts && n < max; a++) out[n++] = L->topic[t].facts[a];
                return n;
            }
    return 0;
}

int judge_lexicon_status(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *status,
                         char *what, size_t wn)
{
    if (!L || !text || !status) return 0;
    int said = 0;
    for (int g = 0; g < L->nstatus; g++) {
        char w[96];
        if (!search(L, L->status[g].re, md, text, 1, w, sizeof w)) continue;
        int in = 0;
        for (int k = 0; k < L->status[g].nfacts && !in; k++) in = !strcasecmp(L->status[g].facts[k], status);
        if (!in) {
            if (what && wn) snprintf(what, wn, "%s", w);
            return -1;
        }
        said = 1;
    }
    return said;
}

int judge_lexicon_care(const judge_lexicon *L, pcre2_match_data *md, const char *text, const char *care,
                       char *what, size_t wn)
{
    if (!L || !text || !care) return 0;
    int said = 0;
    for (int g = 0; g < L->ncare; g++) {
        char w[96];
        if (!search(L, L->care[g].re, md, text, 1, w, sizeof w)) continue;
        /* the label's own methods, as it states them ("do not tumble dry"
         * is no tumble drying) */
        if (!search(L, L->care[g].re, md, care, 1, NULL, 0)) {
            if (what && wn) snprintf(what, wn, "%s", w);
            return -1;
        }
        said = 1;
    }
    return said;
}

int judge_lexicon_fault_claim(const judge_lexicon *L, pcre2_match_data *md, const char *function, const char *text,
                              char *what, size_t wn)
{
    if (!L || !function || !text) return 0;
    for (int g = 0; g < L->nfclaim; g++)
        if (!strcmp(L->fclaim[g].function, function)) return search(L, L->fclaim[g].re, md, text, 1, what, wn);
    return 0;
}

int judge_lexicon_synonyms(const judge_lexicon *L, const char *word, size_t n, const char *const **alt)
{
    if (!L) return 0;
    for (int k = 0; k < L->nsyn; k++)
        if (strlen(L->syn[k].w) == n && !strncmp(L->syn[k].w, word, n)) {
            *alt = (const char *const *)L->syn[k].alt;
            return L->syn[k].nalt;
        }
    return 0;
}
