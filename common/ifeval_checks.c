/* ifeval_checks.c — the 25 instructions of IFEval: their ids, their kwargs
 * (as build_description reads them) and their check_following, one small
 * function each, transcribed from the original instructions.py.  Where the
 * original uses a regex, the same regex runs here on PCRE2 (ifeval_text.c);
 * where it uses nltk or langdetect, the equivalents in ifeval_text.c and
 * ifeval_lang.c. */
#include "ifeval.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

enum kind {
    K_LANGUAGE, K_SENTENCES, K_PLACEHOLDERS, K_BULLETS, K_CONSTRAINED, K_HIGHLIGHTS,
    K_SECTIONS, K_PARAGRAPHS, K_POSTSCRIPT, K_EXISTENCE, K_FREQUENCY, K_WORDS, K_JSON,
    K_NTH_PARAGRAPH, K_FORBIDDEN, K_TWO_RESPONSES, K_REPEAT_PROMPT, K_END, K_TITLE,
    K_LETTER, K_CAPITAL, K_LOWERCASE, K_NO_COMMA, K_CAPITAL_WORDS, K_QUOTATION,
};

/* Argument kinds: i = integer >= 0, r = relation, s = string, l = list of
 * strings.  Every listed argument is required (the original draws missing
 * ones at random, which a checker must not). */
static const struct spec {
    const char *id;
    enum kind kind;
    const char *args;   /* "name:t,name:t" in n1,n2,n3 / s / list order */
} SPECS[] = {
    { "keywords:existence", K_EXISTENCE, "keywords:l" },
    { "keywords:frequency", K_FREQUENCY, "keyword:s,frequency:i,relation:r" },
    { "keywords:forbidden_words", K_FORBIDDEN, "forbidden_words:l" },
    { "keywords:letter_frequency", K_LETTER, "letter:s,let_frequency:i,let_relation:r" },
    { "language:response_language", K_LANGUAGE, "language:s" },
    { "length_constraints:number_sentences", K_SENTENCES, "num_sentences:i,relation:r" },
    { "length_constraints:number_paragraphs", K_PARAGRAPHS, "num_paragraphs:i" },
    { "length_constraints:number_words", K_WORDS, "num_words:i,relation:r" },
    { "length_constraints:nth_paragraph_first_word", K_NTH_PARAGRAPH,
      "num_paragraphs:i,nth_paragraph:i,first_word:s" },
    { "detectable_content:number_placeholders", K_PLACEHOLDERS, "num_placeholders:i" },
    { "detectable_content:postscript", K_POSTSCRIPT, "postscript_marker:s" },
    { "detectable_format:number_bullet_lists", K_BULLETS, "num_bullets:i" },
    { "detectable_format:constrained_response", K_CONSTRAINED, "" },
    { "detectable_format:number_highlighted_sections", K_HIGHLIGHTS, "num_highlights:i" },
    { "detectable_format:multiple_sections", K_SECTIONS, "section_spliter:s,num_sections:i" },
    { "detectable_format:json_format", K_JSON, "" },
    { "detectable_format:title", K_TITLE, "" },
    { "combination:two_responses", K_TWO_RESPONSES, "" },
    { "combination:repeat_prompt", K_REPEAT_PROMPT, "prompt_to_repeat:s" },
    { "startend:end_checker", K_END, "end_phrase:s" },
    { "startend:quotation", K_QUOTATION, "" },
    { "change_case:capital_word_frequency", K_CAPITAL_WORDS, "capital_frequency:i,capital_relation:r" },
    { "change_case:english_capital", K_CAPITAL, "" },
    { "change_case:english_lowercase", K_LOWERCASE, "" },
    { "punctuation:no_comma", K_NO_COMMA, "" },
};
#define NSPECS (sizeof SPECS / sizeof *SPECS)

const char *const ifeval_instruction_ids[] = {
    "keywords:existence", "keywords:frequency", "keywords:forbidden_words",
    "keywords:letter_frequency", "language:response_language",
    "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:number_words", "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders", "detectable_content:postscript",
    "detectable_format:number_bullet_lists", "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections", "detectable_format:multiple_sections",
    "detectable_format:json_format", "detectable_format:title", "combination:two_responses",
    "combination:repeat_prompt", "startend:end_checker", "startend:quotation",
    "change_case:capital_word_frequency", "change_case:english_capital",
    "change_case:english_lowercase", "punctuation:no_comma", NULL,
};

struct ifeval_instr {
    enum kind kind;
    long n[3];        /* integer arguments in spec order */
    int less;         /* the relation is "less than" (else "at least") */
    char *s;          /* the string argument, normalised as the original */
    char **list;      /* list argument, NULL-terminated */
};

void ifeval_instr_free(ifeval_instr *in)
{
    if (!in) return;
    free(in->s);
    ifeval_strv_free(in->list);
    free(in);
}

/* Is name one of the spec's argument names? */
static int spec_has(const char *args, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = args; *p;) {
        const char *c = strchr(p, ':');
        if ((size_t)(c - p) == n && !strncmp(p, name, n)) return 1;
        p = strchr(c, ',');
        if (!p) break;
        p++;
    }
    return 0;
}

/* Read one argument into in; 0 or -1 with *err. */
static int read_arg(ifeval_instr *in, const char *id, const char *name, char type, json_t *v,
                    int *ni, char **err)
{
    if (!v || json_is_null(v)) { *err = xasprintf("%s: missing argument \"%s\"", id, name); return -1; }
    switch (type) {
    case 'i':
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            *err = xasprintf("%s: \"%s\" must be a non-negative integer", id, name);
            return -1;
        }
        in->n[(*ni)++] = (long)json_integer_value(v);
        return 0;
    case 'r': {
        const char *r = json_string_value(v);
        if (!r || (strcmp(r, "less than") && strcmp(r, "at least"))) {
            *err = xasprintf("%s: \"%s\" must be \"less than\" or \"at least\"", id, name);
            return -1;
        }
        in->less = !strcmp(r, "less than");
        return 0;
    }
    case 's':
        if (!json_is_string(v)) { *err = xasprintf("%s: \"%s\" must be a string", id, name); return -1; }
        in->s = xstrdup(json_string_value(v));
        return 0;
    case 'l': {
        if (!json_is_array(v)) { *err = xasprintf("%s: \"%s\" must be a list of strings", id, name); return -1; }
        size_t n = json_array_size(v);
        in->list = xcalloc(n + 1, sizeof *in->list);
        for (size_t i = 0; i < n; i++) {
            const char *s = json_string_value(json_array_get(v, i));
            if (!s) { *err = xasprintf("%s: \"%s\" must be a list of strings", id, name); return -1; }
            in->list[i] = xstrdup(s);
        }
        return 0;
    }
    }
    return -1;
}

/* The normalisations build_description applies to string arguments. */
static int normalise(ifeval_instr *in, const char *id, char **err)
{
    char *t;
    switch (in->kind) {
    case K_FREQUENCY: case K_SECTIONS: case K_POSTSCRIPT: case K_END:
        t = ifeval_strip(in->s, strlen(in->s));
        free(in->s);
        in->s = t;
        break;
    case K_NTH_PARAGRAPH:
        if (in->n[1] <= 0 || in->n[1] > in->n[0]) {
            *err = xasprintf("%s: nth_paragraph must be between 1 and num_paragraphs", id);
            return -1;
        }
        t = ifeval_lower(in->s);
        free(in->s);
        in->s = t;
        break;
    case K_LETTER: {
        /* the original draws a random letter when len(letter) != 1 */
        size_t n = strlen(in->s), k = 0;
        if (n) ifv_utf8_at(in->s, n, 0, &k);
        if (!n || k != n) {
            *err = xasprintf("%s: letter must be a single character", id);
            return -1;
        }
        t = ifeval_lower(in->s);
        free(in->s);
        in->s = t;
        break;
    }
    default: break;
    }
    return 0;
}

ifeval_instr *ifeval_instr_new(const char *id, json_t *kwargs, char **err)
{
    const struct spec *sp = NULL;
    for (size_t i = 0; i < NSPECS; i++) if (!strcmp(SPECS[i].id, id)) sp = &SPECS[i];
    if (!sp) { *err = xasprintf("unknown instruction id \"%s\"", id); return NULL; }
    if (kwargs && !json_is_object(kwargs) && !json_is_null(kwargs)) {
        *err = xasprintf("%s: kwargs must be an object", id);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(kwargs, k, v) {
        if (json_is_null(v) || spec_has(sp->args, k)) continue;
        *err = xasprintf("%s: unknown argument \"%s\"", id, k);
        return NULL;
    }
    ifeval_instr *in = xcalloc(1, sizeof *in);
    in->kind = sp->kind;
    int ni = 0;
    char *args = xstrdup(sp->args);
    for (char *a = strtok(args, ","); a; a = strtok(NULL, ",")) {
        char *c = strchr(a, ':');
        *c = 0;
        if (read_arg(in, id, a, c[1], json_object_get(kwargs, a), &ni, err)) {
            free(args);
            ifeval_instr_free(in);
            return NULL;
        }
    }
    free(args);
    if (normalise(in, id, err)) { ifeval_instr_free(in); return NULL; }
    return in;
}

/* ---- the checks ------------------------------------------------------- */

static int rel(const ifeval_instr *in, long actual, long threshold)
{
    return in->less ? actual < threshold : actual >= threshold;
}

static int check_language(const ifeval_instr *in, const char *v)
{
    const char *l = ifeval_detect_language(v);
    return !l || !strcmp(l, in->s);   /* langdetect failure counts as followed */
}

static int check_bullets(const ifeval_instr *in, const char *v)
{
    long a = ifeval_re_count("^\\s*\\*[^\\*].*$", IFV_M, v);
    long b = ifeval_re_count("^\\s*-.*$", IFV_M, v);
    return a + b == in->n[0];
}

static int check_constrained(const char *v)
{
    static const char *const opts[] = { "My answer is yes.", "My answer is no.", "My answer is maybe." };
    char *t = ifeval_strip(v, strlen(v));
    int ok = 0;
    for (int i = 0; i < 3; i++) if (strstr(t, opts[i])) ok = 1;
    free(t);
    return ok;
}

/* highlight.strip("*").strip() is not empty */
static int nonblank_inside(const char *h, size_t strip_n, int all_stars)
{
    size_t n = strlen(h), a = 0, b = n;
    if (all_stars) {
        while (a < b && h[a] == '*') a++;
        while (b > a && h[b - 1] == '*') b--;
    } else {
        a = strip_n;
        b = n - strip_n;
        if (b < a) b = a;
    }
    char *t = ifeval_strip(h + a, b - a);
    int ok = t[0] != 0;
    free(t);
    return ok;
}

static int check_highlights(const ifeval_instr *in, const char *v)
{
    long n1, n2, count = 0;
    char **one = ifeval_re_findall("\\*[^\\n\\*]*\\*", 0, v, &n1);
    char **two = ifeval_re_findall("\\*\\*[^\\n\\*]*\\*\\*", 0, v, &n2);
    for (long i = 0; i < n1; i++) count += nonblank_inside(one[i], 0, 1);
    /* removeprefix("**").removesuffix("**"): a 4-star "****" leaves "" */
    for (long i = 0; i < n2; i++) count += nonblank_inside(two[i], 2, 0);
    ifeval_strv_free(one);
    ifeval_strv_free(two);
    return count >= in->n[0];
}

static int check_sections(const ifeval_instr *in, const char *v)
{
    char *pat = xasprintf("\\s?%s\\s?\\d+\\s?", in->s);
    long n;
    char **parts = ifeval_re_split(pat, 0, v, &n);
    free(pat);
    if (!parts) return 0;
    ifeval_strv_free(parts);
    return n - 1 >= in->n[0];
}

static int check_paragraphs(const ifeval_instr *in, const char *v)
{
    long n;
    char **p = ifeval_re_split("\\s?\\*\\*\\*\\s?", 0, v, &n);
    long count = n;
    int ok = 1;
    for (long i = 0; i < n && ok; i++) {
        char *t = ifeval_strip(p[i], strlen(p[i]));
        if (!t[0]) {
            if (i == 0 || i == n - 1) count--;
            else ok = 0;
        }
        free(t);
    }
    ifeval_strv_free(p);
    return ok && count == in->n[0];
}

static int check_postscript(const ifeval_instr *in, const char *v)
{
    char *low = ifeval_lower(v), *pat;
    if (!strcmp(in->s, "P.P.S")) pat = xstrdup("\\s*p\\.\\s?p\\.\\s?s.*$");
    else if (!strcmp(in->s, "P.S.")) pat = xstrdup("\\s*p\\.\\s?s\\..*$");
    else {
        char *m = ifeval_lower(in->s);
        pat = xasprintf("\\s*%s.*$", m);
        free(m);
    }
    long n = ifeval_re_count(pat, IFV_M, low);
    free(pat);
    free(low);
    return n > 0;
}

static int check_existence(const ifeval_instr *in, const char *v)
{
    for (char **k = in->list; *k; k++)
        if (ifeval_re_search(*k, IFV_I, v) != 1) return 0;
    return 1;
}

static int check_json(const char *v)
{
    char *t = ifeval_strip(v, strlen(v));
    const char *p = t;
    static const char *const pre[] = { "```json", "```Json", "```JSON", "```" };
    for (int i = 0; i < 4; i++)
        if (!strncmp(p, pre[i], strlen(pre[i]))) p += strlen(pre[i]);
    size_t n = strlen(p);
    if (n >= 3 && !strcmp(p + n - 3, "```")) n -= 3;
    char *u = ifeval_strip(p, n);
    json_error_t e;
    json_t *j = json_loadb(u, strlen(u), JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &e);
    int ok = j != NULL;
    json_decref(j);
    free(u);
    free(t);
    return ok;
}

/* paragraph.split()[0] with leading quotes dropped, up to punctuation, lower */
static char *first_word_of(const char *para)
{
    size_t n = strlen(para), a = 0, b, k;   /* para is stripped already */
    for (b = a; b < n && !ifv_isspace(ifv_utf8_at(para, n, b, &k)); b += k) {}
    while (a < b && para[a] == '\'') a++;
    while (a < b && para[a] == '"') a++;
    size_t e = a;
    while (e < b && !strchr(".,?!'\"", para[e])) e++;
    char *w = xstrndup(para + a, e - a), *low = ifeval_lower(w);
    free(w);
    return low;
}

static int check_nth_paragraph(const ifeval_instr *in, const char *v)
{
    long n;
    char **p = ifeval_re_split("\\n\\n", 0, v, &n);
    long count = n;
    for (long i = 0; i < n; i++) {
        char *t = ifeval_strip(p[i], strlen(p[i]));
        if (!t[0]) count--;
        free(t);
    }
    int ok = 0;
    long nth = in->n[1];
    if (nth <= count) {
        char *para = ifeval_strip(p[nth - 1], strlen(p[nth - 1]));
        if (para[0]) {
            char *w = first_word_of(para);
            ok = count == in->n[0] && !strcmp(w, in->s);
            free(w);
        }
        free(para);
    }
    ifeval_strv_free(p);
    return ok;
}

static int check_forbidden(const ifeval_instr *in, const char *v)
{
    for (char **k = in->list; *k; k++) {
        char *pat = xasprintf("\\b%s\\b", *k);
        int hit = ifeval_re_search(pat, IFV_I, v) == 1;
        free(pat);
        if (hit) return 0;
    }
    return 1;
}

static int check_two_responses(const char *v)
{
    long n = 0;
    char **p = ifeval_re_split("\\*\\*\\*\\*\\*\\*", 0, v, &n);
    char *valid[2] = { NULL, NULL };
    long nv = 0;
    int ok = 1;
    for (long i = 0; i < n && ok; i++) {
        char *t = ifeval_strip(p[i], strlen(p[i]));
        if (!t[0]) {
            if (i != 0 && i != n - 1) ok = 0;
            free(t);
        } else if (nv < 2) valid[nv++] = t;
        else { nv++; free(t); }
    }
    ok = ok && nv == 2 && strcmp(valid[0], valid[1]);
    free(valid[0]);
    free(valid[1]);
    ifeval_strv_free(p);
    return ok;
}

static int check_repeat(const ifeval_instr *in, const char *v)
{
    char *a = ifeval_strip(v, strlen(v)), *b = ifeval_strip(in->s, strlen(in->s));
    char *la = ifeval_lower(a), *lb = ifeval_lower(b);
    int ok = !strncmp(la, lb, strlen(lb));
    free(a); free(b); free(la); free(lb);
    return ok;
}

static int check_end(const ifeval_instr *in, const char *v)
{
    char *a = ifeval_strip(v, strlen(v));
    size_t s = 0, e = strlen(a);
    while (s < e && a[s] == '"') s++;
    while (e > s && a[e - 1] == '"') e--;
    a[e] = 0;
    char *la = ifeval_lower(a + s), *lb = ifeval_lower(in->s);
    size_t na = strlen(la), nb = strlen(lb);
    int ok = nb <= na && !strcmp(la + na - nb, lb);
    free(a); free(la); free(lb);
    return ok;
}

static int check_title(const char *v)
{
    long n;
    char **t = ifeval_re_findall("<<[^\\n]+>>", 0, v, &n);
    int ok = 0;
    for (long i = 0; i < n && !ok; i++) {
        size_t a = 0, b = strlen(t[i]);
        while (a < b && t[i][a] == '<') a++;
        while (b > a && t[i][b - 1] == '>') b--;
        char *s = ifeval_strip(t[i] + a, b - a);
        ok = s[0] != 0;
        free(s);
    }
    ifeval_strv_free(t);
    return ok;
}

static int check_letter(const ifeval_instr *in, const char *v)
{
    char *low = ifeval_lower(v);
    long count = 0;
    size_t m = strlen(in->s);
    for (const char *p = low; (p = strstr(p, in->s)); p += m) count++;
    free(low);
    return rel(in, count, in->n[0]);
}

static int check_case(const char *v, int upper)
{
    size_t n = strlen(v);
    if (!(upper ? ifeval_isupper(v, n) : ifeval_islower(v, n))) return 0;
    const char *l = ifeval_detect_language(v);
    return !l || !strcmp(l, "en");
}

static int check_capital_words(const ifeval_instr *in, const char *v)
{
    long n, count = 0;
    char **t = ifeval_word_tokenize(v, &n);
    for (long i = 0; i < n; i++) count += ifeval_isupper(t[i], strlen(t[i]));
    ifeval_strv_free(t);
    return rel(in, count, in->n[0]);
}

static int check_quotation(const char *v)
{
    char *t = ifeval_strip(v, strlen(v));
    size_t n = strlen(t);
    int ok = n > 1 && t[0] == '"' && t[n - 1] == '"';
    free(t);
    return ok;
}

int ifeval_instr_check(const ifeval_instr *in, const char *v)
{
    switch (in->kind) {
    case K_LANGUAGE: return check_language(in, v);
    case K_SENTENCES: return rel(in, ifeval_count_sentences(v), in->n[0]);
    case K_PLACEHOLDERS: return ifeval_re_count("\\[.*?\\]", 0, v) >= in->n[0];
    case K_BULLETS: return check_bullets(in, v);
    case K_CONSTRAINED: return check_constrained(v);
    case K_HIGHLIGHTS: return check_highlights(in, v);
    case K_SECTIONS: return check_sections(in, v);
    case K_PARAGRAPHS: return check_paragraphs(in, v);
    case K_POSTSCRIPT: return check_postscript(in, v);
    case K_EXISTENCE: return check_existence(in, v);
    case K_FREQUENCY: return rel(in, ifeval_re_count(in->s, IFV_I, v), in->n[0]);
    case K_WORDS: return rel(in, ifeval_count_words(v), in->n[0]);
    case K_JSON: return check_json(v);
    case K_NTH_PARAGRAPH: return check_nth_paragraph(in, v);
    case K_FORBIDDEN: return check_forbidden(in, v);
    case K_TWO_RESPONSES: return check_two_responses(v);
    case K_REPEAT_PROMPT: return check_repeat(in, v);
    case K_END: return check_end(in, v);
    case K_TITLE: return check_title(v);
    case K_LETTER: return check_letter(in, v);
    case K_CAPITAL: return check_case(v, 1);
    case K_LOWERCASE: return check_case(v, 0);
    case K_NO_COMMA: return strchr(v, ',') == NULL;
    case K_CAPITAL_WORDS: return check_capital_words(in, v);
    case K_QUOTATION: return check_quotation(v);
    }
    return 0;
}
