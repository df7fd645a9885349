/* progress.c — the terminal progress line (progress.h). */
#include "progress.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROGRESS_DELAY  1.0    /* seconds of silence first: short work draws nothing */
#define PROGRESS_PERIOD 0.25   /* seconds between redraws */

struct progress {
    char     label[256], unit[32], status[160];
    long     total, done;
    uint64_t bytes_total, bytes;
    double   t0, last;         /* start, last redraw (0: never drawn) */
};

static progress *active;       /* the one line on the terminal */
static double delay = PROGRESS_DELAY;

/* HAT_PROGRESS=0: never; =now: from the first update, without the
 * second of silence (to watch short work, and for the tests). */
static int enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("HAT_PROGRESS");
        on = isatty(2) && !(e && !strcmp(e, "0"));
        if (e && !strcmp(e, "now")) delay = 0;
    }
    return on;
}

progress *progress_start(const char *label, const char *unit, long total)
{
    if (active || !enabled()) return NULL;
    progress *p = xcalloc(1, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    snprintf(p->unit, sizeof p->unit, "%s", unit);
    p->total = total > 0 ? total : 0;
    p->t0 = hat_now();
    active = p;
    return p;
}

void progress_bytes_total(progress *p, uint64_t total) { if (p) p->bytes_total = total; }

int progress_due(const progress *p)
{
    if (!p) return 0;
    double t = hat_now();
    return t - p->t0 >= delay && t - p->last >= PROGRESS_PERIOD;
}

/* 12345 -> "12,345" */
static const char *grouped(long v, char *buf, size_t n)
{
    char raw[32];
    int len = snprintf(raw, sizeof raw, "%ld", v < 0 ? -v : v), o = 0;
    if (v < 0 && o < (int)n - 1) buf[o++] = '-';
    for (int i = 0; i < len && o < (int)n - 1; i++) {
        if (i && (len - i) % 3 == 0 && o < (int)n - 1) buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = 0;
    return buf;
}

static const char *duration(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t < 60) snprintf(buf, n, "%lds", t);
    else if (t < 3600) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    return buf;
}

static void draw(progress *p, int final)
{
    double t = hat_now(), dt = t - p->t0 > 1e-9 ? t - p->t0 : 1e-9;
    char line[768], a[32], b[32];
    int o = snprintf(line, sizeof line, "%s: ", hat_prog);
#define PUT(...) do { if (o < (int)sizeof line) o += snprintf(line + o, sizeof line - o, __VA_ARGS__); } while (0)
    if (p->label[0]) PUT("%s: ", p->label);
    PUT("%s", grouped(p->done, a, sizeof a));
    if (p->total) PUT("/%s", grouped(p->total, b, sizeof b));
    PUT(" %s", p->unit);
    double frac = -1;
    if (p->bytes) {
        PUT(", %.1f", p->bytes / 1e6);
        if (p->bytes_total) PUT(" of %.1f", p->bytes_total / 1e6);
        PUT(" MB");
        if (p->bytes_total) frac = (double)p->bytes / p->bytes_total;
    }
    if (p->total) frac = (double)p->done / p->total;
    if (frac > 1) frac = 1;
    if (frac >= 0) PUT(" (%.0f%%)", 100 * frac);
    if (final) PUT(" in %s", duration(dt, a, sizeof a));
    else if (p->bytes && !p->total) PUT(", %.1f MB/s", p->bytes / 1e6 / dt);
    else PUT(p->done / dt >= 100 ? ", %.0f %s/s" : ", %.2g %s/s", p->done / dt, p->unit);
    /* No estimate from the first instants: it would be noise. */
    if (!final && frac > 0.005 && dt >= 1) PUT(", ETA %s", duration(dt * (1 - frac) / frac, a, sizeof a));
    if (p->status[0]) PUT(", %s", p->status);
#undef PUT
    /* \r and erase-to-end: the line shrinks cleanly as well as grows. */
    fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    fflush(stderr);
    p->last = t;
}

void progress_update(progress *p, long done, uint64_t bytes)
{
    if (!p) return;
    p->done = done;
    if (bytes) p->bytes = bytes;
    if (progress_due(p)) draw(p, 0);
}

void progress_status(progress *p, const char *fmt, ...)
{
    if (!p) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->status, sizeof p->status, fmt, ap);
    va_end(ap);
}

void progress_end(progress *p)
{
    if (!p) return;
    if (p->last > 0) draw(p, 1);
    if (active == p) active = NULL;
    free(p);
}

void progress_clear(void)
{
    if (active && active->last > 0) {
        fputs("\r\033[K", stderr);
        active->last = 0.5;    /* drawn before (a final line follows), due again at once */
    }
}

uint64_t progress_input_size(const char *path)
{
    struct stat st;
    int ok = is_stdio_path(path) ? fstat(0, &st) == 0 : stat(path, &st) == 0;
    return ok && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}
