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
 * cancels its job.  A client waiting for a whole answer is watched too:
 * when its socket hangs up, its job is cancelled.
 *
 * Slow clients (slowloris).  The idle timeout alone lets a client that
 * sends one header byte every few seconds hold a connection for ever, so
 * a guard tracks every connection (MHD's connection notifications) and a
 * watchdog thread shuts down the socket of one that has not sent its
 * headers within --header-timeout, or its whole request within
 * --request-timeout.  One address holds at most --per-ip of the
 * --connections ordinary slots.  When they are taken, a new connection
 * takes the slot of one that has waited a second or more for its headers
 * (a slow client, or an idle keep-alive one); when every ordinary slot is
 * busy with real work, one of the --reserve slots, which answer only
 * /health and /metrics and must send their headers within a second.  So
 * a probe gets through whatever the trickling clients do.
 *
 * Order of checks, before any body byte is read: two different
 * Content-Length headers (400: a proxy may have read the other one), the
 * bearer token (401, so an unauthenticated client learns nothing of the
 * routes or limits), the route (404/405), the declared length (413). */
#include "serve.h"
#include "jsonl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- the connection guard ------------------------------------------------------------ */

enum { PH_HEADERS, PH_BODY, PH_ANSWER };
typedef struct track {
    struct MHD_Connection *c;
    MHD_socket  fd;
    char        ip[INET6_ADDRSTRLEN];
    int         reserve, phase, killed;
    double      since;              /* start of the current phase */
    struct track *prev, *next;
} track;

typedef struct {
    pthread_mutex_t mu;
    track          *head;
    int             n_ordinary, n_reserve;
    long            killed, refused;
    int             quit;
    pthread_t       thr;
} guard;

typedef struct {
    serve                 *s;
    const serve_http_opts *o;
    guard                  g;
} http_ctx;

static int opt_or(int v, int dflt) { return v > 0 ? v : dflt; }

static void client_ip(struct MHD_Connection *c, char *out, size_t n)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *a = ci ? ci->client_addr : NULL;
    snprintf(out, n, "?");
    if (a && a->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, out, n);
    if (a && a->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, out, n);
}

/* Ending a connection from outside its thread: shutting its socket down
 * makes MHD's next read or write fail, and MHD closes it as it would any
 * connection the peer dropped.  Its slot is free from now on. */
static void kill_track(guard *g, track *t)
{
    if (t->killed) return;
    t->killed = 1;
    g->killed++;
    if (t->reserve == 1) g->n_reserve--;
    else if (t->reserve == 0) g->n_ordinary--;
    t->reserve = -1;
    shutdown(t->fd, SHUT_RDWR);
}

/* The connection that has waited longest for its request headers, at
 * least min_age seconds (a real client sends them at once; a keep-alive
 * connection between requests waits too, and is as good to close), in
 * the ordinary slots (from ip when given) or in the reserve. */
static track *oldest_waiting(guard *g, int reserve, const char *ip, double min_age, double now)
{
    track *best = NULL;
    for (track *u = g->head; u; u = u->next)
        if (u->reserve == reserve && u->phase == PH_HEADERS && now - u->since >= min_age &&
            (!ip || !strcmp(u->ip, ip)) && (!best || u->since < best->since))
            best = u;
    return best;
}

static int slots_of(guard *g, const char *ip)
{
    int n = 0;
    for (track *u = g->head; u; u = u->next) n += u->reserve == 0 && !strcmp(u->ip, ip);
    return n;
}

/* Fair share: a waiting connection of the address that holds the most
 * ordinary slots, when that is at least two more than `mine`. */
static track *greediest_waiting(guard *g, int mine)
{
    track *best = NULL;
    int most = mine + 1;
    for (track *u = g->head; u; u = u->next) {
        if (u->reserve != 0 || u->phase != PH_HEADERS) continue;
        int n = slots_of(g, u->ip);
        if (n > most || (n == most && best && u->since < best->since && n > mine + 1)) { best = u; most = n; }
    }
    return best;
}

/* A new connection: an ordinary slot if one is free and its address holds
 * fewer than --per-ip.  Else the slot of a connection waiting for its
 * headers: from its own address (past --per-ip), from an address holding
 * two or more slots more than it (fair share, so many addresses trickling
 * cannot keep a new one out), or any that has waited a second or more.
 * Else a reserve slot, evicting the reserve's oldest waiter if need be;
 * else refused. */
static void admit_track(http_ctx *H, track *t)
{
    guard *g = &H->g;
    /* A client that closed its connection between requests still holds
     * a slot until MHD's thread notices: release those first. */
    if (g->n_ordinary >= opt_or(H->o->threads_max, 64) || slots_of(g, t->ip) >= opt_or(H->o->per_ip, 64))
        for (track *u = g->head; u; u = u->next) {
            struct pollfd p = { u->fd, POLLRDHUP, 0 };
            if (u->reserve >= 0 && u->phase == PH_HEADERS && poll(&p, 1, 0) > 0 &&
                (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                kill_track(g, u);
        }
    int same_ip = slots_of(g, t->ip);
    int ip_full = same_ip >= opt_or(H->o->per_ip, 64);
    int full = g->n_ordinary >= opt_or(H->o->threads_max, 64);
    track *v = NULL;
    if (ip_full) v = oldest_waiting(g, 0, t->ip, 1.0, t->since);
    else if (full && !(v = greediest_waiting(g, same_ip))) v = oldest_waiting(g, 0, NULL, 1.0, t->since);
    if (v) kill_track(g, v);
    if (!ip_full && !full) { g->n_ordinary++; return; }
    if (v) { g->n_ordinary++; return; }
    if (H->o->reserve > 0 && g->n_reserve >= H->o->reserve && (v = oldest_waiting(g, 1, NULL, 0, t->since)))
        kill_track(g, v);
    if (g->n_reserve < H->o->reserve) { t->reserve = 1; g->n_reserve++; return; }
    t->reserve = -1;
    t->killed = 1;
    g->refused++;
    shutdown(t->fd, SHUT_RDWR);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    http_ctx *H = cls;
    guard *g = &H->g;
    pthread_mutex_lock(&g->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        track *t = xcalloc(1, sizeof *t);
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        t->c = c;
        t->fd = fi ? fi->connect_fd : MHD_INVALID_SOCKET;
        t->since = hat_now();
        client_ip(c, t->ip, sizeof t->ip);
        admit_track(H, t);
        t->next = g->head;
        if (g->head) g->head->prev = t;
        g->head = t;
        *socket_context = t;
    } else if (*socket_context) {
        track *t = *socket_context;
        if (t->prev) t->prev->next = t->next; else g->head = t->next;
        if (t->next) t->next->prev = t->prev;
        if (t->reserve == 1) g->n_reserve--;
        else if (t->reserve == 0) g->n_ordinary--;
        free(t);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

static track *track_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void set_phase(http_ctx *H, struct MHD_Connection *c, int phase)
{
    pthread_mutex_lock(&H->g.mu);
    track *t = track_of(c);
    if (t) { t->phase = phase; t->since = hat_now(); }
    pthread_mutex_unlock(&H->g.mu);
}

static void *watchdog(void *arg)
{
    http_ctx *H = arg;
    guard *g = &H->g;
    double hdr = opt_or(H->o->header_timeout_s, 10), req = opt_or(H->o->request_timeout_s, 60);
    pthread_mutex_lock(&g->mu);
    while (!g->quit) {
        double t = hat_now();
        for (track *u = g->head; u; u = u->next) {
            double limit = u->phase == PH_HEADERS ? (u->reserve ? 1.0 : hdr) : u->phase == PH_BODY ? req : -1;
            if (limit > 0 && t - u->since > limit) kill_track(g, u);
        }
        pthread_mutex_unlock(&g->mu);
        usleep(100 * 1000);
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

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

/* 1 when the client's socket has hung up (it closed or reset the
 * connection); a pipelined next request only makes it readable. */
static int client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!fi) return 0;
    struct pollfd p = { fi->connect_fd, POLLRDHUP, 0 };
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* serve_wait, looking at the client every 100 ms: a job whose client has
 * gone is cancelled, and its engine sequence freed at the next step. */
static int wait_watching(struct MHD_Connection *c, serve_job *j)
{
    int cancelled = 0;
    while (!serve_wait_for(j, 0.1))
        if (!cancelled && client_gone(c)) { serve_cancel(j); cancelled = 1; }
    return serve_wait(j);
}

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
    status = wait_watching(c, j);
    enum MHD_Result rc = send_json(H, c, status, j->result);
    serve_observe(s, cs->kind, status, hat_now() - cs->t0);
    serve_job_unref(j);
    return rc;
}

/* Collects the values of every Content-Length header. */
static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    const char **first = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) return MHD_YES;
    if (!first[0]) first[0] = value ? value : "";
    else if (strcmp(first[0], value ? value : "")) first[1] = value ? value : "";
    return MHD_YES;
}

/* The headers are in, no body byte is read yet: everything that can be
 * refused on the headers alone is refused here, in the order given at the
 * top of this file. */
static enum MHD_Result first_call(http_ctx *H, struct MHD_Connection *c, conn_state *cs, size_t max)
{
    track *t;
    pthread_mutex_lock(&H->g.mu);
    int reserve = (t = track_of(c)) && t->reserve == 1;
    if (t) { t->phase = PH_BODY; t->since = hat_now(); }
    pthread_mutex_unlock(&H->g.mu);
    const char *lens[2] = { NULL, NULL };
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, lens);
    if (lens[1])
        return send_error(H, c, cs, 400, "two different Content-Length headers");
    if (reserve && cs->kind != SERVE_HEALTH && cs->kind != SERVE_METRICS)
        return send_error(H, c, cs, 503, "every connection slot is taken; retry later "
                                         "(this one is reserved for /health and /metrics)");
    if (cs->kind != SERVE_HEALTH &&
        !serve_auth_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), H->o->token))
        return send_error(H, c, cs, 401, "a valid bearer token is required (Authorization: Bearer TOKEN)");
    if (cs->kind < 0)
        return send_error(H, c, cs, -cs->kind, cs->kind == -404 ? "no such endpoint" : "method not allowed");
    const char *cl = lens[0];
    if (cl && strtoull(cl, NULL, 10) > max) {
        char *m = xasprintf("the body is %s bytes; the limit is %zu", cl, max);
        enum MHD_Result rc = send_error(H, c, cs, 413, m);
        free(m);
        return rc;
    }
    return MHD_YES;
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
        return first_call(H, c, cs, max);
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
    cs->answered = 1;
    set_phase(H, c, PH_ANSWER);
    return answer(H, c, cs);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    conn_state *cs = *con_cls;
    set_phase(cls, c, PH_HEADERS);     /* keep-alive: the next request's headers are due */
    if (!cs) return;
    sbuf_free(&cs->body);
    free(cs);
    *con_cls = NULL;
}

int serve_http_run(serve *s, const serve_http_opts *o, volatile int *stop)
{
    http_ctx H = { s, o, { .head = NULL } };
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
    pthread_mutex_init(&H.g.mu, NULL);
    /* MHD's own cap sits above ours: a connection refused or closed by
     * the guard still holds one of MHD's until its thread has ended. */
    unsigned cap = (unsigned)(2 * opt_or(o->threads_max, 64) + (o->reserve > 0 ? o->reserve : 0));
    struct MHD_Daemon *d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handler, &H,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)opt_or(o->timeout_s, 30),
        MHD_OPTION_CONNECTION_LIMIT, cap,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, &H,
        MHD_OPTION_NOTIFY_COMPLETED, completed, &H, MHD_OPTION_END);
    if (!d) {
        hat_warn("cannot listen on %s:%d: %s", host, o->port, strerror(errno));
        pthread_mutex_destroy(&H.g.mu);
        return -1;
    }
    pthread_create(&H.g.thr, NULL, watchdog, &H);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? di->port : o->port;
    if (o->port_file) {
        char *p = xasprintf("%d\n", port);
        write_file_atomic(o->port_file, p, strlen(p));
        free(p);
    }
    hat_warn("listening on http://%s%s%s:%d", strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port);
    while (!*stop) usleep(50 * 1000);
    /* Graceful: the daemon keeps accepting, so /health answers 503 and new
     * requests 503 while every job in flight finishes and is answered,
     * for --drain-timeout seconds at most (then they end with 503). */
    double dt = o->drain_timeout_s >= 0 ? o->drain_timeout_s : 30;
    hat_warn("shutting down: finishing requests in flight (at most %g s; a second signal exits now)", dt);
    if (serve_drain_for(s, dt)) hat_warn("drain timeout: requests still running were ended with 503");
    for (int i = 0; i < 40; i++) {      /* let handlers write their answers (2 s at most) */
        pthread_mutex_lock(&H.g.mu);
        int busy = 0;
        for (track *u = H.g.head; u; u = u->next) busy += u->phase == PH_ANSWER;
        pthread_mutex_unlock(&H.g.mu);
        if (!busy) break;
        usleep(50 * 1000);
    }
    MHD_stop_daemon(d);
    pthread_mutex_lock(&H.g.mu);
    H.g.quit = 1;
    pthread_mutex_unlock(&H.g.mu);
    pthread_join(H.g.thr, NULL);
    pthread_mutex_destroy(&H.g.mu);
    return 0;
}
