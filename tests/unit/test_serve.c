/* test_serve.c — serve's pure functions (request validation, routing,
 * auth, streaming cut points, OpenAI objects), the metrics registry,
 * loadgen's client helpers and statistics, the scheduler in process with
 * the scripted teacher, and the REPL through a real pseudo-terminal. */
#include "test.h"
#include "test_pty.h"

#include "harness.h"
#include "jsonl.h"
#include "loadgen.h"
#include "metrics.h"
#include "serve.h"
#include "model.h"
#include "tokenizer.h"
#include "world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

static const serve_limits L = SERVE_LIMITS_INIT;

/* body → status, and a substring of the message. */
static void bad(int kind, const char *body, int want, const char *msg)
{
    serve_request r;
    char *err = NULL;
    int st = serve_parse(kind, body, strlen(body), &L, &r, &err);
    if (st != want || !err || !strstr(err, msg))
        fprintf(stderr, "  body %s: status %d (%s), wanted %d (%s)\n", body, st, err ? err : "-", want, msg);
    CHECK_EQ_INT(st, want);
    CHECK(err && strstr(err, msg));
    free(err);
    serve_request_clear(&r);
}

static void test_bad_requests(void)
{
    bad(SERVE_AGENT, "", 400, "malformed JSON");
    bad(SERVE_AGENT, "{\"message\":", 400, "malformed JSON");
    bad(SERVE_AGENT, "[]", 400, "must be a JSON object");
    bad(SERVE_AGENT, "{}", 400, "give \"message\"");
    bad(SERVE_AGENT, "{\"message\":\"\"}", 400, "empty");
    bad(SERVE_AGENT, "{\"message\":1}", 400, "give \"message\"");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"nick\":3}", 400, "\"nick\" must be a string");
    bad(SERVE_AGENT, "{\"viewer\":\"x\"}", 400, "\"viewer\" must be an object");
    bad(SERVE_AGENT, "{\"task\":{\"id\":\"t\"}}", 400, "task: ");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"max_turns\":0}", 422, "\"max_turns\" must be between 1 and 255");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"max_tokens\":1.5}", 400, "\"max_tokens\" must be an integer");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"max_tokens\":99999}", 422, "between 1 and 1024");
    /* too big for any integer type: still a value out of range (issue 16) */
    bad(SERVE_AGENT, "{\"message\":\"x\",\"max_tokens\":1000000000000000000000000000000}", 422, "out of range");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"max_tokens\":1e30}", 422, "between 1 and 1024");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"temperature\":-1}", 422, "\"temperature\"");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"top_p\":0}", 422, "\"top_p\"");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"seed\":\"1\"}", 400, "\"seed\" must be an integer");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"id\":7}", 400, "\"id\" must be a string");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"message\":\"y\"}", 400, "duplicate");
    bad(SERVE_AGENT, "{\"message\":\"x\",\"chat_template_kwargs\":{\"enable_thinking\":1}}", 400, "true or false");
    char deep[300];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    bad(SERVE_AGENT, deep, 400, "deeper than 64");
    bad(SERVE_CHAT, "{}", 400, "\"messages\" must be an array");
    bad(SERVE_CHAT, "{\"messages\":[]}", 400, "empty");
    bad(SERVE_CHAT, "{\"messages\":[1]}", 400, "messages[0] must be an object");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"bot\"}]}", 400, "messages[0].role");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "content must be a string");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]}", 400, "content[0]");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}", 400, "assistant message");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"[1]\"}}]}]}",
        400, "arguments must be a JSON object");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}", 400, "\"tools\" must be an array");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\"}]}", 400, "tools[0]");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":\"maybe\"}", 400, "\"tool_choice\"");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}}],"
                    "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"b\"}}}", 400, "not in \"tools\"");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"\"]}", 400, "stop[0]");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 413, "5 stop strings");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}", 400, "\"stream\"");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3}", 422, "\"n\"");
    bad(SERVE_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"model\":1}", 400, "\"model\"");
    /* limits */
    serve_limits small = L;
    small.max_body = 10;
    serve_request r;
    char *err = NULL;
    CHECK_EQ_INT(serve_parse(SERVE_AGENT, "{\"message\":\"hello\"}", 19, &small, &r, &err), 413);
    free(err);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "{\"messages\":[");
    for (int i = 0; i < 300; i++) sbuf_printf(&b, "%s{\"role\":\"user\",\"content\":\"m\"}", i ? "," : "");
    sbuf_puts(&b, "]}");
    bad(SERVE_CHAT, b.s, 413, "300 messages; the limit is 256");
    sbuf_reset(&b);
    sbuf_puts(&b, "{\"message\":\"");
    for (int i = 0; i < 5000; i++) sbuf_putc(&b, 'a');
    sbuf_puts(&b, "\"}");
    bad(SERVE_AGENT, b.s, 413, "limit is 4096");
    sbuf_free(&b);
}

static void test_good_requests(void)
{
    serve_request r;
    char *err = NULL;
    const char *body = "{\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        "\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"x\\\": 1}\"}}]},"
        "{\"role\":\"tool\",\"content\":\"ok\",\"tool_call_id\":\"c1\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"parameters\":{\"type\":\"object\"}}}],"
        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get\"}},"
        "\"stop\":\"END\",\"max_tokens\":5,\"temperature\":0,\"seed\":9,\"stream\":true,\"user\":\"ignored\"}";
    CHECK_EQ_INT(serve_parse(SERVE_CHAT, body, strlen(body), &L, &r, &err), 0);
    CHECK(err == NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(r.messages, 0), "role")), "system");
    CHECK_STR(json_string_value(json_object_get(json_array_get(r.messages, 1), "content")), "ab");
    const json_t *args = json_object_get(json_object_get(json_array_get(json_object_get(json_array_get(r.messages, 2),
                                         "tool_calls"), 0), "function"), "arguments");
    CHECK(json_is_object(args) && json_integer_value(json_object_get(args, "x")) == 1);
    CHECK_EQ_INT(r.tool_choice, SERVE_TC_NAMED);
    CHECK_EQ_INT(r.max_tokens, 5);
    CHECK(r.seed_set && r.seed == 9 && r.stream && r.temperature == 0);
    CHECK_EQ_INT((int)json_array_size(r.stop), 1);
    char *pre = serve_forced_prefix(&r);
    CHECK_STR(pre, "<tool_call>\n{\"name\": \"get\", \"arguments\": ");
    char *p = serve_chat_prompt(&r, &err);
    CHECK(p && strstr(p, "<tools>") && str_endswith(p, pre));
    free(p);
    free(pre);
    serve_request_clear(&r);
    /* tool_choice none drops the tools from the prompt */
    const char *b2 = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\","
                     "\"function\":{\"name\":\"get\"}}],\"tool_choice\":\"none\"}";
    CHECK_EQ_INT(serve_parse(SERVE_CHAT, b2, strlen(b2), &L, &r, &err), 0);
    p = serve_chat_prompt(&r, &err);
    CHECK(p && !strstr(p, "<tools>") && str_endswith(p, "<|im_start|>assistant\n"));
    free(p);
    serve_request_clear(&r);
    /* agent: a viewer message becomes a task; defaults */
    const char *b3 = "{\"viewer\":{\"nick\":\"momo\",\"text\":\"hi\"},\"id\":\"q1\"}";
    CHECK_EQ_INT(serve_parse(SERVE_AGENT, b3, strlen(b3), &L, &r, &err), 0);
    CHECK_STR(json_string_value(json_object_get(r.task, "id")), "q1");
    CHECK_STR(json_string_value(json_object_get(json_object_get(r.task, "viewer"), "nick")), "momo");
    CHECK_EQ_INT(r.max_tokens, L.max_tokens);
    CHECK(r.temperature == 1.0f && r.top_p == 1.0f && !r.seed_set && r.enable_thinking == -1);
    serve_request_clear(&r);
}

static void test_route_auth_errors(void)
{
    CHECK_EQ_INT(serve_route("POST", "/v1/chat/completions"), SERVE_CHAT);
    CHECK_EQ_INT(serve_route("POST", "/v1/agent?x=1"), SERVE_AGENT);
    CHECK_EQ_INT(serve_route("GET", "/health"), SERVE_HEALTH);
    CHECK_EQ_INT(serve_route("HEAD", "/metrics"), SERVE_METRICS);
    CHECK_EQ_INT(serve_route("GET", "/v1/agent"), -405);
    CHECK_EQ_INT(serve_route("POST", "/v1/agents"), -404);
    CHECK_EQ_INT(serve_route("POST", "/"), -404);
    CHECK(serve_auth_ok(NULL, NULL) && serve_auth_ok("x", ""));
    CHECK(serve_auth_ok("Bearer abc", "abc") && serve_auth_ok("bearer  abc", "abc"));
    CHECK(!serve_auth_ok(NULL, "abc") && !serve_auth_ok("Bearer ab", "abc") && !serve_auth_ok("Bearer abcd", "abc"));
    CHECK(!serve_auth_ok("Basic abc", "abc"));
    char *e = serve_error_body(429, "full");
    CHECK_STR(e, "{\"error\":{\"message\":\"full\",\"type\":\"rate_limit_error\",\"code\":429}}");
    free(e);
    e = serve_error_body(400, "bad \xff");    /* not UTF-8: still a JSON error */
    CHECK(e && strstr(e, "\"code\":400"));
    free(e);
}

static size_t ready(const char *t, const json_t *stop, int final, size_t *start)
{
    return serve_stream_ready(t, strlen(t), stop, final, start);
}

static void test_stream_cuts(void)
{
    size_t s;
    json_t *stop = json_pack("[s]", "STOP");
    CHECK_EQ_INT(ready("hello", NULL, 0, &s), 5);
    CHECK_EQ_INT(s, 0);
    CHECK_EQ_INT(ready("\n\nhi", NULL, 0, &s), 4);
    CHECK_EQ_INT(s, 2);
    CHECK_EQ_INT(ready("hi <tool", NULL, 0, &s), 3);       /* might become <tool_call> */
    CHECK_EQ_INT(ready("hi <tool", NULL, 1, &s), 8);
    CHECK_EQ_INT(ready("hi\n<tool_call>{", NULL, 1, &s), 2);
    CHECK_EQ_INT(ready("hi ST", stop, 0, &s), 3);           /* might become STOP */
    CHECK_EQ_INT(ready("<think>abc", NULL, 0, &s), 0);      /* reasoning still open */
    CHECK_EQ_INT(ready("<think>a</think>\n\nok", NULL, 0, &s), 20);
    CHECK_EQ_INT(s, 18);
    CHECK_EQ_INT(ready("<thi", NULL, 0, &s), 0);
    CHECK_EQ_INT(ready("caf\xEF\xBF\xBD", NULL, 0, &s), 3); /* an unfinished character */
    CHECK_EQ_INT(ready("line\n", NULL, 0, &s), 4);
    CHECK_EQ_INT((int)serve_find_stop("abSTOPcdSTOP", 12, stop), 2);
    CHECK_EQ_INT((int)serve_find_stop("abc", 3, stop), 3);
    CHECK_EQ_INT((int)serve_find_stop("abc", 3, NULL), 3);
    json_decref(stop);
}

static void test_openai_objects(void)
{
    json_t *msg = json_pack("{s:s,s:s,s:[{s:s,s:{s:s,s:{s:i}}}]}", "role", "assistant", "content", "",
                            "tool_calls", "type", "function", "function", "name", "get", "arguments", "x", 1);
    json_t *r = serve_chat_response("id1", 5, "m", msg, "tool_calls", 10, 3);
    char *s = json_compact(r);
    CHECK_STR(s, "{\"id\":\"id1\",\"object\":\"chat.completion\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,"
                 "\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_0\",\"type\":\"function\","
                 "\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"x\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}],"
                 "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3,\"total_tokens\":13}}");
    free(s);
    json_decref(r);
    json_decref(msg);
}

static void test_metrics(void)
{
    metrics *mx = metrics_new();
    double b[3] = { 0.1, 1, 10 };
    CHECK_EQ_INT(metrics_define(mx, "req_total", METRIC_COUNTER, "Requests.", NULL, 0), 0);
    CHECK_EQ_INT(metrics_define(mx, "req_total", METRIC_COUNTER, "again", NULL, 0), -1);
    CHECK_EQ_INT(metrics_define(mx, "bad name", METRIC_COUNTER, "", NULL, 0), -1);
    double ub[2] = { 2, 1 };
    CHECK_EQ_INT(metrics_define(mx, "h2", METRIC_HISTOGRAM, "", ub, 2), -1);
    metrics_define(mx, "lat_seconds", METRIC_HISTOGRAM, "Latency.", b, 3);
    metrics_define(mx, "depth", METRIC_GAUGE, "Depth.", NULL, 0);
    metrics_add(mx, "req_total", "code=\"200\"", 2);
    metrics_add(mx, "req_total", "code=\"200\"", 1);
    CHECK_EQ_INT(metrics_add(mx, "req_total", "", -1), -1);     /* counters only grow */
    CHECK_EQ_INT(metrics_add(mx, "nope", "", 1), -1);
    metrics_set(mx, "depth", "", 4);
    metrics_observe(mx, "lat_seconds", "", 0.05);
    metrics_observe(mx, "lat_seconds", "", 0.5);
    metrics_observe(mx, "lat_seconds", "", 0.5);
    metrics_observe(mx, "lat_seconds", "", 50);
    double sum;
    CHECK_NEAR(metrics_get(mx, "req_total", "code=\"200\"", NULL), 3, 0);
    CHECK_NEAR(metrics_get(mx, "lat_seconds", "", &sum), 4, 0);
    CHECK_NEAR(sum, 51.05, 1e-9);
    CHECK_NEAR(metrics_quantile(mx, "lat_seconds", "", 0.5), 0.55, 1e-9);   /* rank 2: middle of (0.1, 1] */
    CHECK_NEAR(metrics_quantile(mx, "lat_seconds", "", 1.0), 10, 0);
    CHECK(isnan(metrics_quantile(mx, "depth", "", 0.5)));
    sbuf o;
    sbuf_init(&o);
    metrics_render(mx, &o);
    CHECK_STR(o.s, "# HELP req_total Requests.\n# TYPE req_total counter\nreq_total{code=\"200\"} 3\n"
                   "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
                   "lat_seconds_bucket{le=\"0.1\"} 1\nlat_seconds_bucket{le=\"1\"} 3\nlat_seconds_bucket{le=\"10\"} 3\n"
                   "lat_seconds_bucket{le=\"+Inf\"} 4\nlat_seconds_sum 51.049999999999997\nlat_seconds_count 4\n"
                   "# HELP depth Depth.\n# TYPE depth gauge\ndepth 4\n");
    sbuf_free(&o);
    metrics_free(mx);
}

static void test_loadgen_helpers(void)
{
    double v[] = { 5, 1, 4, 2, 3 };
    CHECK_NEAR(lg_percentile(v, 5, 50), 3, 0);
    CHECK_NEAR(lg_percentile(v, 5, 95), 4.8, 1e-12);
    CHECK_NEAR(lg_percentile(v, 5, 0), 1, 0);
    CHECK(isnan(lg_percentile(v, 0, 50)));
    char *err = NULL;
    CHECK_EQ_INT(lg_url_check("http://127.0.0.1:8080/", &err), 0);
    CHECK_EQ_INT(lg_url_check("http://[::1]:81/api", &err), 0);
    CHECK_EQ_INT(lg_url_check("ftp://x", &err), -1);
    CHECK(err && strstr(err, "ftp"));
    free(err);
    CHECK_EQ_INT(lg_url_check("http://x:99999", &err), -1);
    free(err);
    lg_sample s[4] = { { 200, 1.0, 0.5, 10 }, { 200, 3.0, 1.0, 30 }, { 429, 0.01, 0.01, 0 }, { 0, 0, 0, 0 } };
    json_t *r = lg_report(s, 4, 2.0, 2.0);
    CHECK_EQ_INT(json_integer_value(json_object_get(r, "ok")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(r, "errors"), "429")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(r, "errors"), "transport")), 1);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(r, "latency_ms"), "p50")), 2000, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(r, "tokens_per_s")), 20, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(r, "over_budget")), 0.75, 1e-9);  /* one slow, two failed */
    sbuf t;
    sbuf_init(&t);
    lg_table(&t, r);
    CHECK(strstr(t.s, "latency ms") && strstr(t.s, "errors 429"));
    sbuf_free(&t);
    json_decref(r);
}

/* ---- the scheduler in process, with the scripted teacher ---------------------------- */

static world *W;
static json_t *H;

static serve *new_server(int slots, int queue)
{
    serve_config c = { 0 };
    c.w = W;
    c.slots = slots;
    c.queue_max = queue;
    c.limits = L;
    c.seed = 1;
    c.policy = "teacher";
    c.model_name = "teacher";
    char *err = NULL;
    serve *s = serve_new(&c, H, &err);
    CHECK(s != NULL);
    if (!s) fprintf(stderr, "  %s\n", err);
    free(err);
    return s;
}

static void test_scheduler(void)
{
    serve *s = new_server(2, 8);
    if (!s) return;
    json_t *body = json_pack("{s:s,s:s}", "message", "hello there", "nick", "momo"), *resp = NULL;
    CHECK_EQ_INT(serve_run(s, SERVE_AGENT, body, &resp), 200);
    CHECK(json_is_true(json_object_get(resp, "accepted")));
    const char *reply = json_string_value(json_object_get(resp, "reply"));
    CHECK(reply && !strncmp(reply, "@momo", 5));
    json_decref(resp);
    /* a bad body through the same path */
    json_t *b2 = json_pack("{s:i}", "message", 3);
    CHECK_EQ_INT(serve_run(s, SERVE_AGENT, b2, &resp), 400);
    CHECK(json_is_object(json_object_get(resp, "error")));
    json_decref(resp);
    json_decref(b2);
    json_t *b3 = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", "x");
    CHECK_EQ_INT(serve_run(s, SERVE_CHAT, b3, &resp), 503);
    json_decref(resp);
    json_decref(b3);
    /* a reload that fails keeps the harness; one that works swaps it */
    char *err = NULL;
    CHECK_EQ_INT(serve_reload_now(s, "/nonexistent/harness", &err), -1);
    CHECK(err && strstr(err, "does not load"));
    free(err);
    json_t *st = serve_stats(s);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "reload_failures")), 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(st, "requests")), 1);
    json_decref(st);
    /* many requests through 2 slots: every one answered */
    serve_job *jobs[8];
    for (int i = 0; i < 8; i++) {
        serve_request r;
        char *e = NULL;
        CHECK_EQ_INT(serve_parse_json(SERVE_AGENT, body, &L, &r, &e), 0);
        int status;
        jobs[i] = serve_job_new(s, &r, &status, &e);
        serve_request_clear(&r);
        CHECK_EQ_INT(serve_submit(s, jobs[i]), 0);
    }
    serve_request r;
    char *e = NULL;
    int status;
    serve_parse_json(SERVE_AGENT, body, &L, &r, &e);
    serve_job *extra = serve_job_new(s, &r, &status, &e);
    serve_request_clear(&r);
    int q = serve_submit(s, extra);        /* 429 unless the scheduler already took some */
    CHECK(q == 0 || q == 429);
    if (!q) serve_wait(extra);
    serve_job_unref(extra);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(serve_wait(jobs[i]), 200);
        serve_job_unref(jobs[i]);
    }
    serve_drain(s);
    CHECK(serve_draining(s));
    CHECK_EQ_INT(serve_run(s, SERVE_AGENT, body, &resp), 503);
    json_decref(resp);
    json_decref(body);
    CHECK(metrics_get(serve_metrics(s), "hat_requests_total", "path=\"/v1/agent\",code=\"200\"", NULL) >= 1);
    serve_free(s);
}

/* ---- a model whose every token decodes to the byte 0x00 ------------------------------ */

/* Attention and MLP write nothing (wo, wdown = 0) and every embedding row
 * is the same, so the final hidden state is the norm's weight whatever the
 * context; the untied lm_head row of the byte-0x00 token points along it.
 * Sampling then yields that token every time: the reproducer for a NUL
 * byte in model output (issue 16). */
static model *nul_model(const tokenizer *t, int nul_id)
{
    model_config c = {
        .vocab_size = tok_vocab_size(t), .hidden_size = 16, .intermediate_size = 32, .n_layers = 1,
        .n_heads = 2, .n_kv_heads = 1, .head_dim = 8, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
        .tie_word_embeddings = 0, .max_position_embeddings = 256, .bos_token_id = -1, .eos_token_id = -1,
    };
    model *m = model_new(&c);
    model_init_random(m, 3, 0.5f);
    int C = c.hidden_size;
    for (int i = 0; i < C * c.n_heads * c.head_dim; i++) m->w.layers[0].wo[i] = 0;
    for (int i = 0; i < C * c.intermediate_size; i++) m->w.layers[0].wdown[i] = 0;
    for (int v = 0; v < c.vocab_size; v++)
        for (int i = 0; i < C; i++) {
            m->w.wte[(size_t)v * C + i] = 1.0f;
            m->w.lm_head[(size_t)v * C + i] = v == nul_id ? 4.0f : 0.0f;
        }
    for (int i = 0; i < C; i++) m->w.norm[i] = 1.0f;
    return m;
}

/* The small byte-level tokenizer committed for the fuzzers. */
static tokenizer *small_tokenizer(void)
{
    char *p = xasprintf("%s/tests/fuzz/tokenizer.json", getenv("HAT_TOP") ? getenv("HAT_TOP") : ".");
    char *err = NULL;
    tokenizer *t = tok_load(p, &err);
    if (!t) fprintf(stderr, "  %s: %s\n", p, err);
    free(p);
    free(err);
    return t;
}

static void test_nul_token(void)
{
    tokenizer *t = small_tokenizer();
    char *err = NULL;
    CHECK(t != NULL);
    if (!t) return;
    int nul = tok_token_id(t, "\xC4\x80");          /* "Ā": the byte-level form of 0x00 */
    CHECK(nul >= 0);
    model *m = nul_model(t, nul);
    serve_config c = { 0 };
    c.m = m;
    c.t = t;
    c.w = W;
    c.slots = 2;
    c.queue_max = 8;
    c.limits = L;
    c.seed = 1;
    c.model_name = "nul";
    serve *s = serve_new(&c, H, &err);
    CHECK(s != NULL);
    if (s) {
        for (int stream = 0; stream < 2; stream++) {
            /* a stop string makes the scheduler cut the text on every step */
            json_t *body = json_pack("{s:[{s:s,s:s}],s:i,s:b,s:[s]}", "messages", "role", "user", "content",
                                     "hi", "max_tokens", 40, "stream", stream, "stop", "zz"), *resp = NULL;
            CHECK_EQ_INT(serve_run(s, SERVE_CHAT, body, &resp), 200);
            const json_t *msg = json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message");
            const json_t *content = json_object_get(msg, "content");
            CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(resp, "usage"), "completion_tokens")), 40);
            CHECK_EQ_INT(json_string_length(content), 40);
            int zeros = 1;
            for (size_t i = 0; i < json_string_length(content); i++) zeros &= json_string_value(content)[i] == 0;
            CHECK(zeros);
            char *dump = json_compact(resp);
            CHECK(dump && strstr(dump, "\"content\":\"\\u0000\\u0000"));
            free(dump);
            json_decref(resp);
            json_decref(body);
        }
        serve_free(s);
    }
    model_free(m);
    tok_free(t);
}

/* ---- slow clients on loopback ------------------------------------------------------- */

/* A TCP connection to 127.0.0.1:port from source address src (any
 * 127.0.0.0/8 address is local on Linux), or -1. */
static int connect_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    inet_pton(AF_INET, src, &a.sin_addr);
    struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    struct timeval tv = { 3, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || connect(fd, (struct sockaddr *)&d, sizeof d)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One request from src; returns the HTTP status (0: none) and sets
 * *seconds to the time until the whole answer was read. */
static int http_req(const char *src, int port, const char *method, const char *path, const char *body,
                    double *seconds)
{
    double t0 = hat_now();
    int fd = connect_from(src, port), status = 0;
    if (fd >= 0) {
        char *req = xasprintf("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                              method, path, body ? strlen(body) : 0, body ? body : "");
        if (send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req)) {
            char buf[4096];
            ssize_t n, got = 0;
            while ((n = recv(fd, buf + got, sizeof buf - 1 - (size_t)got, 0)) > 0 && got + n < (ssize_t)sizeof buf - 1)
                got += n;
            buf[got] = 0;
            if (got > 12) status = atoi(buf + 9);
        }
        free(req);
        close(fd);
    }
    *seconds = hat_now() - t0;
    return status;
}

typedef struct { serve *s; serve_http_opts o; volatile int stop; int rc; } http_thread;
static void *run_http(void *arg)
{
    http_thread *h = arg;
    h->rc = serve_http_run(h->s, &h->o, &h->stop);
    return NULL;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) { double t = v[k]; v[k] = v[k - 1]; v[k - 1] = t; }
    return n ? v[n / 2] : 0;
}

/* 200 connections from 20 addresses send one header line every 0.5 s
 * (reconnecting when dropped) for 3 s; meanwhile /health and a chat
 * request from another address must answer: /health within 1 s, chat
 * within 5 times its latency on a quiet server (and 1 s at least, for a
 * loaded test machine).  The figures go to the log. */
static void test_slowloris(void)
{
    tokenizer *t = small_tokenizer();
    char *err = NULL;
    CHECK(t != NULL);
    if (!t) return;
    model *m = nul_model(t, tok_token_id(t, "\xC4\x80"));
    serve_config c = { 0 };
    c.m = m; c.t = t; c.w = W; c.slots = 4; c.queue_max = 64; c.limits = L; c.seed = 1;
    c.policy = "teacher"; c.model_name = "nul";
    serve *s = serve_new(&c, H, &err);
    CHECK(s != NULL);
    if (!s) { free(err); model_free(m); tok_free(t); return; }
    http_thread h = { .s = s };
    char *pf = xasprintf("%s/slow.port", test_tmpdir());
    unlink(pf);
    h.o = (serve_http_opts){ .host = "127.0.0.1", .port = 0, .threads_max = 64, .timeout_s = 30, .port_file = pf,
                             .per_ip = 16, .reserve = 4, .header_timeout_s = 2, .request_timeout_s = 4,
                             .drain_timeout_s = 5 };
    pthread_t thr;
    pthread_create(&thr, NULL, run_http, &h);
    int port = 0;
    for (int i = 0; i < 100 && !port; i++) {
        size_t n;
        char *txt = read_file(pf, &n);
        if (txt) port = atoi(txt);
        free(txt);
        if (!port) usleep(50000);
    }
    CHECK(port > 0);
    const char *chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}";
    double base_h[5], base_c[5], sec;
    for (int i = 0; i < 5 && port; i++) {
        CHECK_EQ_INT(http_req("127.0.0.2", port, "GET", "/health", NULL, &base_h[i]), 200);
        CHECK_EQ_INT(http_req("127.0.0.2", port, "POST", "/v1/chat/completions", chat, &base_c[i]), 200);
    }
    enum { NSLOW = 200 };
    int fds[NSLOW];
    char src[NSLOW][16];
    for (int i = 0; i < NSLOW; i++) {
        snprintf(src[i], sizeof src[i], "127.0.0.%d", 10 + i % 20);
        fds[i] = port ? connect_from(src[i], port) : -1;
        if (fds[i] >= 0) send(fds[i], "GET /health HTTP/1.1\r\n", 22, MSG_NOSIGNAL);
    }
    double worst_h = 0, worst_c = 0, t_end = hat_now() + 3, next_line = hat_now();
    int probes = 0, ok_h = 0, ok_c = 0;
    long redials = 0;
    while (port && hat_now() < t_end) {
        if (hat_now() >= next_line) {
            next_line = hat_now() + 0.5;
            for (int i = 0; i < NSLOW; i++) {
                struct pollfd q = { fds[i], POLLRDHUP, 0 };
                if (fds[i] < 0 || (poll(&q, 1, 0) > 0 && q.revents) ||
                    send(fds[i], "X-Slow: 1\r\n", 11, MSG_NOSIGNAL) != 11) {
                    if (fds[i] >= 0) close(fds[i]);
                    fds[i] = connect_from(src[i], port);
                    if (fds[i] >= 0) send(fds[i], "GET /health HTTP/1.1\r\n", 22, MSG_NOSIGNAL);
                    redials++;
                }
            }
        }
        ok_h += http_req("127.0.0.2", port, "GET", "/health", NULL, &sec) == 200;
        if (sec > worst_h) worst_h = sec;
        ok_c += http_req("127.0.0.2", port, "POST", "/v1/chat/completions", chat, &sec) == 200;
        if (sec > worst_c) worst_c = sec;
        probes++;
        usleep(200000);
    }
    for (int i = 0; i < NSLOW; i++) if (fds[i] >= 0) close(fds[i]);
    double bh = median(base_h, 5), bc = median(base_c, 5);
    fprintf(stderr, "# slowloris: %d slow connections from 20 addresses, %ld redials in 3 s; %d probes: "
            "/health worst %.1f ms (quiet median %.1f ms), chat worst %.1f ms (quiet median %.1f ms)\n",
            NSLOW, redials, probes, worst_h * 1e3, bh * 1e3, worst_c * 1e3, bc * 1e3);
    CHECK(probes >= 5);
    CHECK_EQ_INT(ok_h, probes);
    CHECK_EQ_INT(ok_c, probes);
    CHECK(worst_h < 1.0);
    CHECK(worst_c < (5 * bc > 1.0 ? 5 * bc : 1.0));
    h.stop = 1;
    pthread_join(thr, NULL);
    CHECK_EQ_INT(h.rc, 0);
    serve_free(s);
    free(pf);
    model_free(m);
    tok_free(t);
}

/* ---- the REPL through a pseudo-terminal --------------------------------------------- */

static void test_repl_pty(void)
{
    char *hist = xasprintf("%s/serve.history", test_tmpdir());
    int fd;
    pid_t pid = forkpty(&fd, NULL, NULL, NULL);
    if (pid < 0) { perror("forkpty"); CHECK(0); return; }
    if (pid == 0) {
        serve *s = new_server(2, 8);
        int rc = s ? serve_repl_run(s, stdin, stdout, hist) : 1;
        serve_free(s);
        _exit(rc);
    }
    const char *const script[] = {
        "viewer> ", "/harness\r",
        "harness orange-live 2026.11.4", "/nick kiki\r",
        "nick kiki", "hello host\r",
        "host> @kiki", "/trace\r",
        "assistant: call load_skill", "/stats\r",
        "1 requests", "/bogus\r",
        "unknown command /bogus", "/harness /nonexistent\r",
        "refused: /nonexistent does not load", "\x1b[A\x1b[A\x1b[A\x1b[A\r",   /* history: /trace */
        "assistant: call load_skill", "/reset\r",
        "reset", "/quit\r", NULL };
    sbuf seen;
    sbuf_init(&seen);
    int ok = 1;
    for (int i = 0; script[i] && ok; i += 2) {
        ok = expect(fd, &seen, script[i]);
        if (!ok) fprintf(stderr, "  pty: no '%s' in: %s\n", script[i], seen.s ? seen.s : "");
        if (ok) { sbuf_reset(&seen); type(fd, script[i + 1]); }
    }
    CHECK(ok);
    int st = 0;
    for (int i = 0; i < 50 && waitpid(pid, &st, WNOHANG) == 0; i++) usleep(100000);
    if (waitpid(pid, &st, WNOHANG) == 0) { kill(pid, SIGKILL); waitpid(pid, &st, 0); }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(fd);
    size_t n = 0;
    char *h = read_file(hist, &n);
    CHECK(h && strstr(h, "hello host") && strstr(h, "/nick kiki"));   /* history written */
    free(h);
    sbuf_free(&seen);
    free(hist);
}

int main(void)
{
    RUN(test_bad_requests);
    RUN(test_good_requests);
    RUN(test_route_auth_errors);
    RUN(test_stream_cuts);
    RUN(test_openai_objects);
    RUN(test_metrics);
    RUN(test_loadgen_helpers);
    char *hp = xasprintf("%s/examples/harness", getenv("HAT_TOP") ? getenv("HAT_TOP") : ".");
    H = harness_load(hp);
    free(hp);
    json_t *wj = world_generate(2, 30);
    W = wj ? world_from_json(wj, "world") : NULL;
    CHECK(H && W);
    if (H && W) {
        RUN(test_scheduler);
        RUN(test_nul_token);
        RUN(test_slowloris);
        RUN(test_repl_pty);
    }
    world_free(W);
    json_decref(H);
    TEST_MAIN_END();
}
