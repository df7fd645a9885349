/* serve_http.c — serve's HTTP front end on libmicrohttpd.
 *
 * One thread per connection (MHD_USE_THREAD_PER_CONNECTION): a handler
 * may block on its job's condition variable, and a slow or stalled client
 * holds only its own thread, never the scheduler nor other clients.  Idle
 * connections are closed after --timeout seconds and at most --connections
 * are open at once (MHD refuses more).  Bodies are read into a buffer up
 * to limits.max_body; a longer one (by Content-Length or as it arrives) is
 * answered 413 at once and the connection closed.
 *
 * Streaming (stream: true) uses a content-reader callback that waits on
 * the job for newly generated text and writes Server-Sent Events in the
 * shape of OpenAI's chat.completion.chunk; a client that goes away
 * cancels its job. */
#include "serve.h"
#include "jsonl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    serve                 *s;
    const serve_http_opts *o;
} http_ctx;

typedef struct {
    int    kind, too_big, answered;
    double discarded;    /* bytes dropped after the body went over the limit */
    sbuf   body;
    double t0;
} conn_state;

static enum MHD_Result send_text(http_ctx *H, struct MHD_Connection *c, int status, const char *type,
                                 char *text)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (status == 429 || status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (serve_draining(H->s)) MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result send_json(http_ctx *H, struct MHD_Connection *c, int status, const json_t *v)
{
    char *s = json_compact(v);
    char *line = xasprintf("%s\n", s ? s : "{}");
    free(s);
    return send_text(H, c, status, "application/json", line);
}

static enum MHD_Result send_error(http_ctx *H, struct MHD_Connection *c, conn_state *cs, int status,
                                  const char *msg)
{
    char *b = serve_error_body(status, msg);
    char *line = xasprintf("%s\n", b);
    free(b);
    serve_observe(H->s, cs->kind > 0 ? cs->kind : 0, status, hat_now() - cs->t0);
    cs->answered = 1;
    return send_text(H, c, status, "application/json", line);
}

/* ---- Server-Sent Events -------------------------------------------------------------- */

typedef struct {
    serve      *s;
    serve_job  *j;
    sbuf        out;        /* bytes produced, not yet handed to MHD */
    size_t      out_off;
    size_t      sent;       /* offset in j->text of content already sent */
    int         role_sent, finished, kind;
    char        id[48];
    long        created;
    double      t0;
} sse;

static void sse_event(sse *e, json_t *delta, const char *finish, json_t *usage)
{
    json_t *chunk = json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s?}]}", "id", e->id, "object",
                              "chat.completion.chunk", "created", (json_int_t)e->created, "model",
                              serve_get_config(e->s)->model_name ? serve_get_config(e->s)->model_name : "hat",
                              "choices", "index", 0, "delta", delta, "finish_reason", finish);
    if (usage) json_object_set_new(chunk, "usage", usage);
    char *s = json_compact(chunk);
    sbuf_printf(&e->out, "data: %s\n\n", s ? s : "{}");
    free(s);
    json_decref(chunk);
}

static void sse_content(sse *e, const char *text, size_t start, size_t end)
{
    if (start < e->sent) start = e->sent;
    if (end <= start) return;
    json_t *d = json_object();
    if (!e->role_sent) json_object_set_new(d, "role", json_string("assistant"));
    e->role_sent = 1;
    json_t *c = json_stringn(text + start, end - start);
    json_object_set_new(d, "content", c ? c : json_string(""));
    sse_event(e, d, NULL, NULL);
    e->sent = end;
}

/* Everything after the job ended: the rest of the content, tool calls,
 * the finish reason with usage, [DONE]. */
static void sse_final(sse *e)
{
    serve_job *j = e->j;
    if (j->status != 200) {
        char *s = json_compact(j->result);
        sbuf_printf(&e->out, "data: %s\n\n", s ? s : "{}");
        free(s);
    } else {
        const json_t *choice = json_array_get(json_object_get(j->result, "choices"), 0);
        const json_t *msg = json_object_get(choice, "message");
        size_t start, end = serve_stream_ready(j->text.s ? j->text.s : "", j->text.len, j->req.stop, 1, &start);
        sse_content(e, j->text.s, start, end);
        const json_t *calls = json_object_get(msg, "tool_calls");
        if (json_array_size(calls)) {
            json_t *a = json_deep_copy(calls);
            size_t i;
            json_t *c;
            json_array_foreach(a, i, c) json_object_set_new(c, "index", json_integer((json_int_t)i));
            json_t *d = json_pack("{s:o}", "tool_calls", a);
            if (!e->role_sent) json_object_set_new(d, "role", json_string("assistant"));
            e->role_sent = 1;
            sse_event(e, d, NULL, NULL);
        }
        const json_t *rc = json_object_get(msg, "reasoning_content");
        if (json_is_string(rc)) sse_event(e, json_pack("{s:O}", "reasoning_content", rc), NULL, NULL);
        sse_event(e, json_object(), json_string_value(json_object_get(choice, "finish_reason")),
                  json_deep_copy(json_object_get(j->result, "usage")));
    }
    sbuf_puts(&e->out, "data: [DONE]\n\n");
    e->finished = 1;
    serve_observe(e->s, SERVE_CHAT, j->status, hat_now() - e->t0);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    sse *e = cls;
    while (e->out_off == e->out.len) {
        if (e->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        sbuf_reset(&e->out);
        e->out_off = 0;
        serve_job *j = e->j;
        pthread_mutex_lock(&j->mu);
        size_t start, ready = serve_stream_ready(j->text.s ? j->text.s : "", j->text.len, j->req.stop, 0, &start);
        while (j->state != JOB_DONE && ready <= e->sent) {
            pthread_cond_wait(&j->cv, &j->mu);
            ready = serve_stream_ready(j->text.s ? j->text.s : "", j->text.len, j->req.stop, 0, &start);
        }
        int done = j->state == JOB_DONE;
        if (!done) sse_content(e, j->text.s, start, ready);
        pthread_mutex_unlock(&j->mu);
        if (done) sse_final(e);
    }
    size_t n = e->out.len - e->out_off;
    if (n > max) n = max;
    memcpy(buf, e->out.s + e->out_off, n);
    e->out_off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    sse *e = cls;
    if (!e->finished) serve_cancel(e->j);   /* the client went away */
    if (!e->finished) serve_observe(e->s, SERVE_CHAT, 499, hat_now() - e->t0);
    serve_job_unref(e->j);
    sbuf_free(&e->out);
    free(e);
}

static enum MHD_Result start_stream(http_ctx *H, struct MHD_Connection *c, conn_state *cs, serve_job *j)
{
    sse *e = xcalloc(1, sizeof *e);
    e->s = H->s;
    e->j = j;
    e->created = (long)time(NULL);
    e->t0 = cs->t0;
    sbuf_init(&e->out);
    snprintf(e->id, sizeof e->id, "chatcmpl-%ld", (long)(cs->t0 * 1e6));
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, e, sse_free);
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    cs->answered = 1;
    return rc;
}

/* ---- requests ----------------------------------------------------------------------- */

static enum MHD_Result answer(http_ctx *H, struct MHD_Connection *c, conn_state *cs)
{
    serve *s = H->s;
    if (cs->kind == SERVE_HEALTH) {
        json_t *st = serve_stats(s);
        int draining = serve_draining(s);
        json_object_set_new(st, "status", json_string(draining ? "draining" : "ok"));
        enum MHD_Result rc = send_json(H, c, draining ? 503 : 200, st);
        json_decref(st);
        serve_observe(s, SERVE_HEALTH, draining ? 503 : 200, hat_now() - cs->t0);
        return rc;
    }
    if (cs->kind == SERVE_METRICS) {
        serve_observe(s, SERVE_METRICS, 200, hat_now() - cs->t0);
        sbuf b;
        sbuf_init(&b);
        metrics_render(serve_metrics(s), &b);
        return send_text(H, c, 200, "text/plain; version=0.0.4", sbuf_detach(&b));
    }
    serve_request r;
    char *err = NULL;
    int status = serve_parse(cs->kind, cs->body.s ? cs->body.s : "", cs->body.len, &serve_get_config(s)->limits,
                             &r, &err);
    serve_job *j = status ? NULL : serve_job_new(s, &r, &status, &err);
    serve_request_clear(&r);
    if (j && (status = serve_submit(s, j)))
        err = xstrdup(status == 429 ? "the queue is full; retry later" : "the server is shutting down");
    if (status) {
        enum MHD_Result rc = send_error(H, c, cs, status, err);
        free(err);
        serve_job_unref(j);
        return rc;
    }
    if (j->req.stream) return start_stream(H, c, cs, j);
    status = serve_wait(j);
    enum MHD_Result rc = send_json(H, c, status, j->result);
    serve_observe(s, cs->kind, status, hat_now() - cs->t0);
    serve_job_unref(j);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    http_ctx *H = cls;
    conn_state *cs = *con_cls;
    size_t max = serve_get_config(H->s)->limits.max_body;
    if (!cs) {
        cs = xcalloc(1, sizeof *cs);
        sbuf_init(&cs->body);
        cs->t0 = hat_now();
        cs->kind = serve_route(method, url);
        *con_cls = cs;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > max) {
            char *m = xasprintf("the body is %s bytes; the limit is %zu", cl, max);
            enum MHD_Result rc = send_error(H, c, cs, 413, m);
            free(m);
            return rc;
        }
        return MHD_YES;
    }
    if (cs->answered) { *upload_size = 0; return MHD_YES; }
    if (*upload_size) {
        /* Over the limit: drop the rest and answer 413 when it has been
         * read (a client still writing would see a reset, not the answer),
         * or at once past 64 times the limit. */
        if (cs->too_big || cs->body.len + *upload_size > max) {
            if (!cs->too_big) sbuf_free(&cs->body);
            cs->too_big += 1;
            cs->discarded += *upload_size;
            *upload_size = 0;
            if (cs->discarded <= 64 * (double)max) return MHD_YES;
        } else {
            sbuf_add(&cs->body, upload, *upload_size);
            *upload_size = 0;
            return MHD_YES;
        }
    }
    if (cs->too_big) {
        char *m = xasprintf("the body is over the limit of %zu bytes", max);
        enum MHD_Result rc = send_error(H, c, cs, 413, m);
        free(m);
        return rc;
    }
    if (cs->kind < 0) {
        cs->answered = 1;
        return send_error(H, c, cs, -cs->kind, cs->kind == -404 ? "no such endpoint" : "method not allowed");
    }
    if (cs->kind != SERVE_HEALTH &&
        !serve_auth_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), H->o->token))
        return send_error(H, c, cs, 401, "a valid bearer token is required (Authorization: Bearer TOKEN)");
    cs->answered = 1;
    return answer(H, c, cs);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    conn_state *cs = *con_cls;
    if (!cs) return;
    sbuf_free(&cs->body);
    free(cs);
    *con_cls = NULL;
}

int serve_http_run(serve *s, const serve_http_opts *o, volatile int *stop)
{
    http_ctx H = { s, o };
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    const char *host = o->host ? o->host : "127.0.0.1";
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1) { hat_warn("--host %s: not an IP address", host); return -1; }
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1) { hat_warn("--host %s: not an IP address", host); return -1; }
    }
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handler, &H,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o->timeout_s > 0 ? o->timeout_s : 30),
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)(o->threads_max > 0 ? o->threads_max : 64),
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    if (!d) { hat_warn("cannot listen on %s:%d: %s", host, o->port, strerror(errno)); return -1; }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? di->port : o->port;
    if (o->port_file) {
        char *p = xasprintf("%d\n", port);
        write_file_atomic(o->port_file, p, strlen(p));
        free(p);
    }
    hat_warn("listening on http://%s%s%s:%d", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
    while (!*stop) usleep(50 * 1000);
    /* Graceful: no new connections, every job finishes and is answered. */
    hat_warn("shutting down: finishing requests in flight");
    MHD_socket ls = MHD_quiesce_daemon(d);
    serve_drain(s);
    for (int i = 0; i < 100; i++) {      /* let handlers write their answers (5 s at most) */
        const union MHD_DaemonInfo *ci = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!ci || ci->num_connections == 0) break;
        usleep(50 * 1000);
    }
    MHD_stop_daemon(d);
    if (ls != MHD_INVALID_SOCKET) close(ls);
    return 0;
}
