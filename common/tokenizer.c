/* tokenizer.c — loading a byte-level BPE tokenizer.json, encoding with
 * merge ranks, decoding.  The text pipeline in front of BPE (added tokens,
 * normalizer, Split regexes) lives in tok_text.c; training in tok_train.c.
 *
 * BPE works on raw bytes: a word's initial symbols are the ids of its
 * bytes' byte-level characters, and merges are looked up by the pair of
 * ids in a hash table giving (rank, merged id).  The merge loop is Hugging
 * Face's: a min-heap of candidate merges ordered by (rank, position), with
 * stale entries skipped when popped, so the result is id-for-id theirs and
 * long words (whitespace runs, minified code) cost O(n log n).  Words are
 * cached in a direct-mapped table so that frequent words skip BPE. */
#include "tok_internal.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <yajl/yajl_parse.h>
#include <string.h>

/* --- hash tables --------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = mix64(h ^ w);
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    return mix64(h ^ w ^ ((uint64_t)n << 56));
}

/* Token string -> id, open addressing; slots hold id + 1 (0 = empty). */
typedef struct {
    int   *slot;
    size_t mask;
} str_index;

/* Merge pair (a, b) -> (rank, merged id). */
typedef struct {
    uint64_t key;        /* (a << 32 | b) + 1; 0 = empty */
    int      rank, id;
} pair_slot;

#define CACHE_SLOTS  (1u << 16)
#define CACHE_MAXLEN 64

typedef struct {
    uint64_t h;
    int     *ids;        /* one allocation: the ids, then the key bytes */
    char    *key;
    uint32_t len, nids;
} cache_slot;

struct tokenizer {
    tok_pipe   pipe;
    int        vocab_size;      /* max id + 1 */
    char     **str;             /* id -> token string as in the file */
    char     **dec;             /* id -> bytes it decodes to */
    uint32_t  *dec_len;
    uint8_t   *special;         /* id -> added token marked special */
    str_index  index;           /* model vocab and added tokens */
    int        byte_id[256];
    pair_slot *pairs;
    size_t     pair_mask;
    int        ignore_merges;
    cache_slot *cache;
    pthread_mutex_t cache_mu;
};

static void index_put(tokenizer *t, int id)
{
    const char *s = t->str[id];
    size_t i = hash_bytes(s, strlen(s)) & t->index.mask;
    while (t->index.slot[i]) i = (i + 1) & t->index.mask;
    t->index.slot[i] = id + 1;
}

int tok_token_id(const tokenizer *t, const char *s)
{
    size_t n = strlen(s), i = hash_bytes(s, n) & t->index.mask;
    for (int v; (v = t->index.slot[i]); i = (i + 1) & t->index.mask)
        if (!strcmp(t->str[v - 1], s)) return v - 1;
    return -1;
}

static uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

static pair_slot *pair_find(const tokenizer *t, int a, int b)
{
    uint64_t k = pair_key(a, b);
    size_t i = mix64(k) & t->pair_mask;
    for (;; i = (i + 1) & t->pair_mask) {
        pair_slot *p = &t->pairs[i];
        if (p->key == k || !p->key) return p;
    }
}

/* --- loading ------------------------------------------------------------ */

/* Limits (man 5 tokenizer.json, LIMITS).  Ids index arrays sized by the
 * largest id, so one huge id in a small file would allocate gigabytes:
 * ids stay below TOK_MAX_VOCAB (8x the largest vocabularies in use,
 * ~256k).  Merges are counted before the table is sized. */
#define TOK_MAX_VOCAB  (1 << 21)
#define TOK_MAX_MERGES (1 << 22)

static int set_token(tokenizer *t, int id, const char *s, size_t n, char **err)
{
    if (id < 0 || id >= t->vocab_size) { *err = tok_errf("token id %d out of range", id); return -1; }
    if (t->str[id]) {
        if (strcmp(t->str[id], s)) {
            *err = tok_errf("id %d is given to both \"%s\" and \"%s\"", id, t->str[id], s);
            return -1;
        }
        return 0;      /* an added token that is also in the model vocab */
    }
    t->str[id] = xstrndup(s, n);
    return 0;
}

static int check_model(const json_t *m, char **err)
{
    const char *type = json_string_value(json_object_get(m, "type"));
    if (!json_is_object(m)) { *err = tok_errf("no \"model\" object"); return -1; }
    if (!type || strcmp(type, "BPE")) {
        *err = tok_errf("model type \"%s\" is not supported (only BPE)", type ? type : "?");
        return -1;
    }
    const json_t *d = json_object_get(m, "dropout");
    if (d && !json_is_null(d) && json_number_value(d) != 0) {
        *err = tok_errf("BPE dropout is not supported");
        return -1;
    }
    const char *keys[] = { "continuing_subword_prefix", "end_of_word_suffix" };
    for (int i = 0; i < 2; i++) {
        const char *v = json_string_value(json_object_get(m, keys[i]));
        if (v && *v) { *err = tok_errf("BPE %s \"%s\" is not supported", keys[i], v); return -1; }
    }
    if (json_is_true(json_object_get(m, "byte_fallback"))) {
        *err = tok_errf("BPE byte_fallback is not supported (only byte-level BPE)");
        return -1;
    }
    return 0;
}

/* Post-processors and decoders: only the byte-level ones, which add no
 * tokens and only map characters back to bytes. */
static int check_bytelevel(const json_t *v, const char *what, int null_ok, char **err)
{
    if (!v || json_is_null(v)) {
        if (null_ok) return 0;
        *err = tok_errf("%s is missing; a ByteLevel %s is required", what, what);
        return -1;
    }
    const char *type = json_string_value(json_object_get(v, "type"));
    if (type && !strcmp(type, "ByteLevel")) return 0;
    if (type && !strcmp(type, "Sequence") && null_ok) {
        const json_t *a = json_object_get(v, "processors");
        for (size_t i = 0; i < json_array_size(a); i++)
            if (check_bytelevel(json_array_get(a, i), what, 0, err)) return -1;
        return 0;
    }
    *err = tok_errf("%s \"%s\" is not supported (only ByteLevel%s)", what, type ? type : "?",
                    null_ok ? "; post-processors that add tokens are refused" : "");
    return -1;
}

/* The model's vocabulary and merges as plain lists: taken from a parsed
 * tree (tok_from_json) or straight from the text (tok_load's fast path),
 * so both build the same tokenizer by the same code. */
typedef struct {
    const char **tok;   /* vocab: token string -> id */
    long long   *id;
    size_t       n;
    const char **a, **b;  /* merges, in rank order */
    size_t       nm;
} tok_lists;

static int max_id(const tok_lists *l, const json_t *added, char **err)
{
    long long mx = -1;
    for (size_t i = 0; i < l->n; i++) {
        if (l->id[i] < 0 || l->id[i] >= TOK_MAX_VOCAB) {
            *err = tok_errf("vocab entry \"%s\": id is not an integer in [0, %d)", l->tok[i], TOK_MAX_VOCAB);
            return -1;
        }
        if (l->id[i] > mx) mx = l->id[i];
    }
    for (size_t i = 0; i < json_array_size(added); i++) {
        json_int_t id = json_integer_value(json_object_get(json_array_get(added, i), "id"));
        if (id >= TOK_MAX_VOCAB) {
            *err = tok_errf("added token id %lld too large (ids must be below %d)", (long long)id,
                            TOK_MAX_VOCAB);
            return -1;
        }
        if (id > mx) mx = id;
    }
    return (int)(mx + 1);
}

static int load_vocab(tokenizer *t, const tok_lists *l, char **err)
{
    for (size_t i = 0; i < l->n; i++)
        if (set_token(t, (int)l->id[i], l->tok[i], strlen(l->tok[i]), err)) return -1;
    for (int i = 0; i < t->pipe.nadded; i++) {
        const tok_added *a = &t->pipe.added[i];
        if (set_token(t, a->id, a->content, a->len, err)) return -1;
        t->special[a->id] = (uint8_t)a->special;
    }
    size_t cap = 16;
    while (cap < (size_t)t->vocab_size * 2) cap <<= 1;
    t->index.slot = xcalloc(cap, sizeof *t->index.slot);
    t->index.mask = cap - 1;
    /* Added tokens first: a lookup finds them before a vocab entry with
     * the same string, as HF's token_to_id does. */
    for (int i = 0; i < t->pipe.nadded; i++) {
        int id = t->pipe.added[i].id;
        if (tok_token_id(t, t->str[id]) != id) index_put(t, id);
    }
    for (int id = 0; id < t->vocab_size; id++)
        if (t->str[id] && tok_token_id(t, t->str[id]) != id) index_put(t, id);
    /* Every byte must have its own token, or some text cannot be encoded. */
    sbuf b;
    sbuf_init(&b);
    for (int c = 0; c < 256; c++) {
        sbuf_reset(&b);
        tok_bytes_to_bl(&b, (const unsigned char *)&(char){(char)c}, 1);
        t->byte_id[c] = tok_token_id(t, b.s);
        if (t->byte_id[c] < 0) {
            *err = tok_errf("vocab lacks the byte-level token \"%s\" for byte 0x%02X", b.s, c);
            sbuf_free(&b);
            return -1;
        }
    }
    /* What each id decodes to: its characters mapped back to bytes, or the
     * raw string if one is not in the byte-level alphabet (HF does this). */
    for (int id = 0; id < t->vocab_size; id++) {
        if (!t->str[id]) continue;
        sbuf_reset(&b);
        size_t n = strlen(t->str[id]);
        if (tok_bl_to_bytes(&b, t->str[id], n)) { sbuf_reset(&b); sbuf_add(&b, t->str[id], n); }
        t->dec_len[id] = (uint32_t)b.len;
        t->dec[id] = xstrndup(b.s ? b.s : "", b.len);
    }
    sbuf_free(&b);
    return 0;
}

/* One merge "a b" or ["a", "b"] -> the two token strings. */
static int merge_parts(const json_t *m, size_t i, char *buf, size_t bufsz,
                       const char **a, const char **b, char **err)
{
    if (json_is_array(m) && json_array_size(m) == 2 &&
        json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1));
        return 0;
    }
    const char *s = json_string_value(m);
    const char *sp = s ? strchr(s, ' ') : NULL;
    if (!sp || strchr(sp + 1, ' ') || strlen(s) >= bufsz) {
        *err = tok_errf("merges[%zu]: not a pair \"a b\" or [\"a\", \"b\"]", i);
        return -1;
    }
    memcpy(buf, s, strlen(s) + 1);
    buf[sp - s] = 0;
    *a = buf;
    *b = buf + (sp - s) + 1;
    return 0;
}

static int load_merges(tokenizer *t, const tok_lists *l, char **err)
{
    size_t n = l->nm, cap = 16;
    if (n > TOK_MAX_MERGES) {
        *err = tok_errf("%zu merges; at most %d are accepted", n, TOK_MAX_MERGES);
        return -1;
    }
    while (cap < n * 2 + 2) cap <<= 1;
    t->pairs = xcalloc(cap, sizeof *t->pairs);
    t->pair_mask = cap - 1;
    sbuf cat;
    sbuf_init(&cat);
    for (size_t i = 0; i < n; i++) {
        const char *a = l->a[i], *b = l->b[i];
        int ia = tok_token_id(t, a), ib = tok_token_id(t, b);
        sbuf_reset(&cat);
        sbuf_puts(&cat, a);
        sbuf_puts(&cat, b);
        int ic = tok_token_id(t, cat.s);
        if (ia < 0 || ib < 0 || ic < 0) {
            *err = tok_errf("merges[%zu]: \"%s\" is not in the vocab", i, ia < 0 ? a : ib < 0 ? b : cat.s);
            goto fail;
        }
        pair_slot *p = pair_find(t, ia, ib);   /* a repeated pair: the later one wins, as in HF */
        p->key = pair_key(ia, ib);
        p->rank = (int)i;
        p->id = ic;
    }
    sbuf_free(&cat);
    return 0;
fail:
    sbuf_free(&cat);
    return -1;
}

static int check_top(const json_t *root, char **err)
{
    if (!json_is_object(root)) { *err = tok_errf("not a JSON object"); return -1; }
    const char *nulls[] = { "truncation", "padding" };
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(root, nulls[i]);
        if (v && !json_is_null(v)) { *err = tok_errf("%s is not supported (must be null)", nulls[i]); return -1; }
    }
    if (check_bytelevel(json_object_get(root, "post_processor"), "post_processor", 1, err)) return -1;
    return check_bytelevel(json_object_get(root, "decoder"), "decoder", 0, err);
}

/* Build from the tree's top level (model.vocab and model.merges may be
 * left empty there) and the lists. */
static tokenizer *tok_build(const json_t *root, const tok_lists *l, char **err)
{
    const json_t *m = json_object_get(root, "model");
    tokenizer *t = xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->cache_mu, NULL);
    if (tok_pipe_init(&t->pipe, root, err)) goto fail;
    t->vocab_size = max_id(l, json_object_get(root, "added_tokens"), err);
    if (t->vocab_size < 0) goto fail;
    t->str = xcalloc((size_t)t->vocab_size + 1, sizeof *t->str);
    t->dec = xcalloc((size_t)t->vocab_size + 1, sizeof *t->dec);
    t->dec_len = xcalloc((size_t)t->vocab_size + 1, sizeof *t->dec_len);
    t->special = xcalloc((size_t)t->vocab_size + 1, 1);
    if (load_vocab(t, l, err) || load_merges(t, l, err)) goto fail;
    t->ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
    t->cache = xcalloc(CACHE_SLOTS, sizeof *t->cache);
    return t;
fail:
    tok_free(t);
    return NULL;
}

static void lists_free(tok_lists *l)
{
    free(l->tok);
    free(l->id);
    free(l->a);
    free(l->b);
}

static int check_root(const json_t *root, char **err)
{
    return check_top(root, err) || check_model(json_object_get(root, "model"), err) ? -1 : 0;
}

tokenizer *tok_from_json(const json_t *root, char **err)
{
    *err = NULL;
    if (check_root(root, err)) return NULL;
    const json_t *m = json_object_get(root, "model");
    const json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges");
    if (!json_is_object(vocab) || !json_is_array(merges)) {
        *err = tok_errf("model needs a \"vocab\" object and a \"merges\" array");
        return NULL;
    }
    tok_lists l = { 0 };
    size_t nv = json_object_size(vocab), nm = json_array_size(merges), room = 1;
    if (nm > TOK_MAX_MERGES) {       /* before anything is sized by it */
        *err = tok_errf("%zu merges; at most %d are accepted", nm, TOK_MAX_MERGES);
        return NULL;
    }
    for (size_t i = 0; i < nm; i++) room += strlen(json_string_value(json_array_get(merges, i)) ?: "") + 1;
    l.tok = xcalloc(nv + 1, sizeof *l.tok);
    l.id = xcalloc(nv + 1, sizeof *l.id);
    l.a = xcalloc(nm + 1, sizeof *l.a);
    l.b = xcalloc(nm + 1, sizeof *l.b);
    char *split = xmalloc(room), *at = split;   /* "a b" merges, split in two */
    const char *k;
    json_t *v;
    tokenizer *t = NULL;
    json_object_foreach((json_t *)vocab, k, v) {
        l.tok[l.n] = k;
        l.id[l.n++] = json_is_integer(v) ? json_integer_value(v) : -1;
    }
    for (; l.nm < nm; l.nm++) {
        size_t left = room - (size_t)(at - split);
        if (merge_parts(json_array_get(merges, l.nm), l.nm, at, left < 1024 ? left : 1024,
                        &l.a[l.nm], &l.b[l.nm], err)) goto out;
        if (l.a[l.nm] == at) at += strlen(at) + strlen(l.b[l.nm]) + 2;
    }
    t = tok_build(root, &l, err);
out:
    free(split);
    lists_free(&l);
    return t;
}

/* --- tok_load's fast path ---------------------------------------------
 * model.vocab and model.merges are nearly all of a tokenizer.json (11 MB
 * of Qwen3's 11.4): building a jansson value for each of their 300,000
 * entries, only to copy and free them, was most of the load time.  One
 * pass of yajl's event parser collects them straight into lists and
 * notes where the two values lie; the rest of the document, with them
 * cut out ("{}" and "[]"), is then a small tree for the pipeline.  Any
 * doubt (a duplicate key, a value of the wrong type, a bad pair, a
 * surrogate escape...) steps aside to the tree path, whose message is
 * the answer. */
typedef struct {
    yajl_handle h;
    int     depth, model_key, in;       /* in: 0, 'v' (vocab) or 'm' (merges) */
    int     pair;                       /* strings seen in a ["a", "b"] merge */
    char    key[8];                     /* the key at depth 1 and 2, if short */
    size_t  beg[2], end[2];             /* vocab, merges: byte range */
    int     seen[2];
    sbuf    strs;                       /* every string, NUL-terminated */
    size_t *tok, *a, *b;                /* offsets into strs */
    long long *id;
    size_t  n, nm, cap, mcap, pending;  /* pending: the vocab key's offset */
    int     bad;
} fast_load;

static size_t fl_str(fast_load *f, const unsigned char *s, size_t n)
{
    size_t at = f->strs.len;
    if (memchr(s, 0, n)) f->bad = 1;
    sbuf_add(&f->strs, (const char *)s, n);
    sbuf_putc(&f->strs, 0);
    return at;
}

static int fl_open(void *ctx)
{
    fast_load *f = ctx;
    size_t at = yajl_get_bytes_consumed(f->h) - 1;
    f->depth++;
    if (f->depth == 3 && f->model_key && !f->in && (f->key[0] == 'v' || f->key[0] == 'm')) {
        int k = f->key[0] == 'm';
        if (f->seen[k]) f->bad = 1;
        f->seen[k] = 1;
        f->beg[k] = at;
        f->in = f->key[0];
    } else if (f->in == 'm' && f->depth == 4) f->pair = 0;
    else if (f->in) f->bad = 1;               /* nothing nests deeper in them */
    return !f->bad;
}

static int fl_close(void *ctx)
{
    fast_load *f = ctx;
    if (f->in && f->depth == 3) {
        f->end[f->in == 'm'] = yajl_get_bytes_consumed(f->h);
        f->in = 0;
    } else if (f->in == 'm' && f->depth == 4 && f->pair != 2) f->bad = 1;
    f->depth--;
    return !f->bad;
}

static int fl_map(void *ctx) { return fl_open(ctx); }
static int fl_array(void *ctx)
{
    fast_load *f = ctx;
    if (f->in == 'v') f->bad = 1;                   /* a vocab id that is an array */
    return fl_open(ctx) && (f->depth != 3 || f->in != 'v' || (f->bad = 1, 0));
}

static int fl_key(void *ctx, const unsigned char *s, size_t n)
{
    fast_load *f = ctx;
    if (f->in == 'v') {
        if (f->n == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 1024;
            f->tok = xrealloc(f->tok, f->cap * sizeof *f->tok);
            f->id = xrealloc(f->id, f->cap * sizeof *f->id);
        }
        f->pending = fl_str(f, s, n);
        return !f->bad;
    }
    if (f->depth == 1) f->model_key = n == 5 && !memcmp(s, "model", 5);
    if (f->depth == 2 && f->model_key) {
        int ok = (n == 5 && !memcmp(s, "vocab", 5)) || (n == 6 && !memcmp(s, "merges", 6));
        f->key[0] = ok ? (char)s[0] : 0;
    }
    return 1;
}

static int fl_number(void *ctx, const char *s, size_t n)
{
    fast_load *f = ctx;
    if (!f->in) return 1;
    if (f->in != 'v' || f->depth != 3 || n > 9) { f->bad = 1; return 0; }   /* ids < 2^21 */
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') { f->bad = 1; return 0; }
        v = v * 10 + (s[i] - '0');
    }
    f->tok[f->n] = f->pending;
    f->id[f->n++] = v;
    return 1;
}

static int fl_merge(fast_load *f, size_t a, size_t b)
{
    if (f->nm == f->mcap) {
        f->mcap = f->mcap ? 2 * f->mcap : 1024;
        f->a = xrealloc(f->a, f->mcap * sizeof *f->a);
        f->b = xrealloc(f->b, f->mcap * sizeof *f->b);
    }
    f->a[f->nm] = a;
    f->b[f->nm++] = b;
    return 1;
}

static int fl_string(void *ctx, const unsigned char *s, size_t n)
{
    fast_load *f = ctx;
    if (!f->in) return 1;
    if (f->in == 'v') { f->bad = 1; return 0; }
    if (f->depth == 4) {                            /* ["a", "b"] */
        size_t at = fl_str(f, s, n);
        if (++f->pair == 1) fl_merge(f, at, 0);
        else if (f->pair == 2) f->b[f->nm - 1] = at;
        else f->bad = 1;
        return !f->bad;
    }
    const unsigned char *sp = memchr(s, ' ', n);   /* "a b" */
    if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp - s) - 1) || n >= 1024) { f->bad = 1; return 0; }
    size_t a = fl_str(f, s, (size_t)(sp - s));
    return fl_merge(f, a, fl_str(f, sp + 1, n - (size_t)(sp - s) - 1));
}

static int fl_other(void *ctx)
{
    fast_load *f = ctx;
    if (f->in) f->bad = 1;
    return !f->bad;
}
static int fl_bool(void *ctx, int b) { (void)b; return fl_other(ctx); }

static const yajl_callbacks fl_callbacks = {
    fl_other, fl_bool, NULL, NULL, fl_number, fl_string,
    fl_map, fl_key, fl_close, fl_array, fl_close
};

/* The tokenizer, or NULL when the fast path steps aside (*err untouched)
 * or with *err set when the document itself is refused. */
static tokenizer *tok_load_fast(const char *text, size_t len, char **err)
{
    fast_load f = { 0 };
    sbuf_init(&f.strs);
    tokenizer *t = NULL;
    json_t *root = NULL;
    f.h = yajl_alloc(&fl_callbacks, NULL, &f);
    if (!f.h) return NULL;
    /* a surrogate escape: yajl and jansson differ there, see jsonl.c */
    for (const char *p = text; !f.bad && (p = memchr(p, '\\', len - (size_t)(p - text))); p += 2)
        if (p + 3 < text + len && p[1] == 'u' && (p[2] | 0x20) == 'd' && strchr("89abAB", p[3])) f.bad = 1;
    if (!f.bad && yajl_parse(f.h, (const unsigned char *)text, len) == yajl_status_ok &&
        yajl_complete_parse(f.h) == yajl_status_ok && f.seen[0] && f.seen[1] && !f.bad) {
        int k = f.beg[0] < f.beg[1] ? 0 : 1;         /* splice out the two values */
        size_t b0 = f.beg[k], e0 = f.end[k], b1 = f.beg[!k], e1 = f.end[!k];
        sbuf rest;
        sbuf_init(&rest);
        sbuf_add(&rest, text, b0);
        sbuf_puts(&rest, k == 0 ? "{}" : "[]");
        sbuf_add(&rest, text + e0, b1 - e0);
        sbuf_puts(&rest, k == 0 ? "[]" : "{}");
        sbuf_add(&rest, text + e1, len - e1);
        root = json_loadb_quick(rest.s, rest.len, 0, NULL);
        sbuf_free(&rest);
    }
    yajl_free(f.h);
    if (root && !check_root(root, err)) {
        tok_lists l = { .n = f.n, .nm = f.nm };
        l.tok = xcalloc(f.n + 1, sizeof *l.tok);
        l.a = xcalloc(f.nm + 1, sizeof *l.a);
        l.b = xcalloc(f.nm + 1, sizeof *l.b);
        l.id = f.id;
        for (size_t i = 0; i < f.n; i++) l.tok[i] = f.strs.s + f.tok[i];
        for (size_t i = 0; i < f.nm; i++) l.a[i] = f.strs.s + f.a[i], l.b[i] = f.strs.s + f.b[i];
        t = tok_build(root, &l, err);
        l.id = NULL;
        lists_free(&l);
    }
    json_decref(root);
    sbuf_free(&f.strs);
    free(f.tok);
    free(f.id);
    free(f.a);
    free(f.b);
    return t;
}

tokenizer *tok_from_text(const char *text, size_t len, char **err)
{
    *err = NULL;
    const char *slow = getenv("HAT_SLOW_JSON");   /* =1: the tree path alone (tests) */
    tokenizer *t = slow && *slow && strcmp(slow, "0") ? NULL : tok_load_fast(text, len, err);
    if (t || *err) return t;
    json_error_t je;
    json_t *root = json_loadb_quick(text, len, 0, &je);
    if (!root) {
        *err = tok_errf("line %d column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    t = tok_from_json(root, err);
    json_decref(root);
    return t;
}

tokenizer *tok_load(const char *path, char **err)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) { *err = tok_errf("cannot read the tokenizer"); return NULL; }
    tokenizer *t = tok_from_text(text, len, err);
    free(text);
    return t;
}

void tok_free(tokenizer *t)
{
    if (!t) return;
    tok_pipe_free(&t->pipe);
    for (int i = 0; i < t->vocab_size; i++) {
        if (t->str) free(t->str[i]);
        if (t->dec) free(t->dec[i]);
    }
    if (t->cache)
        for (size_t i = 0; i < CACHE_SLOTS; i++) free(t->cache[i].ids);
    free(t->cache);
    free(t->str);
    free(t->dec);
    free(t->dec_len);
    free(t->special);
    free(t->index.slot);
    free(t->pairs);
    pthread_mutex_destroy(&t->cache_mu);
    free(t);
}

int tok_vocab_size(const tokenizer *t) { return t->vocab_size; }

const char *tok_token_str(const tokenizer *t, int id)
{
    return id >= 0 && id < t->vocab_size ? t->str[id] : NULL;
}

int tok_is_special(const tokenizer *t, int id)
{
    return id >= 0 && id < t->vocab_size && t->special[id];
}

size_t tok_ordinary_ids(const tokenizer *t, int **ids)
{
    uint8_t *added = xcalloc((size_t)t->vocab_size + 1, 1);
    for (int i = 0; i < t->pipe.nadded; i++)
        if (t->pipe.added[i].id >= 0 && t->pipe.added[i].id < t->vocab_size) added[t->pipe.added[i].id] = 1;
    *ids = xmalloc(((size_t)t->vocab_size + 1) * sizeof **ids);
    size_t n = 0;
    for (int i = 0; i < t->vocab_size; i++)
        if (t->str[i] && !added[i]) (*ids)[n++] = i;
    free(added);
    return n;
}

void tok_ids_push(tok_ids *a, int id)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = id;
}

void tok_ids_free(tok_ids *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* --- BPE ------------------------------------------------------------------ */

typedef struct {
    uint64_t key;      /* rank << 32 | position: the heap's order */
    int      id;       /* merged id the pair had when pushed */
} heap_ent;

/* Scratch space for one encode call (not shared between threads). */
typedef struct {
    const tokenizer  *t;
    tok_ids          *out;
    int              *sym, *prev, *next;
    heap_ent         *heap;
    size_t            cap, nheap;
    sbuf              bl;       /* byte-level form, for ignore_merges */
} bpe_ctx;

static void heap_push(bpe_ctx *c, uint64_t key, int id)
{
    size_t i = c->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (c->heap[up].key <= key) break;
        c->heap[i] = c->heap[up];
        i = up;
    }
    c->heap[i] = (heap_ent){ key, id };
}

static heap_ent heap_pop(bpe_ctx *c)
{
    heap_ent top = c->heap[0], last = c->heap[--c->nheap];
    size_t i = 0, n = c->nheap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        uint64_t mk = last.key;
        if (l < n && c->heap[l].key < mk) { m = l; mk = c->heap[l].key; }
        if (r < n && c->heap[r].key < mk) m = r;
        if (m == i) break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (n) c->heap[i] = last;
    return top;
}

static void push_pair(bpe_ctx *c, int pos)
{
    int nx = c->next[pos];
    if (nx < 0) return;
    const pair_slot *p = pair_find(c->t, c->sym[pos], c->sym[nx]);
    if (p->key) heap_push(c, (uint64_t)p->rank << 32 | (uint32_t)pos, p->id);
}

/* Merge the symbols of one word, lowest rank first, leftmost on ties. */
static void bpe_word(bpe_ctx *c, const unsigned char *s, size_t n)
{
    if (n > c->cap) {
        c->cap = n + n / 2;
        c->sym = xrealloc(c->sym, c->cap * sizeof *c->sym);
        c->prev = xrealloc(c->prev, c->cap * sizeof *c->prev);
        c->next = xrealloc(c->next, c->cap * sizeof *c->next);
        c->heap = xrealloc(c->heap, c->cap * 2 * sizeof *c->heap);
    }
    for (size_t i = 0; i < n; i++) {
        c->sym[i] = c->t->byte_id[s[i]];
        c->prev[i] = (int)i - 1;
        c->next[i] = i + 1 < n ? (int)i + 1 : -1;
    }
    c->nheap = 0;
    for (size_t i = 0; i + 1 < n; i++) push_pair(c, (int)i);
    while (c->nheap) {
        heap_ent e = heap_pop(c);
        int pos = (int)(uint32_t)e.key;
        if (c->sym[pos] < 0) continue;                      /* merged away */
        int nx = c->next[pos];
        if (nx < 0) continue;
        const pair_slot *p = pair_find(c->t, c->sym[pos], c->sym[nx]);
        if (!p->key || p->id != e.id) continue;             /* pair changed */
        c->sym[pos] = e.id;
        c->sym[nx] = -1;
        c->next[pos] = c->next[nx];
        if (c->next[nx] >= 0) c->prev[c->next[nx]] = pos;
        if (c->prev[pos] >= 0) push_pair(c, c->prev[pos]);
        push_pair(c, pos);
    }
    for (int i = 0; i >= 0; i = c->next[i]) tok_ids_push(c->out, c->sym[i]);
}

/* The cache: direct-mapped on the word's hash, guarded by a mutex that is
 * only tried, never waited for. */
static int cache_get(const tokenizer *t, uint64_t h, const char *s, size_t n, tok_ids *out)
{
    tokenizer *mt = (tokenizer *)t;
    if (pthread_mutex_trylock(&mt->cache_mu)) return 0;
    cache_slot *c = &mt->cache[h & (CACHE_SLOTS - 1)];
    int hit = c->key && c->h == h && c->len == n && !memcmp(c->key, s, n);
    if (hit)
        for (uint32_t i = 0; i < c->nids; i++) tok_ids_push(out, c->ids[i]);
    pthread_mutex_unlock(&mt->cache_mu);
    return hit;
}

static void cache_put(const tokenizer *t, uint64_t h, const char *s, size_t n, const int *ids, size_t nids)
{
    tokenizer *mt = (tokenizer *)t;
    if (pthread_mutex_trylock(&mt->cache_mu)) return;
    cache_slot *c = &mt->cache[h & (CACHE_SLOTS - 1)];
    free(c->ids);
    c->ids = xmalloc(nids * sizeof(int) + n);
    memcpy(c->ids, ids, nids * sizeof(int));
    c->key = (char *)(c->ids + nids);
    memcpy(c->key, s, n);
    c->h = h;
    c->len = (uint32_t)n;
    c->nids = (uint32_t)nids;
    pthread_mutex_unlock(&mt->cache_mu);
}

static void encode_word(bpe_ctx *c, const char *s, size_t n)
{
    const tokenizer *t = c->t;
    if (n == 1) { tok_ids_push(c->out, t->byte_id[(unsigned char)s[0]]); return; }
    if (t->ignore_merges) {       /* a whole word in the vocab is taken as is */
        sbuf_reset(&c->bl);
        tok_bytes_to_bl(&c->bl, (const unsigned char *)s, n);
        int id = tok_token_id(t, c->bl.s);
        if (id >= 0) { tok_ids_push(c->out, id); return; }
    }
    uint64_t h = 0;
    if (n <= CACHE_MAXLEN) {
        h = hash_bytes(s, n);
        if (cache_get(t, h, s, n, c->out)) return;
    }
    size_t before = c->out->n;
    bpe_word(c, (const unsigned char *)s, n);
    if (n <= CACHE_MAXLEN) cache_put(t, h, s, n, c->out->v + before, c->out->n - before);
}

static void on_piece(void *ctx, const char *s, size_t n, int id)
{
    bpe_ctx *c = ctx;
    if (id >= 0) tok_ids_push(c->out, id);
    else encode_word(c, s, n);
}

int tok_encode_ranges(const tokenizer *t, const char *text, size_t len, const size_t *plain,
                      size_t nplain, tok_ids *out)
{
    if (tok_utf8_check(text, len) >= 0) return -1;
    bpe_ctx c = { .t = t, .out = out };
    sbuf_init(&c.bl);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    tok_pipe_run_ranges(&t->pipe, text, len, plain, nplain, md, on_piece, &c);
    pcre2_match_data_free(md);
    free(c.sym);
    free(c.prev);
    free(c.next);
    free(c.heap);
    sbuf_free(&c.bl);
    return 0;
}

int tok_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    return tok_encode_ranges(t, text, len, NULL, 0, out);
}

int tok_encode_plain(const tokenizer *t, const char *text, size_t len, tok_ids *out)
{
    size_t all[2] = { 0, len };
    return tok_encode_ranges(t, text, len, all, 1, out);
}

int tok_encode_segments(const tokenizer *t, const tok_segment *seg, size_t nseg,
                        tok_ids *ids, tok_ids *mask)
{
    for (size_t i = 0; i < nseg; i++)
        if (tok_utf8_check(seg[i].text, seg[i].len) >= 0) return -1;
    for (size_t i = 0; i < nseg; i++) {
        size_t before = ids->n;
        tok_encode_ranges(t, seg[i].text, seg[i].len, seg[i].plain, seg[i].nplain, ids);
        for (size_t k = before; k < ids->n; k++) tok_ids_push(mask, seg[i].mask);
    }
    return 0;
}

/* --- decoding ------------------------------------------------------------ */

/* lossy: an id no token has reads as U+FFFD instead of failing. */
static char *decode_ids(const tokenizer *t, const int *ids, size_t n, int flags, size_t *len, int lossy)
{
    sbuf raw, out;
    sbuf_init(&raw);
    for (size_t i = 0; i < n; i++) {
        int id = ids[i];
        if (id < 0 || id >= t->vocab_size || !t->str[id]) {
            if (!lossy) { sbuf_free(&raw); return NULL; }
            sbuf_add(&raw, "\xEF\xBF\xBD", 3);
            continue;
        }
        if ((flags & TOK_SKIP_SPECIAL) && t->special[id]) continue;
        sbuf_add(&raw, t->dec[id], t->dec_len[id]);
    }
    sbuf_init(&out);
    tok_utf8_lossy(&out, raw.s ? raw.s : "", raw.len);
    sbuf_free(&raw);
    if (len) *len = out.len;
    if (!out.s) sbuf_add(&out, "", 0);
    return sbuf_detach(&out);
}

char *tok_decode(const tokenizer *t, const int *ids, size_t n, int flags, size_t *len)
{
    return decode_ids(t, ids, n, flags, len, 0);
}

char *tok_decode_model(const tokenizer *t, const int *ids, size_t n, int flags, size_t *len)
{
    return decode_ids(t, ids, n, flags, len, 1);
}
