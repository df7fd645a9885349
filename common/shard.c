/* shard.c — N copies of a program over its records (see shard.h). */
#include "shard.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Records queued for one copy beyond this wait for its pipe to drain, so
 * a long input is not held in memory at once. */
#define PENDING_MAX (4u << 20)

typedef struct {
    char  *s;
    size_t len;
} line;

typedef struct {
    pid_t  pid;
    int    in, out;         /* write end of its stdin, read end of its stdout; -1 when closed */
    sbuf   pend;            /* bytes not yet written to in, from woff */
    size_t woff;
    sbuf   part;            /* output read but not yet ended by a newline */
    line  *q;               /* complete output lines, q[qh, qt) */
    size_t qh, qt, qcap;
    int    eof;
} copy;

struct shard_pool {
    int   n, closed;
    copy *c;
    long  sent, taken;
};

shard_id shard_self(void)
{
    shard_id id = { 0, 0 };
    const char *e = getenv("HAT_SHARD");
    if (!e) return id;
    int k, n, used = 0;
    if (sscanf(e, "%d/%d%n", &k, &n, &used) != 2 || e[used] || n < 1 || k < 0 || k >= n) {
        hat_errat(NULL, 0, "HAT_SHARD=%s: expected K/N with 0 <= K < N (set by --jobs)", e);
        exit(EXIT_USAGE);
    }
    id.k = k;
    id.n = n;
    return id;
}

/* Threads for each copy: the parent's OMP_NUM_THREADS (else the cores
 * online) shared out, at least one each. */
static int copy_threads(int n)
{
    const char *e = getenv("OMP_NUM_THREADS");
    long t = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    t = t > 0 ? t / n : 1;
    return t < 1 ? 1 : (int)t;
}

shard_pool *shard_start(int n, char *const *argv)
{
    /* a copy that dies must fail a write, not kill the parent */
    signal(SIGPIPE, SIG_IGN);
    int threads = copy_threads(n);
    /* the program's path, read before forking: under valgrind readlink
     * gives the program where exec of /proc/self/exe would run the tool */
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el <= 0) { hat_errat(NULL, 0, "cannot find its own program: %s", strerror(errno)); return NULL; }
    exe[el] = 0;
    shard_pool *p = xcalloc(1, sizeof *p);
    p->n = n;
    p->c = xcalloc(n, sizeof *p->c);
    fflush(NULL);
    for (int k = 0; k < n; k++) {
        copy *c = &p->c[k];
        c->in = c->out = -1;
        int ip[2], op[2];
        if (pipe(ip)) { hat_errat(NULL, 0, "pipe: %s", strerror(errno)); shard_finish(p); return NULL; }
        if (pipe(op)) {
            hat_errat(NULL, 0, "pipe: %s", strerror(errno));
            close(ip[0]); close(ip[1]);
            shard_finish(p);
            return NULL;
        }
        pid_t pid = fork();
        if (pid < 0) {
            hat_errat(NULL, 0, "fork: %s", strerror(errno));
            close(ip[0]); close(ip[1]); close(op[0]); close(op[1]);
            shard_finish(p);
            return NULL;
        }
        if (pid == 0) {
            dup2(ip[0], 0);
            dup2(op[1], 1);
            /* the other copies' pipes, inherited from the parent, must
             * close here, or a copy never sees end of input */
            for (int j = 0; j < k; j++) { close(p->c[j].in); close(p->c[j].out); }
            close(ip[0]); close(ip[1]); close(op[0]); close(op[1]);
            char b[64];
            snprintf(b, sizeof b, "%d/%d", k, n);
            setenv("HAT_SHARD", b, 1);
            setenv("HAT_PROGRESS", "0", 1);
            snprintf(b, sizeof b, "%d", threads);
            setenv("OMP_NUM_THREADS", b, 1);
            execv(exe, argv);
            hat_errat(NULL, 0, "cannot run a copy of itself: %s", strerror(errno));
            _exit(EXIT_FAIL);
        }
        close(ip[0]);
        close(op[1]);
        c->pid = pid;
        c->in = ip[1];
        c->out = op[0];
        fcntl(c->in, F_SETFL, fcntl(c->in, F_GETFL) | O_NONBLOCK);
        sbuf_init(&c->pend);
        sbuf_init(&c->part);
    }
    return p;
}

static void push_line(copy *c, const char *s, size_t len)
{
    if (c->qt == c->qcap) {
        if (c->qh) {                                  /* slide down before growing */
            memmove(c->q, c->q + c->qh, (c->qt - c->qh) * sizeof *c->q);
            c->qt -= c->qh;
            c->qh = 0;
        }
        if (c->qt == c->qcap) c->q = xrealloc(c->q, (c->qcap = c->qcap ? 2 * c->qcap : 16) * sizeof *c->q);
    }
    c->q[c->qt].s = xstrndup(s, len);
    c->q[c->qt++].len = len;
}

/* Write what can be written and read what has come, waiting up to
 * timeout ms (-1: until something happens).  -1 when a copy stopped
 * taking input (reported). */
static int pump(shard_pool *p, int timeout)
{
    struct pollfd fd[2 * p->n];
    int who[2 * p->n], nf = 0;
    for (int k = 0; k < p->n; k++) {
        copy *c = &p->c[k];
        if (c->in >= 0 && c->woff == c->pend.len && p->closed) { close(c->in); c->in = -1; }
        if (c->in >= 0 && c->woff < c->pend.len) { fd[nf] = (struct pollfd){ c->in, POLLOUT, 0 }; who[nf++] = k; }
        if (!c->eof) { fd[nf] = (struct pollfd){ c->out, POLLIN, 0 }; who[nf++] = k; }
    }
    if (!nf) return 0;
    int r = poll(fd, nf, timeout);
    if (r < 0 && errno != EINTR) { hat_errat(NULL, 0, "poll: %s", strerror(errno)); return -1; }
    for (int i = 0; r > 0 && i < nf; i++) {
        copy *c = &p->c[who[i]];
        if (!fd[i].revents) continue;
        if (fd[i].events == POLLOUT) {
            ssize_t w = write(c->in, c->pend.s + c->woff, c->pend.len - c->woff);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                hat_errat(NULL, 0, "copy %d of %d stopped reading its input", who[i], p->n);
                return -1;
            }
            if (w > 0 && (c->woff += w) == c->pend.len) { sbuf_reset(&c->pend); c->woff = 0; }
            continue;
        }
        /* append, then cut the complete lines off the front */
        char b[1 << 16];
        ssize_t got = read(c->out, b, sizeof b);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) { c->eof = 1; continue; }
        sbuf_add(&c->part, b, got);
        size_t s0 = 0;
        for (char *nl; (nl = memchr(c->part.s + s0, '\n', c->part.len - s0)); s0 = nl - c->part.s + 1)
            push_line(c, c->part.s + s0, nl - (c->part.s + s0));
        memmove(c->part.s, c->part.s + s0, c->part.len - s0 + 1);
        c->part.len -= s0;
    }
    return 0;
}

/* Queue one record (without its newline) for the next copy in turn. */
static int shard_send(shard_pool *p, const char *s, size_t len)
{
    copy *c = &p->c[p->sent++ % p->n];
    sbuf_add(&c->pend, s, len);
    sbuf_putc(&c->pend, '\n');
    if (pump(p, 0)) return -1;
    while (c->pend.len - c->woff > PENDING_MAX) {
        if (c->in < 0 || c->eof) { hat_errat(NULL, 0, "a copy of the program ended early"); return -1; }
        if (pump(p, -1)) return -1;
    }
    return 0;
}

void shard_close(shard_pool *p) { p->closed = 1; }
long shard_taken(const shard_pool *p) { return p->taken; }

/* The next output line in record order: 1 with *out (malloc'd, no
 * newline), 0 when none is ready (wait 0) or none is left, -1 after a
 * diagnostic (a copy ended before writing the line of every record). */
static int shard_take(shard_pool *p, char **out, size_t *len, int wait)
{
    for (;;) {
        if (p->taken == p->sent) return 0;            /* nothing outstanding */
        copy *c = &p->c[p->taken % p->n];
        if (c->qh < c->qt) {
            *out = c->q[c->qh].s;
            *len = c->q[c->qh++].len;
            p->taken++;
            return 1;
        }
        if (c->eof) {
            hat_errat(NULL, 0, "copy %ld of %d ended before its last record", p->taken % p->n, p->n);
            return -1;
        }
        if (pump(p, wait ? -1 : 0)) return -1;
        if (!wait && c->qh == c->qt && !c->eof) return 0;
    }
}

int shard_finish(shard_pool *p)
{
    if (!p) return 0;
    int rc = 0, early = !(p->closed && p->taken == p->sent);
    for (int k = 0; k < p->n; k++) {
        copy *c = &p->c[k];
        if (c->in >= 0) close(c->in);
        if (c->out >= 0) close(c->out);
        if (c->pid > 0 && early) kill(c->pid, SIGTERM);
        int st;
        if (c->pid > 0 && (waitpid(c->pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))) rc = -1;
        for (size_t i = c->qh; i < c->qt; i++) free(c->q[i].s);
        free(c->q);
        sbuf_free(&c->pend);
        sbuf_free(&c->part);
    }
    free(p->c);
    free(p);
    return early ? -1 : rc;
}

int shard_send_record(shard_pool *p, const json_t *rec, const char *file, long line)
{
    json_t *w = json_pack("{s:s,s:I,s:O}", "f", file, "l", (json_int_t)line, "r", (json_t *)rec);
    char *t = json_dumps(w, HAT_JSON_FLAGS);
    int rc = shard_send(p, t, strlen(t));
    free(t);
    json_decref(w);
    return rc;
}

json_t *shard_unwrap(json_t *w, json_t **keep, const char **file, long *line)
{
    json_t *r = json_incref(json_object_get(w, "r"));
    const char *f = json_string_value(json_object_get(w, "f"));
    json_t *l = json_object_get(w, "l");
    if (!r || !f || !json_is_integer(l)) {
        hat_errat(NULL, 0, "input is not a record of a --jobs run (HAT_SHARD is set)");
        exit(EXIT_USAGE);
    }
    *line = (long)json_integer_value(l);
    json_decref(*keep);
    *keep = w;                 /* holds f */
    *file = f;
    return r;
}

int shard_drain(shard_pool *p, hat_out *o, int wait, int stop, long *failed)
{
    char *s;
    size_t n;
    int got;
    while ((got = shard_take(p, &s, &n, wait)) == 1) {
        int rc = 0;
        if (n == 4 && !memcmp(s, "null", 4)) {
            (*failed)++;
            rc = stop ? -1 : 0;
        } else {
            rc = out_write(o, s, n) || out_write(o, "\n", 1) ? -1 : 0;
        }
        free(s);
        if (rc) return -1;
    }
    return got;
}
