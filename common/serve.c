/* serve.c — the pure half of serve: request parsing and validation,
 * routing, error bodies, bearer tokens, the chat prompt and the OpenAI
 * response objects (see serve.h).  Nothing here touches the network or
 * the engines, so tests and the fuzzer drive it directly. */
#include "serve.h"
#include "chat.h"
#include "chat_encode.h"
#include "jsonl.h"
#include "tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void serve_request_clear(serve_request *r)
{
    json_decref(r->messages); json_decref(r->tools); json_decref(r->stop); json_decref(r->task);
    free(r->tool_name); free(r->id);
    memset(r, 0, sizeof *r);
}

/* ---- field readers: each returns 0, or sets *err and returns a status -------- */

static int bad(char **err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char **err, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    *err = s ? s : xstrdup("bad request");
    return status;
}

static int get_int(const json_t *o, const char *key, long min, long max, long *v, char **err)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) return 0;
    if (json_is_real(x) && json_real_value(x) == floor(json_real_value(x)) &&
        fabs(json_real_value(x)) >= 9e15)     /* 1e30: an integer, out of any range */
        return bad(err, 422, "\"%s\" must be between %ld and %ld", key, min, max);
    if (json_is_real(x) && json_real_value(x) == floor(json_real_value(x)))
        x = NULL, *v = (long)json_real_value(json_object_get(o, key));
    else if (!json_is_integer(x)) return bad(err, 400, "\"%s\" must be an integer", key);
    else *v = (long)json_integer_value(x);
    if (*v < min || *v > max) return bad(err, 422, "\"%s\" must be between %ld and %ld", key, min, max);
    return 0;
}

static int get_num(const json_t *o, const char *key, double min, double max, float *v, char **err)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_number(x)) return bad(err, 400, "\"%s\" must be a number", key);
    double d = json_number_value(x);
    if (!(d >= min && d <= max)) return bad(err, 422, "\"%s\" must be between %g and %g", key, min, max);
    *v = (float)d;
    return 0;
}

static int get_bool(const json_t *o, const char *key, int *v, char **err)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) return 0;
    if (!json_is_boolean(x)) return bad(err, 400, "\"%s\" must be true or false", key);
    *v = json_is_true(x);
    return 0;
}

/* Sampling fields shared by both endpoints. */
static int parse_sampling(const json_t *b, const serve_limits *L, serve_request *r, char **err)
{
    long v;
    int rc;
    r->max_tokens = L->max_tokens;
    r->temperature = 1.0f;
    r->top_p = 1.0f;
    r->enable_thinking = -1;
    v = r->max_tokens;
    if ((rc = get_int(b, "max_completion_tokens", 1, L->max_tokens, &v, err))) return rc;
    if ((rc = get_int(b, "max_tokens", 1, L->max_tokens, &v, err))) return rc;
    r->max_tokens = (int)v;
    if ((rc = get_num(b, "temperature", 0, 2, &r->temperature, err))) return rc;
    if ((rc = get_num(b, "top_p", 1e-6, 1, &r->top_p, err))) return rc;
    v = 0;
    if ((rc = get_int(b, "top_k", 0, 1 << 24, &v, err))) return rc;
    r->top_k = (int)v;
    const json_t *s = json_object_get(b, "seed");
    if (s && !json_is_null(s)) {
        if (!json_is_integer(s)) return bad(err, 400, "\"seed\" must be an integer");
        r->seed = (uint64_t)json_integer_value(s);
        r->seed_set = 1;
    }
    int think = -1;
    const json_t *kw = json_object_get(b, "chat_template_kwargs");
    if (kw && !json_is_object(kw)) return bad(err, 400, "\"chat_template_kwargs\" must be an object");
    if ((rc = get_bool(kw, "enable_thinking", &think, err))) return rc;
    if ((rc = get_bool(b, "enable_thinking", &think, err))) return rc;
    r->enable_thinking = think;
    const json_t *id = json_object_get(b, "id");
    if (id && !json_is_null(id)) {
        if (!json_is_string(id)) return bad(err, 400, "\"id\" must be a string");
        r->id = xstrdup(json_string_value(id));
    }
    return 0;
}

/* OpenAI content: a string, null, or an array of {"type":"text","text"}. */
static int content_text(const json_t *c, size_t i, json_t **out, char **err)
{
    if (!c || json_is_null(c)) { *out = json_string(""); return 0; }
    if (json_is_string(c)) { *out = json_incref((json_t *)c); return 0; }
    if (!json_is_array(c)) return bad(err, 400, "messages[%zu].content must be a string or an array of text parts", i);
    sbuf b;
    sbuf_init(&b);
    size_t k;
    json_t *p;
    json_array_foreach(c, k, p) {
        const json_t *t = json_object_get(p, "text");
        if (!json_is_string(t) || strcmp(json_string_value(json_object_get(p, "type")) ?: "", "text")) {
            sbuf_free(&b);
            return bad(err, 400, "messages[%zu].content[%zu] must be {\"type\":\"text\",\"text\":STRING}", i, k);
        }
        sbuf_add(&b, json_string_value(t), json_string_length(t));
    }
    *out = json_stringn(b.s ? b.s : "", b.len);
    sbuf_free(&b);
    if (!*out) return bad(err, 400, "messages[%zu].content is not valid UTF-8", i);
    return 0;
}

/* One tool call into the template's form, arguments as an object. */
static int tool_call(const json_t *tc, size_t i, size_t k, json_t *calls, char **err)
{
    const json_t *f = json_object_get(tc, "function");
    if (!json_is_object(f)) f = tc;     /* flat {"name","arguments"} */
    const json_t *name = json_object_get(f, "name"), *args = json_object_get(f, "arguments");
    if (!json_is_string(name))
        return bad(err, 400, "messages[%zu].tool_calls[%zu].function.name must be a string", i, k);
    json_t *obj = NULL;
    if (json_is_object(args)) obj = json_incref((json_t *)args);
    else if (json_is_string(args)) {
        obj = json_loadb(json_string_value(args), json_string_length(args), JSON_DECODE_ANY, NULL);
        if (!json_is_object(obj)) json_decref(obj), obj = NULL;
    }
    if (!obj) return bad(err, 400, "messages[%zu].tool_calls[%zu].function.arguments must be a JSON object "
                                   "(or its text)", i, k);
    json_t *c = json_pack("{s:s,s:{s:O,s:o}}", "type", "function", "function", "name", name, "arguments", obj);
    const json_t *id = json_object_get(tc, "id");
    if (json_is_string(id)) json_object_set(c, "id", (json_t *)id);
    json_array_append_new(calls, c);
    return 0;
}

static int parse_messages(const json_t *msgs, const serve_limits *L, json_t **out, char **err)
{
    if (!json_is_array(msgs)) return bad(err, 400, "\"messages\" must be an array");
    if (json_array_size(msgs) == 0) return bad(err, 400, "\"messages\" is empty");
    if (json_array_size(msgs) > (size_t)L->max_messages)
        return bad(err, 413, "%zu messages; the limit is %d", json_array_size(msgs), L->max_messages);
    static const char *const roles[] = { "system", "developer", "user", "assistant", "tool" };
    json_t *res = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        if (!json_is_object(m)) { json_decref(res); return bad(err, 400, "messages[%zu] must be an object", i); }
        const char *role = json_string_value(json_object_get(m, "role"));
        int known = 0;
        for (int k = 0; role && k < 5; k++) known |= !strcmp(role, roles[k]);
        if (!known) {
            json_decref(res);
            return bad(err, 400, "messages[%zu].role must be system, user, assistant or tool", i);
        }
        json_t *content = NULL;
        int rc = content_text(json_object_get(m, "content"), i, &content, err);
        if (rc) { json_decref(res); return rc; }
        json_t *o = json_pack("{s:s,s:o}", "role", strcmp(role, "developer") ? role : "system", "content", content);
        const json_t *rc_ = json_object_get(m, "reasoning_content");
        if (json_is_string(rc_)) json_object_set(o, "reasoning_content", (json_t *)rc_);
        const json_t *name = json_object_get(m, "name");
        if (json_is_string(name)) json_object_set(o, "name", (json_t *)name);
        const json_t *tcs = json_object_get(m, "tool_calls");
        if (tcs && !json_is_null(tcs)) {
            if (!json_is_array(tcs) || strcmp(role, "assistant")) {
                json_decref(o); json_decref(res);
                return bad(err, 400, "messages[%zu].tool_calls must be an array on an assistant message", i);
            }
            json_t *calls = json_array();
            size_t k;
            json_t *tc;
            json_array_foreach(tcs, k, tc)
                if ((rc = tool_call(tc, i, k, calls, err))) break;
            if (rc) { json_decref(calls); json_decref(o); json_decref(res); return rc; }
            json_object_set_new(o, "tool_calls", calls);
        }
        json_array_append_new(res, o);
    }
    *out = res;
    return 0;
}

static int parse_tools(const json_t *b, const serve_limits *L, serve_request *r, char **err)
{
    const json_t *tools = json_object_get(b, "tools");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) return bad(err, 400, "\"tools\" must be an array");
        if (json_array_size(tools) > (size_t)L->max_tools)
            return bad(err, 413, "%zu tools; the limit is %d", json_array_size(tools), L->max_tools);
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t) {
            const json_t *f = json_object_get(t, "function");
            if (!json_is_object(f) || !json_is_string(json_object_get(f, "name")))
                return bad(err, 400, "tools[%zu] must be {\"type\":\"function\",\"function\":{\"name\":...}}", i);
            const json_t *p = json_object_get(f, "parameters");
            if (p && !json_is_object(p)) return bad(err, 400, "tools[%zu].function.parameters must be an object", i);
        }
        if (json_array_size(tools)) {
            char *e = NULL;
            r->tools = chat_tools_from_schemas(tools, &e);
            if (!r->tools) { int rc = bad(err, 400, "tools: %s", e); free(e); return rc; }
        }
    }
    const json_t *tc = json_object_get(b, "tool_choice");
    if (!tc || json_is_null(tc)) return 0;
    const char *s = json_string_value(tc);
    if (s && !strcmp(s, "auto")) r->tool_choice = SERVE_TC_AUTO;
    else if (s && !strcmp(s, "none")) r->tool_choice = SERVE_TC_NONE;
    else if (s && !strcmp(s, "required")) r->tool_choice = SERVE_TC_REQUIRED;
    else if (json_is_object(tc) && json_is_string(json_object_get(json_object_get(tc, "function"), "name"))) {
        r->tool_choice = SERVE_TC_NAMED;
        r->tool_name = xstrdup(json_string_value(json_object_get(json_object_get(tc, "function"), "name")));
    } else return bad(err, 400, "\"tool_choice\" must be \"auto\", \"none\", \"required\" or "
                                "{\"type\":\"function\",\"function\":{\"name\":...}}");
    if (r->tool_choice >= SERVE_TC_REQUIRED && !r->tools)
        return bad(err, 400, "\"tool_choice\" asks for a tool call but there are no \"tools\"");
    if (r->tool_choice == SERVE_TC_NAMED) {
        int found = 0;
        size_t i;
        json_t *t;
        json_array_foreach(r->tools, i, t)
            found |= !strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")) ?: "",
                             r->tool_name);
        if (!found) return bad(err, 400, "\"tool_choice\" names \"%s\", which is not in \"tools\"", r->tool_name);
    }
    return 0;
}

static int parse_stop(const json_t *b, const serve_limits *L, serve_request *r, char **err)
{
    const json_t *s = json_object_get(b, "stop");
    if (!s || json_is_null(s)) return 0;
    json_t *a = json_array();
    if (json_is_string(s)) json_array_append(a, (json_t *)s);
    else if (json_is_array(s)) json_array_extend(a, (json_t *)s);
    else { json_decref(a); return bad(err, 400, "\"stop\" must be a string or an array of strings"); }
    r->stop = a;
    if (json_array_size(a) > (size_t)L->max_stop)
        return bad(err, 413, "%zu stop strings; the limit is %d", json_array_size(a), L->max_stop);
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > 256 ||
            memchr(json_string_value(x), 0, json_string_length(x)))
            return bad(err, 400, "stop[%zu] must be a non-empty string of at most 256 bytes", i);
    }
    if (!json_array_size(a)) { json_decref(a); r->stop = NULL; }
    return 0;
}

static int parse_chat(const json_t *b, const serve_limits *L, serve_request *r, char **err)
{
    int rc;
    if ((rc = parse_sampling(b, L, r, err))) return rc;
    if ((rc = parse_messages(json_object_get(b, "messages"), L, &r->messages, err))) return rc;
    if ((rc = parse_tools(b, L, r, err))) return rc;
    if ((rc = parse_stop(b, L, r, err))) return rc;
    if ((rc = get_bool(b, "stream", &r->stream, err))) return rc;
    long n = 1;
    if ((rc = get_int(b, "n", 1, 1, &n, err))) return rc;
    const json_t *model = json_object_get(b, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) return bad(err, 400, "\"model\" must be a string");
    /* Whatever the template would refuse is refused here, as a 400. */
    char *e = NULL, *p = serve_chat_prompt(r, &e);
    if (!p) { rc = bad(err, 400, "messages: %s", e); free(e); return rc; }
    free(p);
    return 0;
}

/* A viewer message becomes a task with no gold: the agent loop needs only
 * the viewer; faults and gold come with a full "task". */
static int parse_agent(const json_t *b, const serve_limits *L, serve_request *r, char **err)
{
    int rc;
    if ((rc = parse_sampling(b, L, r, err))) return rc;
    long v = 0;
    if ((rc = get_int(b, "max_turns", 1, ROLLOUT_MAX_TURNS, &v, err))) return rc;
    r->max_turns = (int)v;
    const json_t *task = json_object_get(b, "task"), *viewer = json_object_get(b, "viewer");
    const json_t *msg = json_object_get(b, "message"), *nick = json_object_get(b, "nick");
    if (task) {
        if (!json_is_object(task)) return bad(err, 400, "\"task\" must be an object");
        char *e = task_check(task);
        if (e) { rc = bad(err, 400, "task: %s", e); free(e); return rc; }
        viewer = json_object_get(task, "viewer");
        r->task = json_deep_copy(task);
    } else {
        if (viewer) {
            if (!json_is_object(viewer)) return bad(err, 400, "\"viewer\" must be an object {\"nick\",\"text\"}");
            msg = json_object_get(viewer, "text");
            nick = json_object_get(viewer, "nick");
        }
        if (!json_is_string(msg)) return bad(err, 400, "give \"message\" (a string), \"viewer\" {\"nick\",\"text\"} or \"task\"");
        if (nick && !json_is_string(nick)) return bad(err, 400, "\"nick\" must be a string");
        if (json_string_length(msg) == 0) return bad(err, 400, "the viewer message is empty");
        r->task = json_pack("{s:s,s:{s:s,s:O}}", "id", r->id ? r->id : "agent", "viewer",
                            "nick", nick ? json_string_value(nick) : "viewer", "text", msg);
    }
    const json_t *text = json_object_get(json_object_get(r->task, "viewer"), "text");
    if (json_string_length(text) > (size_t)L->max_text)
        return bad(err, 413, "the viewer message is %zu bytes; the limit is %d", json_string_length(text), L->max_text);
    if (json_string_length(json_object_get(json_object_get(r->task, "viewer"), "nick")) > 256)
        return bad(err, 413, "the nick is over 256 bytes");
    return 0;
}

int serve_parse_json(int kind, const json_t *body, const serve_limits *L, serve_request *r, char **err)
{
    memset(r, 0, sizeof *r);
    *err = NULL;
    r->kind = kind;
    if (!json_is_object(body)) return bad(err, 400, "the request body must be a JSON object");
    int rc = kind == SERVE_CHAT ? parse_chat(body, L, r, err)
           : kind == SERVE_AGENT ? parse_agent(body, L, r, err)
           : bad(err, 404, "no such endpoint");
    if (rc) serve_request_clear(r), r->kind = kind;
    return rc;
}

int serve_parse(int kind, const char *body, size_t len, const serve_limits *L, serve_request *r, char **err)
{
    memset(r, 0, sizeof *r);
    *err = NULL;
    if (len > L->max_body) return bad(err, 413, "the body is %zu bytes; the limit is %zu", len, L->max_body);
    if (json_too_deep(body, len, 64)) return bad(err, 400, "the JSON nests deeper than 64 levels");
    json_error_t je;
    json_t *b = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    /* A well-formed number too big for any field ("max_tokens": 1e30 as an
     * integer) is a value out of range, like any other: 422. */
    if (!b && json_error_code(&je) == json_error_numeric_overflow)
        return bad(err, 422, "a number at line %d, column %d is out of range: %s", je.line, je.column, je.text);
    if (!b) return bad(err, 400, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
    int rc = serve_parse_json(kind, b, L, r, err);
    json_decref(b);
    return rc;
}

/* ---- routing, errors, auth ------------------------------------------------------ */

int serve_route(const char *method, const char *path)
{
    static const struct { const char *path, *method; int kind; } routes[] = {
        { "/v1/chat/completions", "POST", SERVE_CHAT }, { "/v1/agent", "POST", SERVE_AGENT },
        { "/health", "GET", SERVE_HEALTH }, { "/metrics", "GET", SERVE_METRICS } };
    if (!method || !path) return -400;
    size_t n = strcspn(path, "?");
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
        if (strlen(routes[i].path) == n && !memcmp(routes[i].path, path, n))
            return !strcmp(method, routes[i].method) ||
                   (routes[i].kind >= SERVE_HEALTH && !strcmp(method, "HEAD")) ? routes[i].kind : -405;
    return -404;
}

char *serve_error_body(int status, const char *message)
{
    const char *type = status == 401 ? "authentication_error" : status == 429 ? "rate_limit_error"
                     : status >= 500 ? "server_error" : "invalid_request_error";
    json_t *e = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", message ? message : "", "type", type,
                          "code", status);
    if (!e) e = json_pack("{s:{s:s,s:s,s:i}}", "error", "message", "(message not valid UTF-8)", "type", type,
                          "code", status);
    char *s = json_compact(e);
    json_decref(e);
    return s;
}

int serve_auth_ok(const char *header, const char *token)
{
    if (!token || !*token) return 1;
    if (!header || strncasecmp(header, "Bearer ", 7)) return 0;
    const char *got = header + 7;
    while (*got == ' ') got++;
    size_t n = strlen(token), m = strlen(got);
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(token[i] ^ (i < m ? got[i] : 0));
    return diff == 0;
}

/* ---- prompts and streaming ---------------------------------------------------------- */

char *serve_forced_prefix(const serve_request *r)
{
    if (r->tool_choice == SERVE_TC_REQUIRED) return xstrdup("<tool_call>\n");
    if (r->tool_choice != SERVE_TC_NAMED) return xstrdup("");
    sbuf b;
    sbuf_init(&b);
    json_t *name = json_string(r->tool_name);
    sbuf_puts(&b, "<tool_call>\n{\"name\": ");
    chat_json_dumps(&b, name);
    sbuf_puts(&b, ", \"arguments\": ");
    json_decref(name);
    return sbuf_detach(&b);
}

int serve_chat_encode(const serve_request *r, const tokenizer *t, tok_ids *ids, char **err)
{
    if (chat_prompt_encode(t, r->messages, r->tool_choice == SERVE_TC_NONE ? NULL : r->tools,
                           r->enable_thinking, ids, err))
        return 400;
    char *pre = serve_forced_prefix(r);   /* the server's own text: its control tokens count */
    int bad = tok_encode(t, pre, strlen(pre), ids);
    free(pre);
    if (bad) { *err = xstrdup("the tool name is not valid UTF-8"); return 400; }
    return 0;
}

char *serve_chat_prompt(const serve_request *r, char **err)
{
    const json_t *tools = r->tool_choice == SERVE_TC_NONE ? NULL : r->tools;
    char *p = chat_render_generation_prompt(r->messages, tools, r->enable_thinking, err);
    if (!p) return NULL;
    char *pre = serve_forced_prefix(r), *s = xasprintf("%s%s", p, pre);
    free(p);
    free(pre);
    return s;
}

size_t serve_find_stop(const char *text, size_t len, const json_t *stop)
{
    size_t best = len;
    size_t i;
    json_t *s;
    json_array_foreach(stop, i, s) {
        const char *p = memmem(text, len, json_string_value(s), json_string_length(s));
        if (p && (size_t)(p - text) < best) best = (size_t)(p - text);
    }
    return best;
}

/* Length of the longest proper suffix of text that is a prefix of pat. */
static size_t partial(const char *text, size_t len, const char *pat, size_t plen)
{
    for (size_t k = plen - 1 < len ? plen - 1 : len; k > 0; k--)
        if (!memcmp(text + len - k, pat, k)) return k;
    return 0;
}

size_t serve_stream_ready(const char *text, size_t len, const json_t *stop, int final, size_t *start)
{
    size_t s = 0;
    if (len >= 7 && !memcmp(text, "<think>", 7)) {
        const char *e = memmem(text, len, "</think>", 8);
        if (!e) { *start = 0; return 0; }          /* reasoning still open: nothing yet */
        s = (size_t)(e - text) + 8;
    } else if (!final && partial(text, len, "<think>", 7) == len) {
        *start = 0;
        return 0;
    }
    while (s < len && text[s] == '\n') s++;
    *start = s;
    size_t end = len;
    const char *tc = memmem(text + s, len - s, "<tool_call>", 11);
    if (tc) end = (size_t)(tc - text);
    else if (!final) {
        size_t hold = partial(text + s, len - s, "<tool_call>", 11);
        size_t i;
        json_t *x;
        json_array_foreach(stop, i, x) {
            size_t k = partial(text + s, len - s, json_string_value(x), json_string_length(x));
            if (k > hold) hold = k;
        }
        end -= hold;
        /* an unfinished UTF-8 character decodes as U+FFFD for now */
        while (end >= s + 3 && !memcmp(text + end - 3, "\xEF\xBF\xBD", 3)) end -= 3;
    }
    if (tc || !final)
        while (end > s && text[end - 1] == '\n') end--;
    return end;
}

/* ---- responses --------------------------------------------------------------------- */

json_t *serve_openai_message(const json_t *msg, int with_reasoning)
{
    json_t *o = json_pack("{s:s}", "role", "assistant");
    const json_t *calls = json_object_get(msg, "tool_calls");
    const json_t *content = json_object_get(msg, "content");
    if (json_array_size(calls) && json_string_length(content) == 0) json_object_set_new(o, "content", json_null());
    else if (json_is_string(content)) json_object_set(o, "content", (json_t *)content);
    else json_object_set_new(o, "content", json_string(""));
    const json_t *rc = json_object_get(msg, "reasoning_content");
    if (with_reasoning && json_is_string(rc)) json_object_set(o, "reasoning_content", (json_t *)rc);
    if (json_array_size(calls)) {
        json_t *a = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(calls, i, c) {
            const json_t *f = json_object_get(c, "function");
            char *args = json_compact(json_object_get(f, "arguments"));
            char id[32];
            snprintf(id, sizeof id, "call_%zu", i);
            json_array_append_new(a, json_pack("{s:s,s:s,s:{s:O,s:s}}", "id", id, "type", "function", "function",
                                               "name", json_object_get(f, "name"), "arguments", args ? args : "{}"));
            free(args);
        }
        json_object_set_new(o, "tool_calls", a);
    }
    return o;
}

json_t *serve_chat_response(const char *id, long created, const char *model, const json_t *msg,
                            const char *finish, int prompt_tokens, int completion_tokens)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s}],s:{s:i,s:i,s:i}}", "id", id, "object",
                     "chat.completion", "created", (json_int_t)created, "model", model ? model : "hat",
                     "choices", "index", 0, "message", serve_openai_message(msg, 1), "finish_reason", finish,
                     "usage", "prompt_tokens", prompt_tokens, "completion_tokens", completion_tokens,
                     "total_tokens", prompt_tokens + completion_tokens);
}
