/* hsa.c — harness-state augmentation: options, the order of the five
 * dimensions, and one record in → one variant out.
 *
 * A variant is drawn from its own random stream, rng_derive(seed, i*K+k),
 * so the output for input i and variant k never depends on batching or on
 * the other records.  With a trajectory the harness is rewritten knowing
 * what the trajectory needs (hsa_needs), then the messages are relabelled
 * to the new surface forms; anything that cannot be kept correct is
 * flagged meta.hsa_valid=false with a reason rather than emitted silently. */
#include "hsa.h"
#include "harness.h"
#include "jsonl.h"
#include "traj_write.h"
#include "util.h"

#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const hsa_dim_names[HSA_NDIMS] = {
    "skill-id", "skill-content", "tools", "prompt", "hooks"
};

void hsa_opts_default(hsa_opts *o)
{
    for (int d = 0; d < HSA_NDIMS; d++) o->p[d] = 0.5;
    o->mix = 0;
}

int hsa_opts_dims(hsa_opts *o, const char *list, double p, const char **bad)
{
    static char badbuf[64];
    double np[HSA_NDIMS] = { 0 };
    char *copy = xstrdup(list), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int d = 0;
        if (!strcmp(t, "all")) {
            for (d = 0; d < HSA_NDIMS; d++) np[d] = p;
            continue;
        }
        while (d < HSA_NDIMS && strcmp(t, hsa_dim_names[d])) d++;
        if (d == HSA_NDIMS) {
            snprintf(badbuf, sizeof badbuf, "%s", t);
            *bad = badbuf;
            free(copy);
            return -1;
        }
        np[d] = p;
    }
    free(copy);
    memcpy(o->p, np, sizeof np);
    return 0;
}

void hsa_op(hsa_ctx *c, int dim, const char *op, ...)
{
    /* Keys, dimension and operation names are ASCII literals: no UTF-8
     * check (a variant records ~130 operations at p=1). */
    json_t *o = json_object();
    json_object_set_new_nocheck(o, "dim", json_string_nocheck(hsa_dim_names[dim]));
    json_object_set_new_nocheck(o, "op", json_string_nocheck(op));
    va_list ap;
    va_start(ap, op);
    const char *k;
    while ((k = va_arg(ap, const char *))) {
        json_t *val = va_arg(ap, json_t *);
        json_object_set_new_nocheck(o, k, val ? val : json_null());
    }
    va_end(ap);
    json_array_append_new(c->ops, o);
}

json_t *hsa_taken_names(const json_t *h)
{
    json_t *t = json_object();
    const char *lists[] = { "skills", "tools" };
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(h, lists[l]), i, e) {
            const char *n = json_string_value(json_object_get(e, "name"));
            if (n) json_object_set_new(t, n, json_true());
        }
    }
    const char *ln = harness_loader_name(h);
    if (ln) json_object_set_new(t, ln, json_true());
    return t;
}

/* The augmentation itself; acache (text → rewriter analysis) and stats
 * come from the caller's hsa_cache, or are NULL. */
static json_t *augment(const hsa_vocab *v, const hsa_opts *o, rng_t *r, const json_t *h,
                       const hsa_needs *need, json_t *ops, json_t **skill_map,
                       const char **invalid, json_t *acache, hsa_stats *stats)
{
    hsa_ctx c = {
        .v = v, .o = o, .r = r, .h = json_copy_containers(h), .ops = ops, .need = need,
        .skill_map = json_object(),
        .acache = acache ? json_incref(acache) : json_object(),
        .stats = stats,
    };
    /* The input harness's names, remembered with its texts. */
    c.names = json_object_get(c.acache, "\x06names");
    if (c.names) json_incref(c.names);
    else json_object_set(c.acache, "\x06names", c.names = hsa_harness_names(h));
    /* Fixed order: skill surface first (masking looks at the old names),
     * then content, tools, prompt and hooks. */
    if (o->p[HSA_SKILL_ID] > 0) hsa_skill_ids(&c);
    if (o->p[HSA_SKILL_CONTENT] > 0) hsa_skill_content(&c);
    if (o->p[HSA_TOOLS] > 0) hsa_tools(&c);
    if (o->p[HSA_PROMPT] > 0) hsa_prompt(&c);
    if (o->p[HSA_HOOKS] > 0) hsa_hooks(&c);
    hsa_keep_names(&c);   /* texts were rewritten around the old names */
    json_decref(c.names);
    json_decref(c.acache);
    if (skill_map) *skill_map = c.skill_map;
    else json_decref(c.skill_map);
    if (invalid) *invalid = c.invalid;
    return c.h;
}

json_t *hsa_augment_harness(const hsa_vocab *v, const hsa_opts *o, rng_t *r,
                            const json_t *h, const hsa_needs *need,
                            json_t *ops, json_t **skill_map, const char **invalid)
{
    return augment(v, o, r, h, need, ops, skill_map, invalid, NULL, NULL);
}

/* ---- records -------------------------------------------------------------- */

/* The last inline harness seen: consecutive records of one traj file
 * usually carry the same harness, so its lookups — and the rewriter's
 * analysis of each of its texts — are done once.  It also sums what the
 * variants drawn through it did. */
struct hsa_cache {
    json_t          *h;
    const hsa_vocab *v;
    json_t          *acache;
    hsa_stats        stats;
};

hsa_cache *hsa_cache_new(void) { return xcalloc(1, sizeof(hsa_cache)); }

void hsa_cache_free(hsa_cache *c)
{
    if (!c) return;
    json_decref(c->h);
    json_decref(c->acache);
    hsa_stats_free(&c->stats);
    free(c);
}

const hsa_stats *hsa_cache_stats(const hsa_cache *c) { return &c->stats; }

static json_t *make_meta(const json_t *old, json_t *ops, const hsa_vocab *v,
                         uint64_t seed, uint64_t stream, const char *invalid)
{
    json_t *m = json_is_object(old) ? json_copy((json_t *)old) : json_object();
    json_t *prev = json_object_get(m, "hsa");
    json_t *all = json_is_array(prev) ? json_copy(prev) : json_array();
    json_array_extend(all, ops);
    json_object_set_new(m, "hsa", all);
    json_object_set_new(m, "hsa_seed", json_integer((json_int_t)seed));
    json_object_set_new(m, "hsa_stream", json_integer((json_int_t)stream));
    json_object_set_new(m, "hsa_vocab", json_str(hsa_vocab_name(v)));
    json_object_set_new(m, "hsa_valid", json_boolean(!invalid));
    if (invalid) json_object_set_new(m, "hsa_reason", json_str(invalid));
    else json_object_del(m, "hsa_reason");
    return m;
}

static json_t *variant_id(const json_t *id, const json_t *h, int k)
{
    const char *s = json_string_value(id);
    if (!s) s = json_string_value(json_object_get(h, "name"));
    return json_sprintf("%s-hsa%d", s ? s : "harness", k);
}

json_t *hsa_augment_record(hsa_cache *cache, const hsa_vocab *v, const hsa_opts *o,
                           const json_t *rec, const json_t *deflt,
                           uint64_t seed, uint64_t stream, int k, const char **err)
{
    *err = NULL;
    const json_t *oldh = rec ? json_object_get(rec, "harness") : NULL;
    if (rec && !json_is_object(rec)) { *err = "record is not a JSON object"; return NULL; }
    if (oldh && !json_is_object(oldh)) { *err = "\"harness\" is not an object"; return NULL; }
    if (!oldh) oldh = deflt;
    if (!oldh) { *err = "record has no inline harness and no --harness was given"; return NULL; }
    const json_t *msgs = rec ? json_object_get(rec, "messages") : NULL;
    if (rec && !json_is_array(msgs)) { *err = "record has no \"messages\" array"; return NULL; }
    if (cache) {   /* one canonical copy of a repeated harness */
        if (!cache->h || cache->v != v ||
            (cache->h != oldh && !json_equal(cache->h, (json_t *)oldh))) {
            json_decref(cache->h);
            json_decref(cache->acache);
            cache->h = json_incref((json_t *)oldh);
            cache->acache = json_object();
            cache->v = v;
        }
        oldh = cache->h;
    }

    rng_t r;
    rng_derive(&r, seed, stream);
    int keep = o->mix > 0 && rng_chance(&r, o->mix);
    hsa_needs need, *np = NULL;
    const char *invalid = NULL;
    if (rec) {
        if (hsa_needs_scan(&need, rec, oldh, err) < 0) return NULL;
        np = &need;
        if (need.final_over) invalid = "the final reply already breaks the harness's limits";
    }
    json_t *ops = json_array(), *map = NULL, *newh;
    if (keep) newh = json_copy_containers(oldh);
    else {
        const char *inv2 = NULL;
        newh = augment(v, o, &r, oldh, np, ops, &map, &inv2, cache ? cache->acache : NULL,
                       cache ? &cache->stats : NULL);
        if (!invalid) invalid = inv2;
    }
    if (cache && !keep) hsa_stats_count_ops(&cache->stats, ops);   /* --mix originals are no variants */
    json_t *newmsgs = NULL;
    if (rec) {
        newmsgs = json_copy_containers(msgs);   /* relabelled in place: containers only */
        const char *why = NULL;
        if (!keep && hsa_relabel(newmsgs, oldh, newh, map, &why) < 0 && !invalid) invalid = why;
        hsa_needs_free(&need);
    }
    json_decref(map);

    json_t *out = json_object();
    if (rec) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)rec, key, val) {
            if (!strcmp(key, "id")) json_object_set_new(out, key, variant_id(val, oldh, k));
            else if (!strcmp(key, "harness")) json_object_set(out, key, newh);
            else if (!strcmp(key, "messages")) json_object_set(out, key, newmsgs);
            else if (!strcmp(key, "meta")) continue;
            else json_object_set(out, key, val);
        }
        if (!json_object_get(out, "harness")) json_object_set(out, "harness", newh);
        json_object_set_new(out, "meta", make_meta(json_object_get(rec, "meta"), ops, v,
                                                   seed, stream, invalid));
    } else {
        json_object_set_new(out, "id", variant_id(NULL, oldh, k));
        json_object_set(out, "harness", newh);
        json_object_set_new(out, "meta", make_meta(NULL, ops, v, seed, stream, invalid));
    }
    json_decref(newh);
    json_decref(newmsgs);
    json_decref(ops);
    return out;
}

static int word_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
}

char *hsa_replace_word(const char *s, const char *from, const char *to)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "");
    size_t fl = strlen(from);
    const char *p = s;
    while (fl) {
        const char *q = strstr(p, from);
        if (!q) break;
        int left = q == s || !word_char(q[-1]), right = !word_char(q[fl]);
        sbuf_add(&b, p, (size_t)(q - p));
        if (left && right) sbuf_puts(&b, to);
        else sbuf_add(&b, q, fl);
        p = q + fl;
    }
    sbuf_puts(&b, p);
    return sbuf_detach(&b);
}

/* Records are independent (each variant has its own stream), so a batch is
 * augmented in parallel and written in input order: the bytes do not
 * depend on the thread count.  Each thread keeps its own harness cache,
 * from one batch to the next: the rewriter's analysis of a harness's
 * texts is made once per thread, not once per batch. */
struct hsa_batch {
    hsa_cache   **caches;
    traj_writer **writers;   /* per thread: a variant's line without jansson's slow dump */
    int           n;
    hsa_stats     sum;
};

hsa_batch *hsa_batch_new(void)
{
    hsa_batch *b = xcalloc(1, sizeof *b);
    b->n = omp_get_max_threads();
    b->caches = xcalloc((size_t)b->n, sizeof *b->caches);
    b->writers = xcalloc((size_t)b->n, sizeof *b->writers);
    return b;
}

void hsa_batch_free(hsa_batch *b)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) {
        hsa_cache_free(b->caches[i]);
        traj_writer_free(b->writers[i]);
    }
    free(b->caches);
    free(b->writers);
    hsa_stats_free(&b->sum);
    free(b);
}

const hsa_stats *hsa_batch_stats(hsa_batch *b)
{
    hsa_stats_free(&b->sum);
    memset(&b->sum, 0, sizeof b->sum);
    for (int i = 0; i < b->n; i++)
        if (b->caches[i]) hsa_stats_add(&b->sum, &b->caches[i]->stats);
    return &b->sum;
}

void hsa_augment_batch(hsa_batch *bt, const hsa_vocab *v, const hsa_opts *o,
                       json_t *const *recs, size_t n, const json_t *deflt, uint64_t seed,
                       uint64_t first, int K, char **lines, const char **errs)
{
    (void)harness_functions();   /* loaded once, before the threads */
    #pragma omp parallel
    {
        int t = omp_get_thread_num();
        hsa_cache *cache;
        traj_writer *w;
        if (t < bt->n) {
            if (!bt->caches[t]) bt->caches[t] = hsa_cache_new();
            if (!bt->writers[t]) bt->writers[t] = traj_writer_new();
            cache = bt->caches[t];
            w = bt->writers[t];
        } else {
            cache = NULL;   /* more threads than at hsa_batch_new: no cache */
            w = NULL;
        }
        sbuf line;
        sbuf_init(&line);
        #pragma omp for schedule(dynamic, 4)
        for (size_t j = 0; j < n; j++) {
            errs[j] = NULL;
            for (int k = 0; k < K; k++) {
                const char *err = NULL;
                json_t *r = hsa_augment_record(cache, v, o, recs ? recs[j] : NULL, deflt, seed,
                                               (first + j) * (uint64_t)K + (uint64_t)k, k, &err);
                char *text = NULL;
                if (r && w) {   /* the bytes json_dumps would make, faster */
                    sbuf_reset(&line);   /* kept at its size from line to line */
                    traj_writer_json(w, &line, r);
                    text = xstrndup(line.s, line.len);
                } else if (r) {
                    text = json_dumps(r, HAT_JSON_FLAGS);
                }
                lines[j * (size_t)K + k] = text;
                json_decref(r);
                if (err) errs[j] = err;
            }
        }
        sbuf_free(&line);
    }
}

/* ---- fast input ------------------------------------------------------------ */

/* Lines of a traj file (plain, .gz or stdin through zlib), with numbers.
 * hsa-augment reads raw lines so that a repeated inline harness — almost
 * every line of a traj file carries the same one — is parsed once
 * (hsa_parse_record) rather than once per line. */
#include "harness_memo.h"

#include "progress.h"
#include <zlib.h>
#include <errno.h>
#include <unistd.h>

struct hsa_reader {
    gzFile gz;
    char  *name, *buf;
    size_t cap, beg, end;   /* buf[beg, end): read, not yet returned */
    int    eof;
    long   line;
    sbuf   join;            /* a line that held a NUL byte (see hsa_reader_line) */
    harness_memo *memo;     /* the last inline harness, parsed once */
    progress *prog;         /* lines and bytes on a terminal */
    uint64_t bytes;
};

hsa_reader *hsa_reader_open(const char *path)
{
    int stdio = is_stdio_path(path);
    gzFile gz = stdio ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
    if (!gz) {
        hat_errat(stdio ? "<stdin>" : path, 0, "cannot open: %s", strerror(errno ? errno : ENOENT));
        return NULL;
    }
    gzbuffer(gz, 1 << 18);
    hsa_reader *r = xcalloc(1, sizeof *r);
    r->gz = gz;
    r->name = xstrdup(stdio ? "<stdin>" : path);
    /* reads of at least twice gzbuffer's size go straight into buf, not
     * through zlib's buffer, when the input is not compressed */
    r->cap = 1 << 20;
    r->buf = xmalloc(r->cap);
    sbuf_init(&r->join);
    r->memo = harness_memo_new();
    if ((r->prog = progress_start(r->name, "lines", 0)) && gzdirect(gz))
        progress_bytes_total(r->prog, progress_input_size(path));
    return r;
}

const char *hsa_reader_name(const hsa_reader *r) { return r->name; }

/* More bytes into r->buf after those not yet returned (moved to its
 * start; the buffer doubles when they fill it).  1 read, 0 end of file
 * (a truncated compressed file ends there too, as gzgets ended it), -1
 * error. */
static int reader_fill(hsa_reader *r)
{
    if (r->eof) return 0;
    if (r->beg) {
        memmove(r->buf, r->buf + r->beg, r->end - r->beg);
        r->end -= r->beg;
        r->beg = 0;
    }
    if (r->cap - r->end < 2) {                /* room for a NUL after a last line */
        r->cap *= 2;
        r->buf = xrealloc(r->buf, r->cap);
    }
    int got = gzread(r->gz, r->buf + r->end, (unsigned)(r->cap - r->end - 1));
    if (got < 0) {
        int errnum;
        const char *msg = gzerror(r->gz, &errnum);
        if (errnum != Z_OK && errnum != Z_BUF_ERROR) {
            hat_errat(r->name, r->line + 1, "read error: %s", msg);
            return -1;
        }
        got = 0;
    }
    if (got == 0) { r->eof = 1; return 0; }
    r->end += (size_t)got;
    r->buf[r->end] = 0;                       /* stops reader_segment's strchrnul */
    return 1;
}

/* The next physical line, through its newline where it has one:
 * [*a, *b) of r->buf; 0 at the end of the file, -1 error.  Big blocks
 * split here cost a fraction of gzgets, which copies each line and was
 * a twentieth of judge's run.  A line of JSONL_MAX_LINE - 1 bytes or
 * more is refused, as the gzgets loop refused it. */
static int reader_segment(hsa_reader *r, size_t *a, size_t *b, int *nul)
{
    size_t from = r->beg;
    *nul = 0;
    for (;;) {
        /* one pass for the newline and a NUL byte before it (the buffer
         * ends in a NUL); only a line that holds one is searched again */
        const char *nl = r->end > from ? strchrnul(r->buf + from, '\n') : NULL;
        if (nl && nl < r->buf + r->end && !*nl) {
            *nul = 1;
            nl = memchr(nl, '\n', (size_t)(r->buf + r->end - nl));
        } else if (nl == r->buf + r->end) nl = NULL;
        if (nl) {
            *a = r->beg;
            *b = (size_t)(nl - r->buf) + 1;
            if (*b - *a > JSONL_MAX_LINE - 1) break;
            r->beg = *b;
            return 1;
        }
        if (r->end - r->beg >= JSONL_MAX_LINE - 1) break;
        from = r->end - r->beg;               /* the unreturned bytes move to the start */
        int k = reader_fill(r);
        if (k < 0) return -1;
        if (k == 0) {
            if (r->end == r->beg) return 0;
            *a = r->beg;
            *b = r->end;
            r->beg = r->end;
            return 1;
        }
    }
    hat_errat(r->name, r->line + 1, "line longer than %u bytes", JSONL_MAX_LINE);
    return -1;
}

int hsa_reader_line(hsa_reader *r, const char **line, size_t *len, long *lineno)
{
    for (;;) {
        size_t a, b;
        int nul;
        int k = reader_segment(r, &a, &b, &nul);
        if (k <= 0) return k;
        char *s = r->buf + a;
        size_t n = b - a;
        /* A NUL byte ended the line for the gzgets loop this replaces,
         * which then dropped the rest of it and went on with the next
         * line as its continuation: kept so, since bad lines are
         * reported with their column. */
        const char *z = nul ? memchr(s, 0, n) : NULL;
        if (z) {
            sbuf_reset(&r->join);
            for (;;) {
                sbuf_add(&r->join, s, (size_t)(z - s));
                if ((k = reader_segment(r, &a, &b, &nul)) < 0) return -1;
                if (k == 0) break;
                s = r->buf + a;
                n = b - a;
                if (!(z = memchr(s, 0, n))) { sbuf_add(&r->join, s, n); break; }
            }
            sbuf_putc(&r->join, 0);
            s = r->join.s;
            n = r->join.len - 1;
            if (!n) return 0;                 /* as the gzgets loop ended */
        }
        r->line++;
        r->bytes += n;
        progress_update(r->prog, r->line, r->bytes);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
            n--;
        size_t st = 0;
        while (st < n && (s[st] == ' ' || s[st] == '\t')) st++;
        if (st == n) continue;   /* blank line */
        s[n] = 0;                /* a newline or stripped white space, or the byte kept free after a last line */
        *line = s + st;
        *len = n - st;
        *lineno = r->line;
        return 1;
    }
}

void hsa_reader_close(hsa_reader *r)
{
    if (!r) return;
    progress_end(r->prog);
    gzclose(r->gz);
    harness_memo_free(r->memo);
    sbuf_free(&r->join);
    free(r->buf);
    free(r->name);
    free(r);
}

json_t *hsa_parse_record(hsa_reader *r, const char *line, size_t len)
{
    json_error_t e;
    if (json_too_deep(line, len, JSONL_MAX_DEPTH)) {
        hat_errat(r->name, r->line, "JSON nested deeper than %d levels", JSONL_MAX_DEPTH);
        return NULL;
    }
    json_t *rec = harness_memo_parse(r->memo, line, len, 0, &e);
    if (!rec) hat_errat(r->name, r->line, "invalid JSON at column %d: %s", e.column, e.text);
    return rec;
}
