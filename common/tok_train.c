/* tok_train.c — learning a byte-level BPE from text.
 *
 * Two phases.  Counting: every text goes through the same pipeline the
 * encoder uses (added tokens split out and dropped, normalizer, Split
 * regex) and each distinct word is counted once in a hash table, so the
 * merge phase works on distinct words weighted by frequency.  Merging: the
 * classic incremental algorithm —
 *   pair -> count      (hash table of pair entries),
 *   pair -> words      (the words that contain it, appended as they appear),
 *   a max-heap of (count, pair) with lazy invalidation: an entry whose
 *      count is stale is re-pushed with the true count when it surfaces.
 * Merging the best pair rewrites only the words that hold it and adjusts
 * the counts of the pairs around each occurrence.
 *
 * Determinism: the best pair is the one with the highest count; ties go
 * to the smallest (left id, right id), ids being the order in which tokens
 * were created (the 256 byte tokens in codepoint order of their byte-level
 * character, then merges in order).  Nothing depends on hash order or
 * threads, so the same input gives the same tokenizer.json byte for byte. */
#include "tok_internal.h"
#include "progress.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- distinct words ---------------------------------------------------- */

typedef struct {
    char    *s;        /* raw bytes */
    uint32_t len;
    int64_t  count;
} word_ent;

struct tok_trainer {
    json_t           *tmpl;
    tok_pipe          pipe;
    pcre2_match_data *md;
    word_ent         *w;       /* open addressing; s == NULL is empty */
    size_t            cap, n;
};

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void words_grow(tok_trainer *tr)
{
    size_t cap = tr->cap ? tr->cap * 2 : 1 << 16;
    word_ent *w = xcalloc(cap, sizeof *w);
    for (size_t i = 0; i < tr->cap; i++) {
        if (!tr->w[i].s) continue;
        size_t j = fnv(tr->w[i].s, tr->w[i].len) & (cap - 1);
        while (w[j].s) j = (j + 1) & (cap - 1);
        w[j] = tr->w[i];
    }
    free(tr->w);
    tr->w = w;
    tr->cap = cap;
}

static void on_word(void *ctx, const char *s, size_t n, int id)
{
    tok_trainer *tr = ctx;
    if (id >= 0 || n == 0) return;     /* added tokens are not learned */
    if (tr->n * 2 >= tr->cap) words_grow(tr);
    size_t j = fnv(s, n) & (tr->cap - 1);
    for (; tr->w[j].s; j = (j + 1) & (tr->cap - 1))
        if (tr->w[j].len == n && !memcmp(tr->w[j].s, s, n)) { tr->w[j].count++; return; }
    tr->w[j] = (word_ent){ xstrndup(s, n), (uint32_t)n, 1 };
    tr->n++;
}

tok_trainer *tok_trainer_new(const json_t *tmpl, char **err)
{
    tok_trainer *tr = xcalloc(1, sizeof *tr);
    /* The template's added tokens need no ids (they follow the learned
     * vocabulary); the pipeline only needs some, to tell them apart. */
    tr->tmpl = json_deep_copy(tmpl);
    json_t *added = json_object_get(tr->tmpl, "added_tokens");
    for (size_t i = 0; i < json_array_size(added); i++)
        json_object_set_new(json_array_get(added, i), "id", json_integer((json_int_t)i));
    if (tok_pipe_init(&tr->pipe, tr->tmpl, err)) { json_decref(tr->tmpl); free(tr); return NULL; }
    tr->md = pcre2_match_data_create(1, NULL);
    words_grow(tr);
    return tr;
}

void tok_trainer_free(tok_trainer *tr)
{
    if (!tr) return;
    for (size_t i = 0; i < tr->cap; i++) free(tr->w[i].s);
    free(tr->w);
    tok_pipe_free(&tr->pipe);
    pcre2_match_data_free(tr->md);
    json_decref(tr->tmpl);
    free(tr);
}

int tok_trainer_add(tok_trainer *tr, const char *text, size_t len)
{
    if (tok_utf8_check(text, len) >= 0) return -1;
    tok_pipe_run(&tr->pipe, text, len, tr->md, on_word, tr);
    return 0;
}

size_t tok_trainer_words(const tok_trainer *tr) { return tr->n; }

/* --- the merge phase ------------------------------------------------------ */

typedef struct {
    uint64_t key;          /* a << 32 | b */
    int64_t  count;
    int     *where;        /* word indices (may repeat; stamps dedupe) */
    uint32_t nwhere, cwhere;
    uint32_t touched;      /* merge number that last raised the count */
} pair_ent;

typedef struct { int64_t count; uint64_t key; } heap_ent;

typedef struct {
    int     *sym;
    uint32_t n;
    uint32_t stamp;
    int64_t  count;
} tword;

typedef struct {
    tword    *w;
    size_t    nw;
    pair_ent *p;           /* entries, never removed */
    size_t    np, capp;
    uint32_t *slot;        /* hash: entry index + 1 */
    size_t    mask;
    heap_ent *heap;
    size_t    nheap, capheap;
    uint32_t *touched;     /* entries raised during the current merge */
    size_t    ntouched, captouched;
    uint32_t  merge_no;
} merger;

static uint64_t pkey(int a, int b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

static void slots_rebuild(merger *m, size_t cap)
{
    free(m->slot);
    m->slot = xcalloc(cap, sizeof *m->slot);
    m->mask = cap - 1;
    for (size_t e = 0; e < m->np; e++) {
        size_t i = (size_t)(m->p[e].key * 0x9E3779B97F4A7C15ull >> 20) & m->mask;
        while (m->slot[i]) i = (i + 1) & m->mask;
        m->slot[i] = (uint32_t)e + 1;
    }
}

static pair_ent *pair_get(merger *m, uint64_t key)
{
    size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & m->mask;
    for (uint32_t e; (e = m->slot[i]); i = (i + 1) & m->mask)
        if (m->p[e - 1].key == key) return &m->p[e - 1];
    if (m->np == m->capp) {
        m->capp = m->capp ? m->capp * 2 : 1 << 16;
        m->p = xrealloc(m->p, m->capp * sizeof *m->p);
    }
    m->p[m->np] = (pair_ent){ .key = key };
    m->slot[i] = (uint32_t)++m->np;
    if (m->np * 2 > m->mask + 1) {
        slots_rebuild(m, (m->mask + 1) * 2);
    }
    /* the slot table may have moved; the entry has not */
    return &m->p[m->np - 1];
}

static int heap_less(const heap_ent *x, const heap_ent *y)   /* x below y */
{
    if (x->count != y->count) return x->count < y->count;
    return x->key > y->key;
}

static void heap_push(merger *m, int64_t count, uint64_t key)
{
    if (m->nheap == m->capheap) {
        m->capheap = m->capheap ? m->capheap * 2 : 1 << 16;
        m->heap = xrealloc(m->heap, m->capheap * sizeof *m->heap);
    }
    heap_ent e = { count, key };
    size_t i = m->nheap++;
    while (i > 0 && heap_less(&m->heap[(i - 1) / 2], &e)) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = e;
}

static heap_ent heap_pop(merger *m)
{
    heap_ent top = m->heap[0], last = m->heap[--m->nheap];
    size_t i = 0, n = m->nheap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, b = i;
        const heap_ent *bv = &last;
        if (l < n && heap_less(bv, &m->heap[l])) { b = l; bv = &m->heap[l]; }
        if (r < n && heap_less(bv, &m->heap[r])) b = r;
        if (b == i) break;
        m->heap[i] = m->heap[b];
        i = b;
    }
    if (n) m->heap[i] = last;
    return top;
}

/* Add delta occurrences of pair (a, b), in word wi. */
static void pair_add(merger *m, int a, int b, int64_t delta, uint32_t wi)
{
    pair_ent *p = pair_get(m, pkey(a, b));
    p->count += delta;
    if (delta <= 0) return;
    if (!p->nwhere || p->where[p->nwhere - 1] != (int)wi) {
        if (p->nwhere == p->cwhere) {
            p->cwhere = p->cwhere ? p->cwhere * 2 : 4;
            p->where = xrealloc(p->where, p->cwhere * sizeof *p->where);
        }
        p->where[p->nwhere++] = (int)wi;
    }
    if (p->touched != m->merge_no) {
        p->touched = m->merge_no;
        if (m->ntouched == m->captouched) {
            m->captouched = m->captouched ? m->captouched * 2 : 1024;
            m->touched = xrealloc(m->touched, m->captouched * sizeof *m->touched);
        }
        m->touched[m->ntouched++] = (uint32_t)(p - m->p);
    }
}

/* Replace every (a, b) in word wi by c, left to right, adjusting the
 * counts of the neighbouring pairs (Hugging Face's Word::merge). */
static void word_merge(merger *m, uint32_t wi, int a, int b, int c)
{
    tword *w = &m->w[wi];
    int *s = w->sym;
    uint32_t n = w->n, o = 0;
    for (uint32_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (o > 0) {
                pair_add(m, s[o - 1], a, -w->count, wi);
                pair_add(m, s[o - 1], c, w->count, wi);
            }
            if (i + 2 < n) {
                pair_add(m, b, s[i + 2], -w->count, wi);
                pair_add(m, c, s[i + 2], w->count, wi);
            }
            s[o++] = c;
            i += 2;
        } else {
            s[o++] = s[i++];
        }
    }
    w->n = o;
}

/* Tokens as raw byte strings, with a lookup so that a merge producing an
 * existing string reuses its id (as HF's trainer does). */
typedef struct {
    char    **s;
    uint32_t *len;
    size_t    n, cap;
    uint32_t *slot;
    size_t    mask;
} tokset;

static int tokset_find(tokset *t, const char *s, size_t n, size_t *at)
{
    size_t i = fnv(s, n) & t->mask;
    for (uint32_t e; (e = t->slot[i]); i = (i + 1) & t->mask)
        if (t->len[e - 1] == n && !memcmp(t->s[e - 1], s, n)) return (int)e - 1;
    *at = i;
    return -1;
}

static int tokset_add(tokset *t, const char *s, size_t n)
{
    size_t at = 0;
    int id = tokset_find(t, s, n, &at);
    if (id >= 0) return id;
    if (t->n == t->cap) {
        t->cap *= 2;
        t->s = xrealloc(t->s, t->cap * sizeof *t->s);
        t->len = xrealloc(t->len, t->cap * sizeof *t->len);
    }
    t->s[t->n] = xstrndup(s, n);
    t->len[t->n] = (uint32_t)n;
    t->slot[at] = (uint32_t)++t->n;
    return (int)t->n - 1;
}

static void merger_init(merger *m, tok_trainer *tr, const int *byte_id)
{
    memset(m, 0, sizeof *m);
    m->w = xcalloc(tr->n ? tr->n : 1, sizeof *m->w);
    size_t cap = 16;
    while (cap < tr->n * 4 + 1024) cap <<= 1;
    slots_rebuild(m, cap);
    m->merge_no = 1;
    for (size_t i = 0; i < tr->cap; i++) {
        const word_ent *e = &tr->w[i];
        if (!e->s) continue;
        tword *w = &m->w[m->nw];
        w->sym = xmalloc(e->len * sizeof *w->sym);
        w->n = e->len;
        w->count = e->count;
        for (uint32_t k = 0; k < e->len; k++) w->sym[k] = byte_id[(unsigned char)e->s[k]];
        for (uint32_t k = 0; k + 1 < e->len; k++) pair_add(m, w->sym[k], w->sym[k + 1], w->count, (uint32_t)m->nw);
        m->nw++;
    }
    for (size_t k = 0; k < m->ntouched; k++) heap_push(m, m->p[m->touched[k]].count, m->p[m->touched[k]].key);
    m->ntouched = 0;
}

static void merger_free(merger *m)
{
    for (size_t i = 0; i < m->nw; i++) free(m->w[i].sym);
    for (size_t i = 0; i < m->np; i++) free(m->p[i].where);
    free(m->w);
    free(m->p);
    free(m->slot);
    free(m->heap);
    free(m->touched);
}

/* The next pair to merge, or 0 when none is frequent enough. */
static int best_pair(merger *m, long min_freq, uint64_t *key, int64_t *count)
{
    while (m->nheap) {
        heap_ent e = heap_pop(m);
        pair_ent *p = pair_get(m, e.key);
        if (p->count != e.count) {          /* stale: requeue with the truth */
            if (p->count > 0) heap_push(m, p->count, e.key);
            continue;
        }
        if (e.count < min_freq || e.count <= 0) return 0;
        *key = e.key;
        *count = e.count;
        return 1;
    }
    return 0;
}

static void apply_merge(merger *m, uint64_t key, int c)
{
    int a = (int)(key >> 32), b = (int)(uint32_t)key;
    m->merge_no++;
    pair_ent *p = pair_get(m, key);
    int *where = p->where;
    uint32_t nwhere = p->nwhere;
    p->where = NULL;
    p->nwhere = p->cwhere = 0;
    for (uint32_t k = 0; k < nwhere; k++) {
        tword *w = &m->w[where[k]];
        if (w->stamp == m->merge_no) continue;
        w->stamp = m->merge_no;
        word_merge(m, (uint32_t)where[k], a, b, c);
    }
    free(where);
    pair_get(m, key)->count = 0;       /* every occurrence is gone */
    for (size_t k = 0; k < m->ntouched; k++) {
        pair_ent *q = &m->p[m->touched[k]];
        if (q->count > 0) heap_push(m, q->count, q->key);
    }
    m->ntouched = 0;
}

/* --- output --------------------------------------------------------------- */

static json_t *bl_string(const char *s, size_t n)
{
    sbuf b;
    sbuf_init(&b);
    tok_bytes_to_bl(&b, (const unsigned char *)s, n);
    json_t *v = json_stringn(b.s ? b.s : "", b.len);
    sbuf_free(&b);
    return v;
}

static json_t *build_json(tok_trainer *tr, const tokset *ts, const int *merges, size_t nmerges)
{
    json_t *root = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(tr->tmpl, k, v) {
        if (!strcmp(k, "model")) continue;
        if (!strcmp(k, "added_tokens")) {          /* ids follow the vocab */
            json_t *a = json_array();
            for (size_t i = 0; i < json_array_size(v); i++) {
                json_t *t = json_object(), *src = json_array_get(v, i);
                json_object_set_new(t, "id", json_integer((json_int_t)(ts->n + i)));
                const char *kk;
                json_t *vv;
                json_object_foreach(src, kk, vv)
                    if (strcmp(kk, "id")) json_object_set(t, kk, vv);
                json_array_append_new(a, t);
            }
            json_object_set_new(root, k, a);
            continue;
        }
        json_object_set(root, k, v);
    }
    json_t *vocab = json_object(), *mj = json_array();
    for (size_t i = 0; i < ts->n; i++) {
        json_t *s = bl_string(ts->s[i], ts->len[i]);
        json_object_set_new(vocab, json_string_value(s), json_integer((json_int_t)i));
        json_decref(s);
    }
    for (size_t i = 0; i < nmerges; i++)
        json_array_append_new(mj, json_pack("[oo]", bl_string(ts->s[merges[2 * i]], ts->len[merges[2 * i]]),
                                            bl_string(ts->s[merges[2 * i + 1]], ts->len[merges[2 * i + 1]])));
    json_t *model = json_pack("{s:s, s:n, s:n, s:s, s:s, s:b, s:b, s:b, s:o, s:o}",
                              "type", "BPE", "dropout", "unk_token",
                              "continuing_subword_prefix", "", "end_of_word_suffix", "",
                              "fuse_unk", 0, "byte_fallback", 0, "ignore_merges", 0,
                              "vocab", vocab, "merges", mj);
    json_object_set_new(root, "model", model);
    return root;
}

json_t *tok_trainer_finish(tok_trainer *tr, const tok_train_opts *o, char **err)
{
    int nadded = (int)json_array_size(json_object_get(tr->tmpl, "added_tokens"));
    int target = o->vocab_size - nadded;
    if (target < 256) {
        *err = tok_errf("vocabulary size %d is too small: 256 byte tokens and %d added tokens need %d",
                        o->vocab_size, nadded, 256 + nadded);
        return NULL;
    }
    /* The 256 byte tokens, in codepoint order of their characters. */
    tokset ts = { .cap = 1024 };
    ts.s = xmalloc(ts.cap * sizeof *ts.s);
    ts.len = xmalloc(ts.cap * sizeof *ts.len);
    size_t scap = 1;
    while (scap < (size_t)target * 2 + 512) scap <<= 1;
    ts.slot = xcalloc(scap, sizeof *ts.slot);
    ts.mask = scap - 1;
    int byte_id[256];
    for (int cp = 0; cp < 324; cp++) {
        int b = tok_cp_byte(cp);
        if (b >= 0) byte_id[b] = tokset_add(&ts, (const char *)&(unsigned char){(unsigned char)b}, 1);
    }
    merger m;
    merger_init(&m, tr, byte_id);
    size_t nm = 0, capm = 1024;
    int *merges = xmalloc(sizeof(int) * 2 * capm);
    progress *pg = o->progress ? progress_start(NULL, "merges", target > (int)ts.n ? target - (long)ts.n : 0) : NULL;
    uint64_t key;
    int64_t count;
    long minf = o->min_frequency > 0 ? o->min_frequency : 1;
    while ((int)ts.n < target && best_pair(&m, minf, &key, &count)) {
        int a = (int)(key >> 32), b = (int)(uint32_t)key;
        sbuf cat;
        sbuf_init(&cat);
        sbuf_add(&cat, ts.s[a], ts.len[a]);
        sbuf_add(&cat, ts.s[b], ts.len[b]);
        int c = tokset_add(&ts, cat.s, cat.len);
        sbuf_free(&cat);
        if (nm == capm) merges = xrealloc(merges, sizeof(int) * 2 * (capm *= 2));
        merges[2 * nm] = a;
        merges[2 * nm + 1] = b;
        nm++;
        apply_merge(&m, key, c);
        if (progress_due(pg))
            progress_status(pg, "vocab %zu/%d, pair count %lld", ts.n, target, (long long)count);
        progress_update(pg, (long)nm, 0);
    }
    progress_end(pg);
    json_t *out = build_json(tr, &ts, merges, nm);
    merger_free(&m);
    free(merges);
    for (size_t i = 0; i < ts.n; i++) free(ts.s[i]);
    free(ts.s);
    free(ts.len);
    free(ts.slot);
    return out;
}
