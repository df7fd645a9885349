/* jsonl.c — JSON Lines reader/writer on jansson and zlib, atomic outputs. */
#include "jsonl.h"
#include "harness_memo.h"
#include "progress.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

/* ---------------------------------------------------------------- input */

struct jsonl_reader {
    gzFile gz;
    char  *name;
    char  *buf;
    size_t cap;
    long   line, skipped;
    size_t last;          /* length of the last value's line in buf */
    int    skip_bad;
    harness_memo *memo;   /* borrowed, may be NULL */
    progress *prog;       /* lines and bytes on a terminal (progress.h) */
    uint64_t  bytes;      /* bytes read (uncompressed) */
};

jsonl_reader *jsonl_open(const char *path, int skip_bad)
{
    const char *name = is_stdio_path(path) ? "<stdin>" : path;
    /* gzread passes plain data through, so stdin may be compressed too. */
    gzFile gz = is_stdio_path(path) ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
    if (!gz) {
        hat_errat(name, 0, "cannot open: %s", strerror(errno ? errno : ENOENT));
        return NULL;
    }
    gzbuffer(gz, 1 << 18);
    jsonl_reader *r = xcalloc(1, sizeof *r);
    r->gz = gz;
    r->name = xstrdup(name);
    r->cap = 1 << 16;
    r->buf = xmalloc(r->cap);
    r->skip_bad = skip_bad;
    /* The size is the file's: a percentage only when it is read as is. */
    if ((r->prog = progress_start(name, "lines", 0)) && gzdirect(gz))
        progress_bytes_total(r->prog, progress_input_size(path));
    return r;
}

/* Read one line (without its newline) into r->buf.  1 = line, 0 = EOF. */
static int read_line(jsonl_reader *r, size_t *len)
{
    size_t n = 0;
    for (;;) {
        if (!gzgets(r->gz, r->buf + n, (int)(r->cap - n))) {
            int err;
            const char *msg = gzerror(r->gz, &err);
            if (err && err != Z_BUF_ERROR) {
                hat_errat(r->name, r->line + 1, "read error: %s",
                          err == Z_ERRNO ? strerror(errno) : msg);
                return -1;
            }
            if (err == Z_BUF_ERROR) {
                hat_errat(r->name, r->line + 1, "truncated compressed input");
                return -1;
            }
            if (n == 0) return 0;
            break;                       /* last line without newline */
        }
        n += strlen(r->buf + n);
        if (n > 0 && r->buf[n - 1] == '\n') { n--; break; }
        if (n + 1 < r->cap) {            /* short read without newline = EOF */
            if (gzeof(r->gz)) break;
            continue;
        }
        if (r->cap >= JSONL_MAX_LINE) {
            hat_errat(r->name, r->line + 1, "line longer than %u bytes", JSONL_MAX_LINE);
            return -1;
        }
        r->cap *= 2;
        r->buf = xrealloc(r->buf, r->cap);
    }
    if (n > 0 && r->buf[n - 1] == '\r') n--;
    r->buf[n] = 0;
    *len = n;
    return 1;
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t') return 0;
    return 1;
}

int jsonl_next_line(jsonl_reader *r, const char **text, size_t *len)
{
    for (;;) {
        size_t n;
        int rc = read_line(r, &n);
        if (rc <= 0) return rc;
        r->line++;
        r->bytes += n + 1;
        progress_update(r->prog, r->line, r->bytes);
        if (blank(r->buf, n)) continue;
        r->last = n;
        *text = r->buf;
        *len = n;
        return 1;
    }
}

int jsonl_parse_line(jsonl_reader *r, json_t **out)
{
    json_error_t e;
    json_t *v = NULL;
    size_t n = r->last;
    if (json_too_deep(r->buf, n, JSONL_MAX_DEPTH))
        hat_errat(r->name, r->line, "JSON nested deeper than %d levels", JSONL_MAX_DEPTH);
    else if (!(v = r->memo ? harness_memo_parse(r->memo, r->buf, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e)
                           : json_loadb_quick(r->buf, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e)))
        hat_errat(r->name, r->line, "invalid JSON at column %d: %s", e.column, e.text);
    if (!v) {
        if (!r->skip_bad) return -1;
        r->skipped++;
        return 0;
    }
    *out = v;
    return 1;
}

int jsonl_next(jsonl_reader *r, json_t **out)
{
    const char *text;
    size_t n;
    int rc;
    while ((rc = jsonl_next_line(r, &text, &n)) == 1)
        if ((rc = jsonl_parse_line(r, out))) return rc;
    return rc;
}

const char *jsonl_text(const jsonl_reader *r, size_t *len)
{
    *len = r->last;
    return r->buf;
}

void jsonl_set_memo(jsonl_reader *r, harness_memo *m) { r->memo = m; }

long jsonl_line(const jsonl_reader *r) { return r->line; }
const char *jsonl_name(const jsonl_reader *r) { return r->name; }
long jsonl_skipped(const jsonl_reader *r) { return r->skipped; }

int jsonl_close(jsonl_reader *r)
{
    if (!r) return 0;
    progress_end(r->prog);
    if (r->skipped) hat_errat(r->name, 0, "skipped %ld bad line%s", r->skipped,
                              r->skipped == 1 ? "" : "s");
    int rc = gzclose(r->gz) == Z_OK ? 0 : -1;
    free(r->buf);
    free(r->name);
    free(r);
    return rc;
}

int json_too_deep(const char *s, size_t n, int max)
{
    if (n <= (size_t)max) return 0;      /* too short to nest that deep */
    /* Nor can it nest deeper than it has '[' and '{' bytes: counted with
     * memchr, much cheaper than the walk below. */
    size_t opens = 0;
    const char *e = s + n;
    for (const char *p = s; opens <= (size_t)max && (p = memchr(p, '{', (size_t)(e - p))); p++) opens++;
    for (const char *p = s; opens <= (size_t)max && (p = memchr(p, '[', (size_t)(e - p))); p++) opens++;
    if (opens <= (size_t)max) return 0;
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max) return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

int jsonl_foreach(char *const *files, int nfiles, int skip_bad, jsonl_fn fn, void *ctx)
{
    long bad = 0;
    int status = 0;
    for (int i = 0; !status && (i < nfiles || (i == 0 && nfiles == 0)); i++) {
        jsonl_reader *r = jsonl_open(nfiles ? files[i] : NULL, skip_bad);
        if (!r) return -1;
        json_t *v;
        int rc;
        while ((rc = jsonl_next(r, &v)) == 1) {
            int e = fn(ctx, v, jsonl_name(r), jsonl_line(r));
            json_decref(v);
            if (e > 0) bad++;
            if (e < 0 || (e > 0 && !skip_bad)) { status = -1; break; }
        }
        if (rc < 0) status = -1;
        if (jsonl_close(r)) status = -1;
    }
    if (bad && skip_bad) hat_warn("skipped %ld bad record%s", bad, bad == 1 ? "" : "s");
    return status;
}

typedef struct { json_t *all; char *(*check)(const json_t *v); } load_all;

static int load_one(void *ctx, json_t *v, const char *file, long line)
{
    load_all *a = ctx;
    char *e = a->check ? a->check(v) : NULL;
    if (e) {
        hat_errat(file, line, "%s", e);
        free(e);
        return 1;
    }
    json_array_append(a->all, v);
    return 0;
}

json_t *jsonl_load_all(char *const *files, int nfiles, int skip_bad, char *(*check)(const json_t *v),
                       const char *what)
{
    load_all a = { json_array(), check };
    if (jsonl_foreach(files, nfiles, skip_bad, load_one, &a)) { json_decref(a.all); return NULL; }
    if (!json_array_size(a.all)) {
        hat_errat(nfiles ? files[0] : "<stdin>", 0, "no %s", what);
        json_decref(a.all);
        return NULL;
    }
    return a.all;
}

/* ------------------------------------------------- the yajl fast path */

/* Deeper than this json_loadb_fast steps aside (jansson stops at 2048,
 * hat's readers at JSONL_MAX_DEPTH). */
#define FAST_MAX_DEPTH 1024

/* The value being built: containers are attached to their parent when
 * they open, so the root owns everything made so far and one decref
 * frees a value abandoned half-way. */
typedef struct {
    json_t *root;
    json_t *open[FAST_MAX_DEPTH];   /* borrowed: the containers still open */
    int     depth, done;
    size_t  flags;
    char   *key;                    /* the pending object key (yajl's buffer is */
    size_t  klen, kcap;             /*  reused by the value that follows it) */
    int     kascii;                 /* the key is all ASCII */
    char    kbuf[128];
} fast_ctx;

/* Whether s[0..n) is all ASCII, so valid UTF-8 without jansson's check. */
int json_ascii(const char *s, size_t n)
{
    uint64_t acc = 0, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    /* the rest (most keys and strings are shorter than 8 bytes) in two
     * loads that may overlap, not a loop over its bytes */
    size_t r = n - i;
    if (r >= 4) {
        uint32_t a, b;
        memcpy(&a, s + i, 4);
        memcpy(&b, s + n - 4, 4);
        acc |= a | b;
    } else if (r >= 2) {
        uint16_t a, b;
        memcpy(&a, s + i, 2);
        memcpy(&b, s + n - 2, 2);
        acc |= a | b;
    } else if (r == 1) {
        acc |= (unsigned char)s[i];
    }
    return !(acc & 0x8080808080808080ULL);
}

/* Attach v (taken) to the open container; 0 stops the parse. */
static int fast_add(fast_ctx *c, json_t *v)
{
    if (!v) return 0;
    if (c->depth == 0) { json_decref(v); return 0; }     /* a top-level scalar */
    json_t *top = c->open[c->depth - 1];
    if (!json_is_object(top)) return json_array_append_new(top, v) == 0;
    /* json_object_setn_new checks the key's UTF-8 as strictly as
     * jansson's parser (an ASCII key needs no check); a repeated key
     * keeps its place and takes the new value, as in json_loadb. */
    return (c->kascii ? json_object_setn_new_nocheck(top, c->key, c->klen, v)
                      : json_object_setn_new(top, c->key, c->klen, v)) == 0;
}

static int fast_open(void *ctx, json_t *v)
{
    fast_ctx *c = ctx;
    if (!v || c->done || c->depth == FAST_MAX_DEPTH) { json_decref(v); return 0; }
    if (c->depth == 0) c->root = v;
    else if (!fast_add(c, v)) return 0;
    c->open[c->depth++] = v;                           /* the parent holds it */
    return 1;
}

static int fast_close(void *ctx)
{
    fast_ctx *c = ctx;
    if (--c->depth == 0) c->done = 1;
    return 1;
}

static int fast_map(void *ctx) { return fast_open(ctx, json_object()); }
static int fast_array(void *ctx) { return fast_open(ctx, json_array()); }
static int fast_null(void *ctx) { return fast_add(ctx, json_null()); }
static int fast_bool(void *ctx, int b) { return fast_add(ctx, json_boolean(b)); }

static int fast_string(void *ctx, const unsigned char *s, size_t n)
{
    fast_ctx *c = ctx;
    /* yajl decodes \u0000; jansson refuses it without JSON_ALLOW_NUL. */
    if (!(c->flags & JSON_ALLOW_NUL) && memchr(s, 0, n)) return 0;
    if (json_ascii((const char *)s, n)) return fast_add(c, json_stringn_nocheck((const char *)s, n));
    return fast_add(c, json_stringn((const char *)s, n));   /* NULL on bad UTF-8 */
}

static int fast_key(void *ctx, const unsigned char *s, size_t n)
{
    fast_ctx *c = ctx;
    if (memchr(s, 0, n)) return 0;                     /* jansson: never in a key */
    if (n >= c->kcap) {
        c->kcap = n + 64;
        c->key = c->key == c->kbuf ? xmalloc(c->kcap) : xrealloc(c->key, c->kcap);
    }
    memcpy(c->key, s, n);
    c->klen = n;
    c->kascii = json_ascii(c->key, n);
    return 1;
}

/* A number's text as jansson reads it: a real when it has a fraction or
 * an exponent, else an integer; out of range is an error there, so a
 * step aside here. */
json_t *json_number_text(const char *s, size_t n)
{
    /* yajl has checked the grammar: an optional '-', digits, then maybe
     * a fraction and an exponent.  Up to 19 digits an integer is summed
     * here, unsigned (it cannot wrap), and taken when it is in range: what
     * strtoll gives, which jansson uses (out of range is its error). */
    size_t neg = n && s[0] == '-', d = neg;
    while (d < n && s[d] >= '0' && s[d] <= '9') d++;
    long long i = 0;
    if (d == n && n > neg && n - neg <= 19) {
        unsigned long long u = 0;
        for (size_t k = neg; k < n; k++) u = u * 10 + (unsigned)(s[k] - '0');
        if (u > (unsigned long long)LLONG_MAX + neg) return NULL;
        i = neg ? (u == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)u) : (long long)u;
        return json_integer((json_int_t)i);
    }
    char t[64], *e;
    if (n >= sizeof t) return NULL;
    memcpy(t, s, n);
    t[n] = 0;
    errno = 0;
    if (d < n) {                                       /* a fraction or an exponent */
        double v = strtod(t, &e);
        if (errno || e != t + n) return NULL;
        return json_real(v);
    }
    i = strtoll(t, &e, 10);
    if (errno || e != t + n) return NULL;
    return json_integer((json_int_t)i);
}

static int fast_number(void *ctx, const char *s, size_t n) { return fast_add(ctx, json_number_text(s, n)); }

static const yajl_callbacks fast_callbacks = {
    fast_null, fast_bool, NULL, NULL, fast_number, fast_string,
    fast_map, fast_key, fast_close, fast_array, fast_close
};

/* Whether buf has nothing on which yajl and jansson part ways before any
 * value is made: form feed and vertical tab are white space to yajl
 * only, and yajl turns a lone surrogate escape into '?' or a made-up
 * character where jansson refuses it.  (Any \uD800-\uDFFF escape steps
 * aside; a real surrogate pair is rare enough to leave to jansson.) */
int json_fast_plain(const char *buf, size_t len)
{
    if (memchr(buf, '\f', len) || memchr(buf, '\v', len)) return 0;
    const char *end = buf + len;
    for (const char *p = buf; (p = memchr(p, '\\', (size_t)(end - p))); p++)
        if (end - p >= 4 && p[1] == 'u' && (p[2] | 0x20) == 'd' && strchr("89abAB", p[3])) return 0;
    return 1;
}

int json_fast_on(void)
{
    static int off = -1;                 /* HAT_SLOW_JSON=1: jansson alone (tests) */
    if (off < 0) {
        const char *e = getenv("HAT_SLOW_JSON");
        off = e && *e && strcmp(e, "0");
    }
    return !off;
}

json_t *json_loadb_fast(const char *buf, size_t len, size_t flags, size_t *end)
{
    if (!json_fast_on()) return NULL;
    if (flags & ~(size_t)(JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL | JSON_DECODE_ANY)) return NULL;
    if (!buf || !json_fast_plain(buf, len)) return NULL;
    fast_ctx c;
    c.root = NULL;
    c.depth = c.done = 0;
    c.flags = flags;
    c.key = c.kbuf;
    c.klen = 0;
    c.kcap = sizeof c.kbuf;
    yajl_handle h = yajl_alloc(&fast_callbacks, NULL, &c);
    if (!h) return NULL;
    /* UTF-8 is checked by jansson itself (json_stringn, the key setter),
     * more strictly than yajl would (overlong forms, surrogates). */
    yajl_config(h, yajl_dont_validate_strings, 1);
    /* yajl stops where the value ends; what follows is checked here, as
     * jansson does: yajl's own check lets an unterminated string through. */
    yajl_config(h, yajl_allow_trailing_garbage, 1);
    yajl_status st = yajl_parse(h, (const unsigned char *)buf, len);
    size_t used = yajl_get_bytes_consumed(h);
    yajl_free(h);
    if (c.key != c.kbuf) free(c.key);
    int ok = st == yajl_status_ok && c.done && used <= len;
    for (size_t i = used; ok && !(flags & JSON_DISABLE_EOF_CHECK) && i < len; i++)
        ok = buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r';
    if (!ok) {
        json_decref(c.root);
        return NULL;
    }
    if (end) *end = used;
    return c.root;
}

json_t *json_loadb_quick(const char *buf, size_t len, size_t flags, json_error_t *e)
{
    json_t *v = json_loadb_fast(buf, len, flags, NULL);
    return v ? v : json_loadb(buf, len, flags, e);
}

json_t *json_parse_named(const char *text, size_t len, const char *name)
{
    if (json_too_deep(text, len, JSONL_MAX_DEPTH)) {
        hat_errat(name, 0, "JSON nested deeper than %d levels", JSONL_MAX_DEPTH);
        return NULL;
    }
    json_error_t e;
    json_t *v = json_loadb_quick(text, len, 0, &e);
    if (!v) hat_errat(name, e.line, "invalid JSON at column %d: %s", e.column, e.text);
    return v;
}

json_t *json_load_path(const char *path)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return NULL;
    json_t *v = json_parse_named(text, len, is_stdio_path(path) ? "<stdin>" : path);
    free(text);
    return v;
}

/* --------------------------------------------------------------- output */

struct hat_out {
    FILE  *f;        /* plain stream, or NULL when gz is used */
    gzFile gz;
    char  *path;     /* final name, NULL for stdout */
    char  *tmp;      /* temporary name while writing; NULL: written in place
                      * (stdout, or a device or FIFO: is_special_path) */
    int    failed;
    int    log;      /* out_open_log: appended in place, flushed per write */
    int    created;  /* out_open_log made the file: out_abort removes it if still empty */
    sbuf   line;     /* out_json's buffer, reused */
};

hat_out *out_open(const char *path)
{
    hat_out *o = xcalloc(1, sizeof *o);
    if (is_stdio_path(path)) {
        o->f = stdout;
        return o;
    }
    int fd;
    if (is_special_path(path)) {
        if ((fd = open(path, O_WRONLY)) < 0) {
            hat_errat(path, 0, "cannot open: %s", strerror(errno));
            free(o);
            return NULL;
        }
    } else {
        char *d = xstrdup(path), *b = xstrdup(path);
        o->tmp = xasprintf("%s/.%s.tmp.XXXXXX", dirname(d), basename(b));
        free(d);
        free(b);
        if ((fd = mkstemp(o->tmp)) < 0) {
            hat_errat(path, 0, "cannot create: %s", strerror(errno));
            free(o->tmp);
            free(o);
            return NULL;
        }
        fchmod(fd, 0644 & ~umask(umask(0)));
    }
    o->path = xstrdup(path);
    if (str_endswith(path, ".gz")) {
        o->gz = gzdopen(fd, "wb6");
        if (!o->gz) hat_die("%s: cannot start compression", path);
    } else {
        o->f = fdopen(fd, "wb");
        if (!o->f) hat_die("%s: fdopen: %s", path, strerror(errno));
        setvbuf(o->f, NULL, _IOFBF, 1 << 18);
    }
    return o;
}

hat_out *out_open_log(const char *path)
{
    if (is_stdio_path(path)) return out_open(path);
    struct stat st;
    int created = stat(path, &st) != 0 && errno == ENOENT;
    FILE *f = fopen(path, "a");
    if (!f) {
        hat_errat(path, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    hat_out *o = xcalloc(1, sizeof *o);
    o->f = f;
    o->path = xstrdup(path);
    o->log = 1;
    o->created = created;
    return o;
}

FILE *out_file(hat_out *o) { return o->f; }

static const char *out_name(const hat_out *o) { return o->path ? o->path : "<stdout>"; }

int out_write(hat_out *o, const void *buf, size_t n)
{
    if (o->failed) return -1;
    int ok = o->gz ? (n == 0 || gzwrite(o->gz, buf, (unsigned)n) == (int)n)
                   : fwrite(buf, 1, n, o->f) == n && (!o->log || fflush(o->f) == 0);
    if (!ok) {
        hat_errat(out_name(o), 0, "write error: %s", strerror(errno));
        o->failed = 1;
        return -1;
    }
    return 0;
}

int out_puts(hat_out *o, const char *s) { return out_write(o, s, strlen(s)); }

static int dump_cb(const char *buf, size_t n, void *data)
{
    sbuf_add(data, buf, n);
    return 0;
}

int out_json(hat_out *o, const json_t *v)
{
    /* jansson emits a line in many tiny pieces; gather them and write the
     * line once (per-piece stdio calls were a fifth of hsa-augment's time). */
    sbuf_reset(&o->line);
    if (json_dump_callback(v, dump_cb, &o->line, HAT_JSON_FLAGS) < 0) {
        if (!o->failed) hat_errat(out_name(o), 0, "cannot serialise JSON value");
        o->failed = 1;
        return -1;
    }
    sbuf_putc(&o->line, '\n');
    return out_write(o, o->line.s, o->line.len);
}

static void out_free(hat_out *o)
{
    sbuf_free(&o->line);
    free(o->path);
    free(o->tmp);
    free(o);
}

/* A log's end, aborted or not: what was written stays. */
static int log_close(hat_out *o)
{
    int bad = o->failed;
    if (fclose(o->f) != 0 && !bad) {
        hat_errat(o->path, 0, "write error: %s", strerror(errno));
        bad = 1;
    }
    out_free(o);
    return bad ? -1 : 0;
}

void out_abort(hat_out *o)
{
    if (!o) return;
    if (o->log) {
        /* a run that failed before its first line leaves no empty log behind */
        struct stat st;
        int empty = o->created && o->f && fflush(o->f) == 0 && fstat(fileno(o->f), &st) == 0 && st.st_size == 0;
        char *path = empty ? xstrdup(o->path) : NULL;
        log_close(o);
        if (path) unlink(path);
        free(path);
        return;
    }
    if (o->gz) gzclose(o->gz);
    else if (o->f && o->f != stdout) fclose(o->f);
    if (o->tmp && o->path) unlink(o->tmp);
    out_free(o);
}

int out_close(hat_out *o)
{
    if (!o) return 0;
    if (o->log) return log_close(o);
    int bad = o->failed;
    if (!o->path) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            if (!bad) hat_errat("<stdout>", 0, "write error: %s", strerror(errno));
            bad = 1;
        }
        out_free(o);
        return bad ? -1 : 0;
    }
    if (o->gz) {
        /* gzflush then fsync the descriptor through a dup'd fd is not
         * possible after gzclose; gzclose flushes and closes. */
        if (gzclose(o->gz) != Z_OK) bad = 1;
        o->gz = NULL;
        int fd = o->tmp ? open(o->tmp, O_RDONLY) : -1;
        if (fd >= 0) { fsync(fd); close(fd); }
    } else {
        /* (a device or FIFO written in place has nothing to fsync) */
        if (fflush(o->f) != 0 || (o->tmp && fsync(fileno(o->f)) != 0)) bad = 1;
        if (fclose(o->f) != 0) bad = 1;
        o->f = NULL;
    }
    if (!o->tmp) {
        if (bad && !o->failed) hat_errat(o->path, 0, "write error: %s", strerror(errno));
        out_free(o);
        return bad ? -1 : 0;
    }
    if (!bad && rename(o->tmp, o->path) != 0) {
        hat_errat(o->path, 0, "cannot rename into place: %s", strerror(errno));
        bad = 2;
    } else if (bad && !o->failed) {
        hat_errat(o->path, 0, "write error: %s", strerror(errno));
    }
    if (bad) unlink(o->tmp);
    out_free(o);
    return bad ? -1 : 0;
}

int out_finish(hat_out *o, int status)
{
    if (status) {
        out_abort(o);
        return -1;
    }
    return out_close(o);
}

char *json_compact(const json_t *v)
{
    char *s = json_dumps(v, HAT_JSON_FLAGS);
    if (!s) hat_die("cannot serialise JSON value");
    return s;
}

json_t *json_str(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    return json_ascii(s, n) ? json_stringn_nocheck(s, n) : json_stringn(s, n);
}

json_t *json_copy_containers(const json_t *v)
{
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)   /* keys are valid UTF-8 already */
            json_object_set_new_nocheck(o, k, json_copy_containers(x));
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(a, json_copy_containers(x));
        return a;
    }
    return json_incref((json_t *)v);
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
    hat_out *o = out_open(path);
    if (!o) return -1;
    if (out_write(o, data, len) < 0) {
        out_abort(o);
        return -1;
    }
    return out_close(o);
}
