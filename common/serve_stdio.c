/* serve_stdio.c — serve --stdio: requests as JSON lines on stdin, answers
 * as JSON lines on stdout, in input order.  A line is a request body plus
 * an optional "path" (default "/v1/agent"; "/v1/chat/completions" for a
 * chat request) and an optional "id"; the answer is {"id","status",
 * "response"}.  Up to `window` requests are in flight at once, so the
 * scheduler batches them as it batches HTTP requests.  A line that is not
 * JSON gets a 400 answer naming its line number; nothing stops the loop
 * but the end of input. */
#include "serve.h"
#include "jsonl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    serve_job *j;        /* NULL when answered at once */
    json_t    *id;
    int        status, kind;
    json_t    *response;
    double     t0;
} pending;

static json_t *error_json(int status, const char *msg)
{
    char *b = serve_error_body(status, msg);
    json_t *v = json_loads(b, 0, NULL);
    free(b);
    return v;
}

/* Parse and submit one line; fills p. */
static void start(serve *s, const char *line, size_t len, long lineno, pending *p)
{
    memset(p, 0, sizeof *p);
    p->t0 = hat_now();
    json_error_t je;
    json_t *v = json_too_deep(line, len, 64) ? NULL : json_loadb(line, len, 0, &je);
    if (!json_is_object(v)) {
        char *m = xasprintf("line %ld: %s", lineno, v ? "a request must be a JSON object" : "malformed JSON");
        p->status = 400;
        p->response = error_json(400, m);
        p->id = json_integer(lineno);
        free(m);
        json_decref(v);
        return;
    }
    const json_t *id = json_object_get(v, "id");
    p->id = id ? json_incref((json_t *)id) : json_integer(lineno);
    const char *path = json_string_value(json_object_get(v, "path"));
    int kind = serve_route("POST", path ? path : "/v1/agent");
    p->kind = kind;
    if (json_object_get(v, "path") && !path) kind = -400;
    char *err = NULL;
    serve_request r;
    memset(&r, 0, sizeof r);
    int status = kind < 0 ? -kind : 0;
    if (kind == SERVE_HEALTH || kind == SERVE_METRICS) status = 404;
    if (status) err = xstrdup("\"path\" must be \"/v1/agent\" or \"/v1/chat/completions\"");
    json_object_del(v, "path");
    if (!status) status = serve_parse_json(kind, v, &serve_get_config(s)->limits, &r, &err);
    if (!status) {
        r.stream = 0;        /* a JSONL answer is whole */
        p->j = serve_job_new(s, &r, &status, &err);
    }
    serve_request_clear(&r);
    if (p->j && (status = serve_submit(s, p->j))) {
        err = xstrdup(status == 429 ? "the queue is full" : "the server is shutting down");
        serve_job_unref(p->j);
        p->j = NULL;
    }
    if (status) {
        p->status = status;
        p->response = error_json(status, err);
        serve_observe(s, kind > 0 ? kind : 0, status, -1);
    }
    free(err);
    json_decref(v);
}

static int finish(serve *s, pending *p, FILE *out)
{
    if (p->j) {
        p->status = serve_wait(p->j);
        p->response = json_incref(p->j->result);
        serve_observe(s, p->kind, p->status, hat_now() - p->t0);
        serve_job_unref(p->j);
    }
    json_t *o = json_pack("{s:o,s:i,s:o}", "id", p->id, "status", p->status, "response",
                          p->response ? p->response : json_null());
    char *t = json_compact(o);
    int rc = fprintf(out, "%s\n", t ? t : "{}") < 0 || fflush(out) ? -1 : 0;
    free(t);
    json_decref(o);
    return rc;
}

int serve_stdio_run(serve *s, FILE *in, FILE *out, int window)
{
    int qmax = serve_get_config(s)->queue_max;
    if (window <= 0) window = 1;
    if (window > qmax) window = qmax;
    pending *ring = xcalloc(window, sizeof *ring);
    long head = 0, tail = 0, lineno = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    size_t max = serve_get_config(s)->limits.max_body;
    while (!rc && (n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (tail - head == window) rc = finish(s, &ring[head++ % window], out);
        pending *p = &ring[tail++ % window];
        if ((size_t)n > max) {
            memset(p, 0, sizeof *p);
            char *m = xasprintf("line %ld: the request is %zd bytes; the limit is %zu", lineno, n, max);
            p->status = 413;
            p->response = error_json(413, m);
            p->id = json_integer(lineno);
            free(m);
        } else start(s, line, (size_t)n, lineno, p);
    }
    while (head < tail) {
        if (finish(s, &ring[head++ % window], out)) rc = -1;
    }
    free(line);
    free(ring);
    return rc;
}
