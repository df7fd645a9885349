/* harness_memo.c — reusing a repeated inline harness, repeated messages
 * and repeated values of chosen keys (see harness_memo.h).
 *
 * Why the result equals json_loadb(line) whenever the memo path is taken.
 * The line L is cut into spans R_1..R_n (values of top-level keys: the
 * harness, shared keys; elements of "messages") and the chunks around
 * them, L = C_0 R_1 C_1 ... R_n C_n.  Each R_i is a byte string that
 * jansson parsed on its own, with the same flags, as one complete object
 * or array V_i.  P = C_0 X_1 C_1 ... X_n C_n, where X_i is the decimal
 * text of a distinct 19-digit integer, all X_i starting with one prefix
 * that occurs in no chunk.  Suppose jansson parses P into an object in
 * which the top-level key of each key span holds its X_i, and the
 * top-level "messages" array holds each message span's X_i at the index
 * the span was taken for.
 *   - Each X_i is one whole token of P: the byte before a span is ':',
 *     JSON white space, '[' or ',', and the byte after a message span is
 *     ',' (after a key's span anything may follow: a digit there would
 *     make another, longer number, which the check rejects).  A token with
 *     the value X_i has exactly X_i's digits (JSON numbers have no leading
 *     zeros, a fraction or exponent makes a real), so it contains the
 *     prefix and lies in no chunk: it is the inserted X_i.  So the values
 *     jansson placed at those keys (it keeps the last of duplicate keys)
 *     and in "messages" stand exactly where the spans were.
 *   - Each R_i is one complete object or array: it starts with '{' or '['
 *     and its value ends at the matching bracket whatever follows.
 *     Tokenising L gives the tokens of P with X_i's token replaced by
 *     R_i's tokens, so the parse of L is the parse of P with each X_i
 *     replaced by V_i.  (Each R_i nests at most HM_MAX_DEPTH levels, far
 *     below jansson's limit even two levels down.)
 * Every other outcome (no spans, a sentinel found elsewhere, a parse error
 * anywhere) falls back to json_loadb of the whole line, so a caller's
 * error message, line and column are jansson's own.  "jansson parses"
 * above is json_loadb_quick (jsonl.h): yajl building the value json_loadb
 * would return, or json_loadb itself where yajl cannot be sure of that. */
#include "harness_memo.h"
#include "jsonl.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value nested deeper than this is never memoised: far inside
 * jansson's limit (2048), so that moving it into its line can never cross
 * that limit. */
#define HM_MAX_DEPTH 1024

/* The message cache: at most this many entries and raw bytes (then it is
 * emptied); messages longer than HM_MSG_MAX are not kept. */
#define HM_BUCKETS   8192
#define HM_MAX_MSGS  8192
#define HM_MAX_BYTES (16u << 20)
#define HM_MSG_MAX   (256u << 10)
/* A message is cached the second time its bytes are seen: most messages
 * (the viewer's, most tool calls) occur once, and caching them would only
 * churn the cache.  Hashes of messages seen once, at most half of: */
#define HM_SEEN      65536

typedef struct mentry {
    struct mentry *next;
    uint64_t hash;
    size_t   len;
    json_t  *v;          /* jansson's parse of raw */
    char     raw[];
} mentry;

/* One span of the line replaced by a sentinel: the value of a top-level
 * key (the harness, a shared key) or an element of "messages". */
typedef struct {
    size_t      a, b;    /* [a, b) */
    json_t     *v;       /* its value (a reference) */
    const char *key;     /* the top-level key, or NULL for messages[idx] */
    size_t      idx;
} span;

#define HM_MAX_KEYS 4

struct harness_memo {
    char   *raw;         /* bytes of the remembered harness as its line had them */
    size_t  rawlen;
    json_t *h;           /* jansson's parse of raw */
    size_t  flags;       /* the flags every remembered value was parsed with */
    int     messages;    /* share repeated messages too */
    char   *keys[HM_MAX_KEYS];   /* top-level keys whose repeated values are shared */
    int     nkeys;
    mentry **mb;         /* message cache buckets (HM_BUCKETS), or NULL */
    size_t  mcount, mbytes;
    unsigned char *lens; /* bit n: some cached value is n bytes long (HM_MSG_MAX + 1 bits) */
    uint64_t *seen;      /* hashes of messages seen once (HM_SEEN slots, 0 = empty), or NULL */
    size_t  nseen;
    span   *sp;          /* spans of the current line */
    size_t  nsp, csp;
    sbuf    line;        /* the line with its sentinels, reused */
    harness_memo_stats n;
};

/* Sentinel prefixes: 11 digits unlikely in real data, then an 8-digit
 * index; the first prefix found in no chunk of the line is used. */
static const char *const prefix[] = { "73940615283", "81620937450", "60293847561", "59182736450" };
static const json_int_t prefix_value[] = { 73940615283LL, 81620937450LL, 60293847561LL, 59182736450LL };
#define HM_PREFIX_LEN 11
#define HM_SENT_LEN   19          /* the prefix and an 8-digit index */
#define HM_MAX_SPANS  100000      /* spans per line, far below 10^8 */

/* Sentinel i of prefix k: its text (HM_SENT_LEN digits, no NUL) and value. */
static json_int_t sentinel(char *out, int k, size_t i)
{
    memcpy(out, prefix[k], HM_PREFIX_LEN);
    size_t x = i;
    for (int d = HM_SENT_LEN - 1; d >= HM_PREFIX_LEN; d--, x /= 10) out[d] = (char)('0' + x % 10);
    return prefix_value[k] * 100000000LL + (json_int_t)(i % 100000000);
}

harness_memo *harness_memo_new(void)
{
    harness_memo *m = xcalloc(1, sizeof *m);
    sbuf_init(&m->line);
    return m;
}

void harness_memo_share_messages(harness_memo *m, int on) { m->messages = on; }

void harness_memo_share_key(harness_memo *m, const char *key)
{
    if (m->nkeys == HM_MAX_KEYS) hat_die("harness_memo: at most %d shared keys", HM_MAX_KEYS);
    m->keys[m->nkeys++] = xstrdup(key);
}

static void forget_harness(harness_memo *m)
{
    json_decref(m->h);
    free(m->raw);
    m->h = NULL;
    m->raw = NULL;
    m->rawlen = 0;
}

static void forget_messages(harness_memo *m)
{
    for (size_t i = 0; m->mb && i < HM_BUCKETS; i++) {
        for (mentry *e = m->mb[i], *next; e; e = next) {
            next = e->next;
            json_decref(e->v);
            free(e);
        }
        m->mb[i] = NULL;
    }
    if (m->lens) memset(m->lens, 0, HM_MSG_MAX / 8 + 1);
    m->mcount = m->mbytes = 0;
}

void harness_memo_free(harness_memo *m)
{
    if (!m) return;
    forget_harness(m);
    forget_messages(m);
    free(m->mb);
    free(m->lens);
    free(m->seen);
    free(m->sp);
    for (int i = 0; i < m->nkeys; i++) free(m->keys[i]);
    sbuf_free(&m->line);
    free(m);
}

harness_memo_stats harness_memo_counts(const harness_memo *m) { return m->n; }

/* memmem(h, n, needle, m), m > 0: the first occurrence.  glibc's memmem
 * prepares its two-way search on every call, which for these short
 * needles over a ~1 KB line cost more than the search. */
static const char *find(const char *h, size_t n, const char *needle, size_t m)
{
    for (const char *end = h + n; n >= m && (h = memchr(h, needle[0], n - m + 1)); h++, n = (size_t)(end - h)) {
        if (!memcmp(h, needle, m)) return h;
    }
    return NULL;
}

static int json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The cache's hash of n bytes: 8-byte words, then the tail and the
 * length, so that the hashes of growing prefixes come from one pass. */
#define HM_SEED 0x9e3779b97f4a7c15ULL

static uint64_t hash_step(uint64_t h, const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

static uint64_t hash_end(uint64_t h, const char *tail, size_t nt, size_t n)
{
    uint64_t w = 0;
    memcpy(&w, tail, nt);
    h = (h ^ w ^ ((uint64_t)n << 3)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = HM_SEED;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) h = hash_step(h, p + i);
    return hash_end(h, p + i, n - i, n);
}

/* ---- spans ------------------------------------------------------------------ */

/* Adds the span [a, b) with value v (a reference, taken) in line order;
 * refused (v released, 0 returned) when it overlaps one already there. */
static int add_span(harness_memo *m, size_t a, size_t b, json_t *v, const char *key, size_t idx)
{
    if (m->nsp == HM_MAX_SPANS) { json_decref(v); return 0; }   /* sentinel indexes stay 8 digits */
    size_t i = m->nsp;
    while (i > 0 && m->sp[i - 1].a > a) i--;
    if ((i > 0 && m->sp[i - 1].b > a) || (i < m->nsp && m->sp[i].a < b)) {
        json_decref(v);
        return 0;
    }
    if (m->nsp == m->csp) {
        m->csp = m->csp ? m->csp * 2 : 16;
        m->sp = xrealloc(m->sp, m->csp * sizeof *m->sp);
    }
    memmove(m->sp + i + 1, m->sp + i, (m->nsp - i) * sizeof *m->sp);
    m->sp[i] = (span){ a, b, v, key, idx };
    m->nsp++;
    return 1;
}

/* Keeps only the span of key (the harness), dropping the others. */
static void keep_only(harness_memo *m, const char *key)
{
    size_t k = 0;
    for (size_t i = 0; i < m->nsp; i++) {
        if (m->sp[i].key == key) m->sp[k++] = m->sp[i];
        else json_decref(m->sp[i].v);
    }
    m->nsp = k;
}

static void drop_spans(harness_memo *m, size_t from)
{
    while (m->nsp > from) json_decref(m->sp[--m->nsp].v);
}

/* The last occurrence of needle (m > 1 bytes) in h[0, n), found from
 * its second byte back: a key's opening quote is in every few bytes of
 * JSON, its first letter much more rarely. */
static const char *find_last(const char *h, size_t n, const char *needle, size_t m)
{
    if (n < m) return NULL;
    for (size_t lim = n - m + 2; lim > 1;) {
        const char *p = memrchr(h + 1, needle[1], lim - 1);
        if (!p) return NULL;
        if (!memcmp(p - 1, needle, m)) return p - 1;
        lim = (size_t)(p - h);
    }
    return NULL;
}

/* Offset of the value of the first "KEY" key (the last, when last) if it
 * starts with '{' or '[', else len.  Which one is taken is only a guess:
 * the parse around the spans checks where each landed. */
static size_t value_at(const char *line, size_t len, const char *key, int last)
{
    char q[64];
    size_t kn = strlen(key) + 2;
    if (kn >= sizeof q) return len;
    q[0] = '"';
    memcpy(q + 1, key, kn - 2);
    q[kn - 1] = '"';
    const char *p = last ? find_last(line, len, q, kn) : find(line, len, q, kn);
    if (!p) return len;
    size_t a = (size_t)(p - line) + kn;
    while (a < len && json_space(line[a])) a++;
    if (a >= len || line[a] != ':') return len;
    a++;
    while (a < len && json_space(line[a])) a++;
    return a < len && (line[a] == '{' || line[a] == '[') ? a : len;
}

/* jansson's parse of the object or array starting at line[a]
 * (DISABLE_EOF: *b is where it ended), or NULL; refused when nested deeper
 * than HM_MAX_DEPTH. */
static json_t *parse_object(const char *line, size_t a, size_t *b, size_t len, size_t flags)
{
    json_error_t e;
    size_t used = 0;
    json_t *v = json_loadb_fast(line + a, len - a, flags | JSON_DISABLE_EOF_CHECK, &used);
    if (!v && (v = json_loadb(line + a, len - a, flags | JSON_DISABLE_EOF_CHECK, &e))) used = (size_t)e.position;
    size_t end = a + used;
    char close = line[a] == '{' ? '}' : ']';
    if (!(json_is_object(v) || json_is_array(v)) || end <= a || end > len || line[end - 1] != close
        || json_too_deep(line + a, end - a, HM_MAX_DEPTH)) {
        json_decref(v);
        return NULL;
    }
    *b = end;
    return v;
}

/* ---- the message cache ----------------------------------------------------- */

static json_t *mcache_get(harness_memo *m, const char *p, size_t n, uint64_t h)
{
    if (!m->mb) return NULL;
    for (mentry *e = m->mb[h % HM_BUCKETS]; e; e = e->next)
        if (e->hash == h && e->len == n && !memcmp(e->raw, p, n)) return e->v;
    return NULL;
}

/* Whether hash h was seen before (then it is forgotten), else remembers it. */
static int seen_before(harness_memo *m, uint64_t h)
{
    if (!h) h = 1;
    if (!m->seen) m->seen = xcalloc(HM_SEEN, sizeof *m->seen);
    size_t i = h & (HM_SEEN - 1);
    for (; m->seen[i]; i = (i + 1) & (HM_SEEN - 1))
        if (m->seen[i] == h) return 1;
    if (m->nseen >= HM_SEEN / 2) {
        memset(m->seen, 0, HM_SEEN * sizeof *m->seen);
        m->nseen = 0;
        i = h & (HM_SEEN - 1);
    }
    m->seen[i] = h;
    m->nseen++;
    return 0;
}

static void mcache_put(harness_memo *m, const char *p, size_t n, uint64_t h, json_t *v)
{
    if (n > HM_MSG_MAX || !seen_before(m, h)) return;
    if (m->mcount >= HM_MAX_MSGS || m->mbytes + n > HM_MAX_BYTES) forget_messages(m);
    if (!m->mb) m->mb = xcalloc(HM_BUCKETS, sizeof *m->mb);
    if (!m->lens) m->lens = xcalloc(HM_MSG_MAX / 8 + 1, 1);
    m->lens[n / 8] |= (unsigned char)(1u << (n % 8));
    mentry *e = xmalloc(sizeof *e + n);
    e->hash = h;
    e->len = n;
    e->v = json_incref(v);
    memcpy(e->raw, p, n);
    e->next = m->mb[h % HM_BUCKETS];
    m->mb[h % HM_BUCKETS] = e;
    m->mcount++;
    m->mbytes += n;
}

/* Spans for the elements of the first "messages" array after the harness
 * span (if any), but its last: an element ends where "},{"role":"" starts
 * the next one.  A span that is not one whole object, or that overlaps
 * another span, stops the walk (the rest is parsed with the line). */
static void message_spans(harness_memo *m, const char *line, size_t len, size_t flags, size_t from)
{
    static const char key[] = "\"messages\":[{\"role\":\"", sep[] = "},{\"role\":\"";
    const size_t kn = sizeof key - 1, sn = sizeof sep - 1;
    const char *k = find(line + from, len - from, key, kn);
    if (!k) return;
    size_t p = (size_t)(k - line) + 12;          /* the '{' of the first element */
    for (size_t idx = 0;; idx++) {
        const char *q = p + 1 < len ? find(line + p + 1, len - p - 1, sep, sn) : NULL;
        if (!q) return;
        size_t b = (size_t)(q - line) + 1;
        uint64_t h = hash_bytes(line + p, b - p);
        json_t *v = mcache_get(m, line + p, b - p, h);
        if (v) {
            json_incref(v);
            m->n.msg_hits++;
        } else {
            json_error_t e;
            v = json_loadb_quick(line + p, b - p, flags, &e);
            if (!json_is_object(v) || json_too_deep(line + p, b - p, HM_MAX_DEPTH)) {
                json_decref(v);
                return;
            }
            mcache_put(m, line + p, b - p, h, v);
            m->n.msg_fresh++;
        }
        if (!add_span(m, p, b, v, NULL, idx)) return;
        p = b + 1;                                /* past the ',' */
    }
}

/* The span of a shared key's value (an object or array).  Where it ends is
 * not known before it is parsed, but a cached value can only end at one of
 * its closing brackets: each is tried, the hashes of the growing prefix
 * coming from one pass.  A cached complete value is never a proper prefix
 * of another at the same place, so the first found is the one. */
static void key_span(harness_memo *m, const char *line, size_t len, size_t flags, const char *key)
{
    /* from the end: a shared key follows the harness and the messages in
     * the lines that use one (traj.jsonl's "meta"), and a search from the
     * start would stop at every quote of the harness */
    size_t a = value_at(line, len, key, 1);
    if (a >= len) return;
    char close = line[a] == '{' ? '}' : ']';
    size_t lim = len - a < HM_MSG_MAX ? len : a + HM_MSG_MAX, done = 0;
    uint64_t h = HM_SEED;
    json_t *v = NULL;
    size_t b = a;
    for (const char *q = line + a; m->lens && (q = memchr(q + 1, close, lim - (size_t)(q + 1 - line))); ) {
        size_t n = (size_t)(q + 1 - line) - a;
        if (!(m->lens[n / 8] & (1u << (n % 8)))) continue;   /* no cached value this long */
        for (; done + 8 <= n; done += 8) h = hash_step(h, line + a + done);
        if ((v = mcache_get(m, line + a, n, hash_end(h, line + a + done, n - done, n)))) {
            json_incref(v);
            b = a + n;
            m->n.key_hits++;
            break;
        }
        if (q + 1 >= line + lim) break;
    }
    if (!v) {
        if (!(v = parse_object(line, a, &b, len, flags))) return;
        mcache_put(m, line + a, b - a, hash_bytes(line + a, b - a), v);
        m->n.key_fresh++;
    }
    add_span(m, a, b, v, key, 0);
}

/* ---- the line around its spans ----------------------------------------------- */

/* The line with every span replaced by a sentinel, parsed; the record with
 * the spans' values in place when each sentinel landed where its span was
 * (the value of its top-level key, or messages[idx]), else NULL. */
static json_t *parse_around(harness_memo *m, const char *line, size_t len, size_t flags)
{
    size_t np = sizeof prefix / sizeof prefix[0], k;
    for (k = 0; k < np; k++) {
        int found = 0;
        for (size_t i = 0, at = 0; i <= m->nsp && !found; i++) {
            size_t end = i < m->nsp ? m->sp[i].a : len;
            found = end > at && find(line + at, end - at, prefix[k], HM_PREFIX_LEN) != NULL;
            if (i < m->nsp) at = m->sp[i].b;
        }
        if (!found) break;
    }
    if (k == np) return NULL;
    char sent[HM_SENT_LEN];
    sbuf_reset(&m->line);
    for (size_t i = 0, at = 0; i <= m->nsp; i++) {
        size_t end = i < m->nsp ? m->sp[i].a : len;
        sbuf_add(&m->line, line + at, end - at);
        if (i == m->nsp) break;
        sentinel(sent, (int)k, i);
        sbuf_add(&m->line, sent, HM_SENT_LEN);
        at = m->sp[i].b;
    }
    json_error_t e;
    json_t *rec = json_loadb_quick(m->line.s, m->line.len, flags, &e);
    if (!json_is_object(rec)) { json_decref(rec); return NULL; }
    json_t *msgs = json_object_get(rec, "messages");
    for (size_t i = 0; i < m->nsp; i++) {
        json_int_t want = sentinel(sent, (int)k, i);
        const span *sp = &m->sp[i];
        json_t *v = sp->key ? json_object_get(rec, sp->key) : json_array_get(msgs, sp->idx);
        if (!json_is_integer(v) || json_integer_value(v) != want) { json_decref(rec); return NULL; }
    }
    for (size_t i = 0; i < m->nsp; i++) {
        const span *sp = &m->sp[i];
        if (sp->key) json_object_set(rec, sp->key, sp->v);   /* the key keeps its place */
        else json_array_set(msgs, sp->idx, sp->v);
    }
    return rec;
}

/* Remember raw (of length n), parsed as h (a reference is taken). */
static void remember(harness_memo *m, const char *raw, size_t n, json_t *h)
{
    forget_harness(m);
    m->raw = xmalloc(n ? n : 1);
    memcpy(m->raw, raw, n);
    m->rawlen = n;
    m->h = json_incref(h);
}

json_t *harness_memo_parse(harness_memo *m, const char *line, size_t len, size_t flags,
                           json_error_t *e)
{
    static const char hkey[] = "harness";
    if (flags != m->flags) {                      /* remembered values were parsed otherwise */
        forget_harness(m);
        forget_messages(m);
        m->flags = flags;
    }
    m->nsp = 0;
    size_t a = value_at(line, len, hkey, 0), b = a;
    int hit = 0, fresh = 0;
    if (a < len && line[a] == '{') {
        if (m->h && len - a >= m->rawlen && !memcmp(line + a, m->raw, m->rawlen)) {
            b = a + m->rawlen;
            hit = add_span(m, a, b, json_incref(m->h), hkey, 0);
        } else {
            json_t *h = parse_object(line, a, &b, len, flags);
            if (h) fresh = add_span(m, a, b, h, hkey, 0);
        }
    }
    for (int i = 0; i < m->nkeys; i++) key_span(m, line, len, flags, m->keys[i]);
    if (m->messages) message_spans(m, line, len, flags, hit || fresh ? b : 0);
    json_t *rec = m->nsp ? parse_around(m, line, len, flags) : NULL;
    if (!rec && m->nsp > 1 && (hit || fresh)) {
        /* The other spans did not land: the harness alone may. */
        keep_only(m, hkey);
        rec = parse_around(m, line, len, flags);
    }
    if (rec) {
        if (fresh) remember(m, line + a, b - a, json_object_get(rec, hkey));
        if (hit) m->n.hits++;
        else if (fresh) m->n.fresh++;
        else m->n.full++;                         /* no inline harness to reuse */
        drop_spans(m, 0);
        return rec;
    }
    drop_spans(m, 0);
    m->n.full++;
    return json_loadb_quick(line, len, flags, e);
}
