/* util.c — diagnostics, checked allocation, growable strings, file reads. */
#include "util.h"
#include "progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

const char *hat_prog = "hat";

void hat_verrat(const char *file, long line, const char *fmt, va_list ap)
{
    progress_clear();   /* a progress line on the terminal is erased first */
    fprintf(stderr, "%s: ", hat_prog);
    if (file) {
        if (line > 0) fprintf(stderr, "%s:%ld: ", file, line);
        else fprintf(stderr, "%s: ", file);
    }
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void hat_errat(const char *file, long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hat_verrat(file, line, fmt, ap);
    va_end(ap);
}

void hat_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hat_verrat(NULL, 0, fmt, ap);
    va_end(ap);
}

void hat_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hat_verrat(NULL, 0, fmt, ap);
    va_end(ap);
    exit(EXIT_FAIL);
}

static void *oom(size_t n)
{
    hat_die("out of memory allocating %zu bytes", n);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) oom(strlen(fmt));
    va_end(ap);
    return s;
}

void sbuf_init(sbuf *b) { b->s = NULL; b->len = b->cap = 0; }
void sbuf_free(sbuf *b) { free(b->s); sbuf_init(b); }
void sbuf_reset(sbuf *b) { b->len = 0; if (b->s) b->s[0] = 0; }

static void sbuf_grow(sbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void sbuf_add(sbuf *b, const char *s, size_t n)
{
    sbuf_grow(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sbuf_puts(sbuf *b, const char *s) { sbuf_add(b, s, strlen(s)); }
void sbuf_putc(sbuf *b, char c) { sbuf_add(b, &c, 1); }

void sbuf_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sbuf_grow(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, aq);
    va_end(aq);
    b->len += (size_t)n;
}

char *sbuf_detach(sbuf *b)
{
    char *s = b->s ? b->s : xstrdup("");
    sbuf_init(b);
    return s;
}

int is_stdio_path(const char *path) { return !path || !strcmp(path, "-"); }

int str_endswith(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

int is_special_path(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

char *read_file(const char *path, size_t *len)
{
    const char *name = is_stdio_path(path) ? "<stdin>" : path;
    /* gzread passes uncompressed data through unchanged, so one path
     * serves plain files, .gz files and stdin alike. */
    gzFile gz = is_stdio_path(path) ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
    if (!gz) {
        hat_errat(name, 0, "cannot open: %s", strerror(errno ? errno : ENOENT));
        return NULL;
    }
    sbuf b;
    sbuf_init(&b);
    char chunk[1 << 16];
    int n;
    while ((n = gzread(gz, chunk, sizeof chunk)) > 0) sbuf_add(&b, chunk, (size_t)n);
    int err = 0;
    /* gzerror's text belongs to gz: report before gzclose frees it. */
    if (n < 0) {
        const char *msg = gzerror(gz, &err);
        hat_errat(name, 0, "read error: %s", err == Z_ERRNO ? strerror(errno) : msg);
        gzclose(gz);
        sbuf_free(&b);
        return NULL;
    }
    gzclose(gz);
    if (len) *len = b.len;
    return sbuf_detach(&b);
}

#ifndef HAT_DATADIR
#define HAT_DATADIR "/usr/local/share/hat"
#endif

static char *try_path(const char *dir, const char *sub, const char *name)
{
    char *p = xasprintf("%s%s/%s", dir, sub, name);
    if (access(p, R_OK) == 0) return p;
    free(p);
    return NULL;
}

char *hat_data_path(const char *name)
{
    char *p;
    const char *env = getenv("HAT_DATA");
    if (env && *env) return try_path(env, "", name);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        if ((p = try_path(exe, "/../data", name))) return p;
        if ((p = try_path(exe, "/../share/hat", name))) return p;
    }
    return try_path(HAT_DATADIR, "", name);
}

double hat_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
