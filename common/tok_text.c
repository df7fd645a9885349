/* tok_text.c — the text side of the tokenizer: UTF-8 checks, the GPT-2
 * byte-level alphabet, lossy decoding, and the pipeline that turns raw
 * text into the pieces BPE sees (added tokens matched literally, then the
 * normalizer, then the pre-tokenizer's Split regexes), in the order and
 * with the rules of Hugging Face's AddedVocabulary and PreTokenizedString. */
#include "tok_internal.h"
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

char *tok_errf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) hat_die("out of memory");
    va_end(ap);
    return s;
}

/* --- UTF-8 ------------------------------------------------------------ */

/* Length of the valid sequence at s (1..4), or 0 if it is invalid; *bad
 * gets how many bytes form the maximal invalid subpart (>= 1). */
static int utf8_seq(const unsigned char *s, size_t n, int *bad)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;        /* no overlongs */
        if (c == 0xED) hi = 0x9F;        /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;        /* <= U+10FFFF */
    } else { *bad = 1; return 0; }
    size_t i = 1;
    for (; i <= (size_t)need; i++) {
        if (i >= n) break;
        unsigned b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    }
    if (i == (size_t)need + 1) return need + 1;
    *bad = (int)i;
    return 0;
}

long tok_utf8_check(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (u[i] < 0x80) { i++; continue; }
        int bad, k = utf8_seq(u + i, len - i, &bad);
        if (!k) return (long)i;
        i += (size_t)k;
    }
    return -1;
}

void tok_utf8_lossy(sbuf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;          /* run: start of pending valid bytes */
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        int bad, k = utf8_seq(u + i, n - i, &bad);
        if (k) { i += (size_t)k; continue; }
        sbuf_add(b, s + run, i - run);
        sbuf_add(b, "\xEF\xBF\xBD", 3);
        i += (size_t)bad;
        run = i;
    }
    sbuf_add(b, s + run, n - run);
}

/* --- byte-level alphabet ---------------------------------------------- */

uint16_t tok_byte_cp[256];
static int16_t cp_byte[324];      /* codepoints 0..323 -> byte or -1 */
static pthread_once_t bl_once = PTHREAD_ONCE_INIT;

static void bl_build(void)
{
    int n = 0;
    for (int i = 0; i < 324; i++) cp_byte[i] = -1;
    for (int c = 0; c < 256; c++) {
        int printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        tok_byte_cp[c] = (uint16_t)(printable ? c : 256 + n++);
        cp_byte[tok_byte_cp[c]] = (int16_t)c;
    }
}

void tok_bytelevel_init(void) { pthread_once(&bl_once, bl_build); }

int tok_cp_byte(int32_t cp) { return cp >= 0 && cp < 324 ? cp_byte[cp] : -1; }

void tok_bytes_to_bl(sbuf *b, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        utf8proc_uint8_t e[4];
        utf8proc_ssize_t k = utf8proc_encode_char(tok_byte_cp[s[i]], e);
        sbuf_add(b, (const char *)e, (size_t)k);
    }
}

int tok_bl_to_bytes(sbuf *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) return -1;
        int byte = tok_cp_byte(cp);
        if (byte < 0) return -1;
        sbuf_putc(b, (char)byte);
        i += (size_t)k;
    }
    return 0;
}

/* --- the normalizer ---------------------------------------------------- */

/* Normalise s into out.  Returns 1 if out holds the result, 0 if s is
 * already normal (out untouched): ASCII is invariant under every form, and
 * text below U+0300 is invariant under NFC (nothing there decomposes or
 * combines with what precedes it). */
static int normalize(int form, const char *s, size_t n, sbuf *out)
{
    if (form == TOK_NORM_NONE) return 0;
    unsigned char max = 0;
    size_t i;
    for (i = 0; i < n; i++) max |= (unsigned char)s[i];
    if (max < 0x80) return 0;
    if (form == TOK_NORM_NFC) {
        int low = 1;
        for (i = 0; i < n && low; i++)   /* lead bytes C0..CB = U+0000..U+02FF */
            if ((unsigned char)s[i] >= 0xCC && (unsigned char)s[i] < 0xF8 &&
                ((unsigned char)s[i] & 0xC0) == 0xC0) low = 0;
        if (low) return 0;
    }
    int opt = UTF8PROC_STABLE;
    if (form == TOK_NORM_NFC || form == TOK_NORM_NFKC) opt |= UTF8PROC_COMPOSE;
    else opt |= UTF8PROC_DECOMPOSE;
    if (form == TOK_NORM_NFKC || form == TOK_NORM_NFKD) opt |= UTF8PROC_COMPAT;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
                                      &dst, (utf8proc_option_t)opt);
    if (k < 0) return 0;              /* cannot happen on checked UTF-8 */
    sbuf_reset(out);
    sbuf_add(out, (const char *)dst, (size_t)k);
    free(dst);
    return 1;
}

/* --- character classes for the added-token flags ------------------------ */

static int32_t cp_before(const char *s, size_t at)
{
    size_t i = at;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) i--;
    if (i == 0) return -1;
    i--;
    utf8proc_int32_t cp;
    utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(at - i), &cp);
    return cp;
}

static int32_t cp_at(const char *s, size_t n, size_t at, int *len)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + at,
                                          (utf8proc_ssize_t)(n - at), &cp);
    *len = k > 0 ? (int)k : 1;
    return k > 0 ? cp : -1;
}

/* White_Space, the Unicode property Rust's char::is_whitespace and \s use. */
static int is_ws(int32_t c)
{
    if ((c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680) return 1;
    if ((c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
        c == 0x205F || c == 0x3000) return 1;
    return 0;
}

/* \w in Rust's regex: letters, marks, digits, connector punctuation. */
static int is_word(int32_t c)
{
    if (c < 0) return 0;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

/* --- added tokens ------------------------------------------------------- */

static int added_cmp(const void *a, const void *b)
{
    const tok_added *x = a, *y = b;
    return strcmp(x->content, y->content);
}

/* Longest added token of the given normalized-ness starting at s[i]; the
 * leftmost-longest rule of the Aho-Corasick matcher HF uses. */
static const tok_added *added_at(const tok_pipe *p, const char *s, size_t n, size_t i, int norm)
{
    const tok_added *best = NULL;
    for (int k = 0; k < p->nadded; k++) {
        const tok_added *a = &p->added[k];
        if (a->normalized != norm || (unsigned char)a->content[0] != (unsigned char)s[i]) continue;
        if (a->len <= n - i && (!best || a->len > best->len) && !memcmp(a->content, s + i, a->len))
            best = a;
    }
    return best;
}

/* --- the pre-tokenizer --------------------------------------------------- */

typedef struct {
    const tok_pipe   *p;
    pcre2_match_data *md;
    tok_piece_fn      fn;
    void             *ctx;
    const char       *base;         /* the whole text: plain ranges are offsets into it */
    const size_t     *plain;        /* (offset, length) pairs */
    size_t            nplain;
    int               deny_all;     /* inside a normalised stretch that touches one */
} run_ctx;

/* 1 when bytes [s, s + n) of the original text overlap a plain range. */
static int in_plain(const run_ctx *r, const char *s, size_t n)
{
    size_t a = (size_t)(s - r->base), b = a + n;
    for (size_t k = 0; k < r->nplain; k++)
        if (a < r->plain[2 * k] + r->plain[2 * k + 1] && r->plain[2 * k] < b) return 1;
    return 0;
}

/* Split by regex level `lv` with the Isolated behaviour: every match and
 * every gap between matches becomes a piece. */
static void split(run_ctx *r, int lv, const char *s, size_t n)
{
    if (n == 0) return;
    if (lv == r->p->nre) { r->fn(r->ctx, s, n, -1); return; }
    size_t at = 0, gap = 0;
    while (at < n) {
        int rc = pcre2_jit_match(r->p->re[lv], (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, r->md, NULL);
        if (rc == PCRE2_ERROR_JIT_BADOPTION)
            rc = pcre2_match(r->p->re[lv], (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, r->md, NULL);
        if (rc < 0) break;   /* no match (or a resource limit: keep the rest whole) */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) {      /* empty match: step one character, as find_iter does */
            int k;
            cp_at(s, n, me, &k);
            at = me + (size_t)k;
            continue;
        }
        if (ms > gap) split(r, lv + 1, s + gap, ms - gap);
        split(r, lv + 1, s + ms, me - ms);
        at = gap = me;
    }
    if (gap < n) split(r, lv + 1, s + gap, n - gap);
}

/* A stretch with no non-normalized added token: normalise, then match the
 * normalized added tokens, then pre-tokenise what is left. */
static void run_plain(run_ctx *r, const char *s, size_t n);

static void emit_split(run_ctx *r, const char *s, size_t n, int norm, int ch_norm)
{
    const tok_pipe *p = r->p;
    size_t i = 0, start = 0;   /* start: first byte not yet emitted */
    int has = !r->deny_all && (norm ? p->any_normalized : p->any_raw);
    while (has && i < n) {
        const tok_added *a = p->first[(unsigned char)s[i]] ? added_at(p, s, n, i, norm) : NULL;
        if (a && !norm && r->nplain && in_plain(r, s + i, a->len)) a = NULL;   /* typed, not a token */
        if (!a) { i++; continue; }
        size_t ms = i, me = i + a->len;
        int k;
        if (a->single_word && ((ms > 0 && is_word(cp_before(s, ms))) ||
                               (me < n && is_word(cp_at(s, n, me, &k))))) {
            i = me;            /* discarded, and the matcher moves past it */
            continue;
        }
        if (a->lstrip) {       /* but never into what an earlier match took */
            while (ms > start && is_ws(cp_before(s, ms))) {
                ms--;
                while (ms > start && ((unsigned char)s[ms] & 0xC0) == 0x80) ms--;
            }
        }
        if (a->rstrip) {
            while (me < n && is_ws(cp_at(s, n, me, &k))) me += (size_t)k;
        }
        if (ms > start) {
            if (ch_norm) run_plain(r, s + start, ms - start);
            else split(r, 0, s + start, ms - start);
        }
        r->fn(r->ctx, s + ms, me - ms, a->id);
        i = start = me;
    }
    if (start < n) {
        if (ch_norm) run_plain(r, s + start, n - start);
        else split(r, 0, s + start, n - start);
    }
}

static void run_plain(run_ctx *r, const char *s, size_t n)
{
    sbuf nb;
    sbuf_init(&nb);
    /* normalising moves offsets: a stretch touching a plain range matches
     * no normalized added token at all */
    int deny = r->deny_all;
    if (r->nplain && in_plain(r, s, n)) r->deny_all = 1;
    if (normalize(r->p->norm, s, n, &nb)) { s = nb.s; n = nb.len; }
    emit_split(r, s, n, 1, 0);
    r->deny_all = deny;
    sbuf_free(&nb);
}

void tok_pipe_run(const tok_pipe *p, const char *text, size_t len,
                  pcre2_match_data *md, tok_piece_fn fn, void *ctx)
{
    run_ctx r = { p, md, fn, ctx, text, NULL, 0, 0 };
    emit_split(&r, text, len, 0, 1);
}

void tok_pipe_run_ranges(const tok_pipe *p, const char *text, size_t len, const size_t *plain,
                         size_t nplain, pcre2_match_data *md, tok_piece_fn fn, void *ctx)
{
    run_ctx r = { p, md, fn, ctx, text, plain, nplain, 0 };
    emit_split(&r, text, len, 0, 1);
}

/* --- building the pipeline from tokenizer.json --------------------------- */

/* Oniguruma's and Rust's \s include U+0085 (NEL), PCRE2 10.42's does not:
 * rewrite \s and \S so the pattern means what the tokenizer's authors ran. */
static char *fix_space_class(const char *pat)
{
    sbuf b;
    sbuf_init(&b);
    int in_class = 0;
    for (const char *c = pat; *c; c++) {
        if (c[0] == '\\' && c[1]) {
            if (c[1] == 's') sbuf_puts(&b, in_class ? "\\s\\x{85}" : "[\\s\\x{85}]");
            else if (c[1] == 'S' && !in_class) sbuf_puts(&b, "[^\\s\\x{85}]");
            else sbuf_add(&b, c, 2);
            c++;
            continue;
        }
        if (*c == '[' && !in_class) in_class = 1;
        else if (*c == ']' && in_class) in_class = 0;
        sbuf_putc(&b, *c);
    }
    return sbuf_detach(&b);
}

static int add_regex(tok_pipe *p, const char *pat, int literal, char **err)
{
    if (p->nre == TOK_MAX_SPLITS) { *err = tok_errf("pre_tokenizer: more than %d Split steps", TOK_MAX_SPLITS); return -1; }
    char *fixed = literal ? xstrdup(pat) : fix_space_class(pat);
    int ec;
    PCRE2_SIZE eo;
    uint32_t opt = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)fixed, PCRE2_ZERO_TERMINATED, opt, &ec, &eo, NULL);
    free(fixed);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        *err = tok_errf("pre_tokenizer: Split regex does not compile at offset %zu: %s", (size_t)eo, msg);
        return -1;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* falls back to the interpreter if unavailable */
    p->re[p->nre++] = re;
    return 0;
}

/* The GPT-2 regex ByteLevel applies itself when use_regex is true. */
static const char gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int bool_field(const json_t *o, const char *k, int dflt)
{
    const json_t *v = json_object_get(o, k);
    return v && json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int pretok_one(tok_pipe *p, const json_t *pt, char **err)
{
    const char *type = json_string_value(json_object_get(pt, "type"));
    if (!type) { *err = tok_errf("pre_tokenizer: missing \"type\""); return -1; }
    if (p->bytelevel && strcmp(type, "Sequence")) {
        *err = tok_errf("pre_tokenizer \"%s\" after ByteLevel is not supported (ByteLevel must come last)", type);
        return -1;
    }
    if (!strcmp(type, "ByteLevel")) {
        p->bytelevel = 1;
        if (bool_field(pt, "add_prefix_space", 0)) {
            *err = tok_errf("pre_tokenizer ByteLevel with add_prefix_space=true is not supported");
            return -1;
        }
        return bool_field(pt, "use_regex", 1) ? add_regex(p, gpt2_regex, 0, err) : 0;
    }
    if (!strcmp(type, "Split")) {
        const char *beh = json_string_value(json_object_get(pt, "behavior"));
        if (!beh || strcmp(beh, "Isolated")) {
            *err = tok_errf("pre_tokenizer Split behavior \"%s\" is not supported (only Isolated)", beh ? beh : "?");
            return -1;
        }
        if (bool_field(pt, "invert", 0)) { *err = tok_errf("pre_tokenizer Split with invert=true is not supported"); return -1; }
        const json_t *pat = json_object_get(pt, "pattern");
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *lit = json_string_value(json_object_get(pat, "String"));
        if (!re && !lit) { *err = tok_errf("pre_tokenizer Split: pattern is neither Regex nor String"); return -1; }
        return add_regex(p, re ? re : lit, !re, err);
    }
    if (!strcmp(type, "Sequence")) {
        const json_t *a = json_object_get(pt, "pretokenizers");
        if (!json_is_array(a)) { *err = tok_errf("pre_tokenizer Sequence: missing \"pretokenizers\""); return -1; }
        for (size_t i = 0; i < json_array_size(a); i++)
            if (pretok_one(p, json_array_get(a, i), err)) return -1;
        return 0;
    }
    *err = tok_errf("pre_tokenizer \"%s\" is not supported", type);
    return -1;
}

static int normalizer_init(tok_pipe *p, const json_t *nz, char **err)
{
    if (!nz || json_is_null(nz)) { p->norm = TOK_NORM_NONE; return 0; }
    const char *type = json_string_value(json_object_get(nz, "type"));
    static const char *names[] = { NULL, "NFC", "NFD", "NFKC", "NFKD" };
    for (int i = 1; i < 5; i++)
        if (type && !strcmp(type, names[i])) { p->norm = i; return 0; }
    if (type && !strcmp(type, "Sequence")) {
        const json_t *a = json_object_get(nz, "normalizers");
        if (json_array_size(a) == 0) { p->norm = TOK_NORM_NONE; return 0; }
        if (json_array_size(a) == 1) return normalizer_init(p, json_array_get(a, 0), err);
        *err = tok_errf("normalizer Sequence of %zu steps is not supported (at most one of NFC, NFD, NFKC, NFKD)",
                        json_array_size(a));
        return -1;
    }
    *err = tok_errf("normalizer \"%s\" is not supported", type ? type : "?");
    return -1;
}

static int added_init(tok_pipe *p, const json_t *arr, char **err)
{
    size_t n = json_array_size(arr);
    p->added = xcalloc(n ? n : 1, sizeof *p->added);
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(arr, i);
        const json_t *c = json_object_get(a, "content"), *id = json_object_get(a, "id");
        if (!json_is_string(c) || !json_is_integer(id) || json_integer_value(id) < 0 ||
            json_integer_value(id) > 0x7fffffff) {
            *err = tok_errf("added_tokens[%zu]: needs a string \"content\" and an integer \"id\"", i);
            return -1;
        }
        if (json_string_length(c) == 0) continue;       /* HF ignores empty ones */
        tok_added *t = &p->added[p->nadded++];
        t->content = xstrndup(json_string_value(c), json_string_length(c));
        t->len = json_string_length(c);
        t->id = (int)json_integer_value(id);
        t->special = bool_field(a, "special", 0);
        t->lstrip = bool_field(a, "lstrip", 0);
        t->rstrip = bool_field(a, "rstrip", 0);
        t->single_word = bool_field(a, "single_word", 0);
        t->normalized = bool_field(a, "normalized", !t->special);
        if (t->normalized) {   /* matched against normalised text, so normalise it too */
            sbuf nb;
            sbuf_init(&nb);
            if (normalize(p->norm, t->content, t->len, &nb)) {
                free(t->content);
                t->len = nb.len;
                t->content = sbuf_detach(&nb);
            }
            sbuf_free(&nb);
            p->any_normalized = 1;
        } else {
            p->any_raw = 1;
        }
        p->first[(unsigned char)t->content[0]] = 1;
    }
    qsort(p->added, (size_t)p->nadded, sizeof *p->added, added_cmp);
    return 0;
}

int tok_pipe_init(tok_pipe *p, const json_t *root, char **err)
{
    memset(p, 0, sizeof *p);
    tok_bytelevel_init();
    if (normalizer_init(p, json_object_get(root, "normalizer"), err)) return -1;
    const json_t *pt = json_object_get(root, "pre_tokenizer");
    if (!pt || json_is_null(pt)) {
        *err = tok_errf("a byte-level BPE needs a ByteLevel pre_tokenizer; this file has none");
        return -1;
    }
    if (pretok_one(p, pt, err)) return -1;
    if (!p->bytelevel) {
        *err = tok_errf("pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
        return -1;
    }
    return added_init(p, json_object_get(root, "added_tokens"), err);
}

void tok_pipe_free(tok_pipe *p)
{
    for (int i = 0; i < p->nre; i++) pcre2_code_free(p->re[i]);
    for (int i = 0; i < p->nadded; i++) free(p->added[i].content);
    free(p->added);
    memset(p, 0, sizeof *p);
}
