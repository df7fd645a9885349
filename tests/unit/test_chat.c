/* test_chat.c — the Qwen3 chat template: the 30 conformance cases byte for
 * byte, span/mask invariants, Python json.dumps and repr(float) known
 * answers, parse round trips, malformed model output, the tools builder. */
#include "test.h"
#include "chat.h"
#include "jsonl.h"
#include "util.h"

/* ---- helpers ------------------------------------------------------------ */

static char *shared_path(const char *name)
{
    return test_conformance("chat_template", name);
}

static json_t *load_all(const char *name)
{
    char *p = shared_path(name);
    jsonl_reader *r = jsonl_open(p, 0);
    free(p);
    json_t *all = json_array(), *v;
    if (!r) return all;
    while (jsonl_next(r, &v) == 1) json_array_append_new(all, v);
    jsonl_close(r);
    return all;
}

static chat_opts case_opts(const json_t *c)
{
    chat_opts o = CHAT_OPTS_INIT;
    o.tools = json_object_get(c, "tools");
    o.add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt"));
    const json_t *et = json_object_get(c, "enable_thinking");
    if (et) o.enable_thinking = json_is_true(et) ? CHAT_THINK_ON : CHAT_THINK_OFF;
    return o;
}

static char *dumps(const json_t *v)
{
    sbuf b;
    sbuf_init(&b);
    chat_json_dumps(&b, v);
    return sbuf_detach(&b);
}

static char *repr(double x)
{
    static char buf[64];
    return chat_float_repr(x, buf);
}

/* Render or fail the test; returns the text (caller frees t). */
static int render(chat_text *t, const json_t *msgs, const chat_opts *o)
{
    char *err = NULL;
    int rc = chat_render(t, msgs, o, &err);
    if (rc) { fprintf(stderr, "  render: %s\n", err); free(err); }
    return rc;
}

/* Spans cover the text exactly once, in order, non-empty, alternating. */
static int spans_ok(const chat_text *t)
{
    size_t at = 0;
    for (size_t i = 0; i < t->nspans; i++) {
        const chat_span *s = &t->spans[i];
        if (s->off != at || s->len == 0) return 0;
        if (i && s->assistant == t->spans[i - 1].assistant && s->untrusted == t->spans[i - 1].untrusted) return 0;
        if (s->assistant && s->untrusted) return 0;     /* the assistant's own text is trusted */
        at += s->len;
    }
    return at == t->len;
}

/* What the assistant wrote, found independently of the spans: after each
 * "<|im_start|>assistant\n" header, through the next "<|im_end|>". */
static char *assistant_text_by_scan(const chat_text *t, int *count)
{
    static const char hdr[] = "<|im_start|>assistant\n", end[] = "<|im_end|>";
    sbuf b;
    sbuf_init(&b);
    *count = 0;
    const char *p = t->text;
    while ((p = strstr(p, hdr))) {
        p += strlen(hdr);
        const char *e = strstr(p, end);
        if (!e) break;              /* the generation prompt: nothing written */
        e += strlen(end);
        sbuf_add(&b, p, (size_t)(e - p));
        (*count)++;
        p = e;
    }
    return sbuf_detach(&b);
}

/* ---- Python json.dumps / repr(float) ------------------------------------ */

static void float_repr_matches_python(void)
{
    CHECK_STR(repr(129.9), "129.9");
    CHECK_STR(repr(0.1), "0.1");
    CHECK_STR(repr(1e-05), "1e-05");
    CHECK_STR(repr(2.5e-5), "2.5e-05");
    CHECK_STR(repr(0.0001), "0.0001");
    CHECK_STR(repr(0.000123), "0.000123");
    CHECK_STR(repr(1e16), "1e+16");
    CHECK_STR(repr(1e15), "1000000000000000.0");
    CHECK_STR(repr(9999999999999998.0), "9999999999999998.0");
    CHECK_STR(repr(1e22), "1e+22");
    CHECK_STR(repr(12345678901234567890.0), "1.2345678901234567e+19");
    CHECK_STR(repr(0.1 + 0.2), "0.30000000000000004");
    CHECK_STR(repr(100.0), "100.0");
    CHECK_STR(repr(123456789.0), "123456789.0");
    CHECK_STR(repr(-3.14), "-3.14");
    CHECK_STR(repr(-0.0), "-0.0");
    CHECK_STR(repr(0.0), "0.0");
    CHECK_STR(repr(5e-324), "5e-324");
    CHECK_STR(repr(1.5e-323), "1.5e-323");
    CHECK_STR(repr(1.7976931348623157e308), "1.7976931348623157e+308");
    CHECK_STR(repr(NAN), "NaN");
    CHECK_STR(repr(-INFINITY), "-Infinity");
}

/* Significant digits of a repr: mantissa without sign, point, leading and
 * trailing zeros ("100.0" has 1, "0.000123" has 3). */
static int sig_digits(const char *r)
{
    char d[40];
    int n = 0;
    for (const char *p = r; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && (n || *p != '0')) d[n++] = *p;
    while (n > 1 && d[n - 1] == '0') n--;
    return n;
}

/* Over many doubles of every magnitude: repr reads back as the same
 * double, one digit fewer never does, and the exponent form is used
 * exactly below 1e-4 and from 1e16. */
static void float_repr_is_shortest_round_trip(void)
{
    unsigned long long s = 0x9E3779B97F4A7C15ull;
    int bad = 0;
    for (int i = 0; i < 20000; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        double x;
        unsigned long long bits = s & 0xFFEFFFFFFFFFFFFFull;   /* finite */
        memcpy(&x, &bits, sizeof x);
        if (i % 2) x = (double)(long long)(s % 2000000 - 1000000) / 100.0;   /* prices */
        if (x == 0) continue;
        const char *r = repr(x);
        int nd = sig_digits(r);
        char shorter[40];
        snprintf(shorter, sizeof shorter, "%.*e", nd - 2, x);
        int sci = strchr(r, 'e') != NULL;
        if (strtod(r, NULL) != x || (nd > 1 && strtod(shorter, NULL) == x) ||
            sci != (fabs(x) < 1e-4 || fabs(x) >= 1e16)) {
            if (bad++ < 5) fprintf(stderr, "  %.17g -> %s\n", x, r);
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void json_dumps_matches_python(void)
{
    json_t *v = json_loads("{\"a\":\"x\\\"\\\\\\n\\t\\u0001\\u001f\\u007f直😍/\","
                           "\"b\":[1,2.5,null,true,false,{}],\"c\":{},\"d\":[],"
                           "\"e\":-7,\"f\":{\"z\":1,\"a\":[0.1]}}", 0, NULL);
    char *s = dumps(v);
    CHECK_STR(s, "{\"a\": \"x\\\"\\\\\\n\\t\\u0001\\u001f\x7f直😍/\", "
                 "\"b\": [1, 2.5, null, true, false, {}], \"c\": {}, \"d\": [], "
                 "\"e\": -7, \"f\": {\"z\": 1, \"a\": [0.1]}}");
    free(s);
    json_decref(v);

    /* \b \f \r get their short escapes; a NUL inside a string is \u0000 */
    v = json_stringn("\b\f\r\0q", 5);
    s = dumps(v);
    CHECK_STR(s, "\"\\b\\f\\r\\u0000q\"");
    free(s);
    json_decref(v);
}

/* ---- rendering ------------------------------------------------------------ */

static void conformance_cases_byte_for_byte(void)
{
    json_t *cases = load_all("cases.jsonl"), *expect = load_all("expected.jsonl");
    CHECK_EQ_INT(json_array_size(cases), 30);
    CHECK_EQ_INT(json_array_size(expect), 30);
    for (size_t i = 0; i < json_array_size(cases) && i < json_array_size(expect); i++) {
        const json_t *c = json_array_get(cases, i), *e = json_array_get(expect, i);
        CHECK_EQ_INT(json_integer_value(json_object_get(c, "id")),
                     json_integer_value(json_object_get(e, "id")));
        chat_opts o = case_opts(c);
        chat_text t;
        if (render(&t, json_object_get(c, "messages"), &o)) { CHECK(0); continue; }
        const char *want = json_string_value(json_object_get(e, "text"));
        if (t.len != strlen(want) || memcmp(t.text, want, t.len)) {
            fprintf(stderr, "  case %lld differs:\n--- got\n%s\n--- want\n%s\n",
                    json_integer_value(json_object_get(c, "id")), t.text, want);
            CHECK(0);
        }
        chat_text_free(&t);
    }
    json_decref(cases);
    json_decref(expect);
}

/* 120 random conversations full of awkward corners, rendered by jinja2
 * (tests/fixtures/chat/gen_random.py): same bytes, and sound spans. */
static void random_cases_match_jinja(void)
{
    const char *top = getenv("HAT_TOP");
    char *p = xasprintf("%s/tests/fixtures/chat/random.jsonl", top ? top : ".");
    jsonl_reader *r = jsonl_open(p, 0);
    free(p);
    CHECK(r != NULL);
    json_t *c;
    int n = 0;
    while (r && jsonl_next(r, &c) == 1) {
        chat_opts o = case_opts(c);
        chat_text t;
        n++;
        if (render(&t, json_object_get(c, "messages"), &o)) { CHECK(0); json_decref(c); continue; }
        const json_t *want = json_object_get(c, "text");
        if (t.len != json_string_length(want) || memcmp(t.text, json_string_value(want), t.len)) {
            fprintf(stderr, "  random case %lld differs\n",
                    json_integer_value(json_object_get(c, "id")));
            CHECK(0);
        }
        CHECK(spans_ok(&t));
        chat_text_free(&t);
        json_decref(c);
    }
    if (r) jsonl_close(r);
    CHECK_EQ_INT(n, 120);
}

static void spans_cover_text_and_mark_what_the_assistant_wrote(void)
{
    json_t *cases = load_all("cases.jsonl");
    int checked = 0;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        chat_opts o = case_opts(c);
        chat_text t;
        if (render(&t, json_object_get(c, "messages"), &o)) { CHECK(0); continue; }
        CHECK(spans_ok(&t));
        sbuf a;
        sbuf_init(&a);
        int nspans = 0;
        for (size_t k = 0; k < t.nspans; k++)
            if (t.spans[k].assistant) {
                sbuf_add(&a, t.text + t.spans[k].off, t.spans[k].len);
                nspans++;
                /* each assistant span ends with its <|im_end|>, and the
                 * "\n" after it is prompt */
                const chat_span *s = &t.spans[k];
                CHECK(s->len >= 10 && !memcmp(t.text + s->off + s->len - 10, "<|im_end|>", 10));
                CHECK(s->off + s->len < t.len && t.text[s->off + s->len] == '\n');
                CHECK(s->off >= 22 && !memcmp(t.text + s->off - 22, "<|im_start|>assistant\n", 22));
            }
        int nasst = 0, nmsg = 0;
        char *scan = assistant_text_by_scan(&t, &nasst);
        CHECK_STR(a.s ? a.s : "", scan);
        const json_t *msgs = json_object_get(c, "messages");
        for (size_t k = 0; k < json_array_size(msgs); k++)
            nmsg += !strcmp(json_string_value(json_object_get(json_array_get(msgs, k), "role")),
                            "assistant");
        CHECK_EQ_INT(nspans, nmsg);
        CHECK_EQ_INT(nasst, nmsg);
        /* the generation prompt is prompt, not assistant text */
        if (o.add_generation_prompt) CHECK(!t.spans[t.nspans - 1].assistant);
        checked += nmsg;
        free(scan);
        sbuf_free(&a);
        chat_text_free(&t);
    }
    CHECK(checked >= 30);
    json_decref(cases);
}

static json_t *msgs_of(const char *js)
{
    json_error_t e;
    json_t *v = json_loads(js, 0, &e);
    if (!v) fprintf(stderr, "  bad test JSON: %s\n", e.text);
    return v;
}

static char *render_str(const char *msgs_js, const char *tools_js, int gen, int think)
{
    json_t *m = msgs_of(msgs_js), *tools = tools_js ? msgs_of(tools_js) : NULL;
    chat_opts o = { tools, gen, think };
    chat_text t = { 0 };
    char *err = NULL;
    char *s = chat_render(&t, m, &o, &err) ? xasprintf("ERROR: %s", err) : xstrdup(t.text);
    free(err);
    chat_text_free(&t);
    json_decref(m);
    json_decref(tools);
    return s;
}

static void template_details(void)
{
    char *s;
    /* tools [] and absent render alike: no # Tools block */
    const char *sys = "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"hi\"}]";
    char *a = render_str(sys, NULL, 1, CHAT_THINK_UNSET), *b = render_str(sys, "[]", 1, CHAT_THINK_UNSET);
    CHECK_STR(a, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                 "<|im_start|>assistant\n");
    CHECK_STR(a, b);
    free(a); free(b);
    /* enable_thinking: only false adds the empty think block */
    const char *u = "[{\"role\":\"user\",\"content\":\"q\"}]";
    s = render_str(u, NULL, 1, CHAT_THINK_OFF);
    CHECK_STR(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    free(s);
    s = render_str(u, NULL, 1, CHAT_THINK_ON);
    CHECK_STR(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n");
    free(s);
    /* strip('\n') strips newlines only; spaces survive */
    s = render_str("[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
                   "\"content\":\"\\n\\n a\",\"reasoning_content\":\"\\n r \\n\"}]",
                   NULL, 0, CHAT_THINK_UNSET);
    CHECK_STR(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n r \n</think>\n\n a<|im_end|>\n");
    free(s);
    /* a bare tool response is not a query: the assistant after it still thinks */
    s = render_str("[{\"role\":\"user\",\"content\":\"q\"},"
                   "{\"role\":\"assistant\",\"content\":\"A\",\"reasoning_content\":\"r1\"},"
                   "{\"role\":\"user\",\"content\":\"<tool_response>\\nx\\n</tool_response>\"},"
                   "{\"role\":\"assistant\",\"content\":\"B\",\"reasoning_content\":\"r2\"}]",
                   NULL, 0, CHAT_THINK_UNSET);
    CHECK(strstr(s, "<think>\nr1\n</think>\n\nA") && strstr(s, "<think>\nr2\n</think>\n\nB"));
    free(s);
    /* consecutive tool messages share one user turn */
    s = render_str("[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"tool\",\"content\":\"1\"},"
                   "{\"role\":\"tool\",\"content\":\"2\"}]", NULL, 0, CHAT_THINK_UNSET);
    CHECK_STR(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>user\n<tool_response>\n1\n"
                 "</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n");
    free(s);
    /* null content renders as "" (Jinja would raise); flat and string args */
    s = render_str("[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":null,"
                   "\"tool_calls\":[{\"name\":\"f\",\"arguments\":\"{ raw }\"},"
                   "{\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":{\"x\":1e-05}}}]}]",
                   NULL, 0, CHAT_THINK_UNSET);
    CHECK_STR(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
                 "<tool_call>\n{\"name\": \"f\", \"arguments\": { raw }}\n</tool_call>\n"
                 "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": 1e-05}}\n</tool_call><|im_end|>\n");
    free(s);
}

static void bad_conversations_are_refused(void)
{
    static const struct { const char *msgs, *err; } cases[] = {
        { "{}", "messages is not an array" },
        { "[]", "messages is empty" },
        { "[1]", "message 0 is not an object" },
        { "[{\"content\":\"x\"}]", "message 0: role missing" },
        { "[{\"role\":\"critic\",\"content\":\"x\"}]", "message 0: unknown role \"critic\"" },
        { "[{\"role\":\"user\",\"content\":5}]", "message 0: content is not a string" },
        { "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\","
          "\"reasoning_content\":[]}]", "message 1: reasoning_content is not a string" },
        { "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\","
          "\"tool_calls\":{}}]", "message 1: tool_calls is not an array" },
        { "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\","
          "\"tool_calls\":[{\"name\":\"f\"}]}]", "message 1: tool call 0: arguments missing" },
        { "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"\","
          "\"tool_calls\":[{\"function\":{\"name\":3,\"arguments\":{}}}]}]",
          "message 1: tool call 0: name missing or not a string" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *s = render_str(cases[i].msgs, NULL, 0, CHAT_THINK_UNSET);
        char *want = xasprintf("ERROR: %s", cases[i].err);
        if (strncmp(s, want, strlen(want))) {
            fprintf(stderr, "  case %zu: got \"%s\", want \"%s...\"\n", i, s, want);
            CHECK(0);
        }
        free(s);
        free(want);
    }
    char *s = render_str("[{\"role\":\"user\",\"content\":\"q\"}]", "{}", 0, CHAT_THINK_UNSET);
    CHECK_STR(s, "ERROR: tools is not an array");
    free(s);
}

/* ---- parsing ------------------------------------------------------------- */

/* A message whose tool-call arguments are a string that is not exactly
 * what json.dumps would print cannot survive parse (arguments become an
 * object, or an error). */
static int has_noncanonical_string_args(const json_t *m)
{
    const json_t *calls = json_object_get(m, "tool_calls");
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const json_t *tc = json_array_get(calls, k);
        const json_t *f = json_object_get(tc, "function") ? json_object_get(tc, "function") : tc;
        const json_t *args = json_object_get(f, "arguments");
        if (!json_is_string(args)) continue;
        json_t *v = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
        char *d = v ? dumps(v) : NULL;
        int canon = d && json_is_object(v) && !strcmp(d, json_string_value(args));
        free(d);
        json_decref(v);
        if (!canon) return 1;
    }
    return 0;
}

/* Content that holds "</think>" next to an explicit reasoning_content is
 * rendered verbatim; read back as output it is a think block, so such a
 * turn cannot round-trip (man 5 chat, PARSING). */
static int literal_think_tags(const json_t *m)
{
    const json_t *c = json_object_get(m, "content");
    return json_is_string(json_object_get(m, "reasoning_content")) && json_is_string(c) &&
           strstr(json_string_value(c), "</think>");
}

/* render -> take each assistant span -> parse -> substitute -> render:
 * the whole text comes back byte for byte. */
static void parse_round_trips_conformance_turns(void)
{
    json_t *cases = load_all("cases.jsonl");
    int turns = 0, skipped = 0;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        chat_opts o = case_opts(c);
        chat_text t;
        json_t *msgs = json_deep_copy(json_object_get(c, "messages"));
        if (render(&t, msgs, &o)) { CHECK(0); json_decref(msgs); continue; }
        size_t k = 0;
        for (size_t m = 0; m < json_array_size(msgs); m++) {
            json_t *msg = json_array_get(msgs, m);
            if (strcmp(json_string_value(json_object_get(msg, "role")), "assistant")) continue;
            while (k < t.nspans && !t.spans[k].assistant) k++;
            if (k == t.nspans) { CHECK(0); break; }
            const chat_span *s = &t.spans[k++];
            if (has_noncanonical_string_args(msg) || literal_think_tags(msg)) {
                skipped++;
                continue;
            }
            char *err;
            json_t *p = chat_parse_output(t.text + s->off, s->len - 10, &err);
            if (err) { fprintf(stderr, "  case %zu msg %zu: %s\n", i, m, err); CHECK(0); free(err); }
            json_array_set_new(msgs, m, p);
            turns++;
        }
        chat_text t2;
        if (!render(&t2, msgs, &o)) {
            CHECK_STR(t2.text, t.text);
            chat_text_free(&t2);
        } else CHECK(0);
        chat_text_free(&t);
        json_decref(msgs);
    }
    CHECK(turns >= 30);
    /* case 18 (compact JSON), 54 (not JSON), 38 (literal <think> in content) */
    CHECK_EQ_INT(skipped, 3);
    json_decref(cases);
}

static json_t *parse(const char *text, char **err)
{
    return chat_parse_output(text, strlen(text), err);
}

static void parse_known_answers(void)
{
    char *err;
    json_t *m = parse("<think>\nweigh it\n</think>\n\nHello\n<tool_call>\n"
                      "{\"name\": \"get_item\", \"arguments\": {\"id\": \"A1\", \"n\": 2}}\n"
                      "</tool_call>\n<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
                      &err);
    CHECK(err == NULL);
    char *s = json_compact(m);
    CHECK_STR(s, "{\"role\":\"assistant\",\"content\":\"Hello\",\"reasoning_content\":\"weigh it\","
                 "\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"get_item\","
                 "\"arguments\":{\"id\":\"A1\",\"n\":2}}},{\"type\":\"function\",\"function\":"
                 "{\"name\":\"ping\",\"arguments\":{}}}]}");
    free(s);
    json_decref(m);

    /* plain reply: content only, no reasoning_content key */
    m = parse("just text", &err);
    CHECK(err == NULL);
    s = json_compact(m);
    CHECK_STR(s, "{\"role\":\"assistant\",\"content\":\"just text\"}");
    free(s);
    json_decref(m);

    /* the reasoning opened by the prompt: no <think> in the output */
    m = parse("mull\n</think>\n\nok", &err);
    CHECK(err == NULL);
    CHECK_STR(json_string_value(json_object_get(m, "reasoning_content")), "mull");
    CHECK_STR(json_string_value(json_object_get(m, "content")), "ok");
    json_decref(m);

    /* broken UTF-8 becomes U+FFFD, never invalid JSON */
    m = chat_parse_output("ab\xE4\xBD", 4, &err);
    CHECK(err == NULL);
    CHECK_STR(json_string_value(json_object_get(m, "content")), "ab\xEF\xBF\xBD\xEF\xBF\xBD");
    json_decref(m);
}

/* For well-formed output x, render(parse(x)) == render({content: x}) as the
 * final assistant turn: the parse inverts exactly the template's reading. */
static void parse_agrees_with_template_reading(void)
{
    static const char *outs[] = {
        "hello",
        "<think>\nr\n</think>\n\nanswer",
        "<think>r</think>answer",
        "<think>\n\n</think>\n\nanswer",
        "pre<think>a</think>mid</think>\n\nend",
        "<think> spaced </think>\n  two",
        "only<think>open",
        "\n\nleading newlines",
        "text\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5, \"直\"]}}\n</tool_call>",
        "text\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
        "<think>\nplan\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a\\\"b\"}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": null}}\n</tool_call>",
        "",
    };
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) {
        char *err;
        json_t *p = parse(outs[i], &err);
        if (err) { fprintf(stderr, "  out %zu: %s\n", i, err); free(err); CHECK(0); }
        json_t *raw = json_pack("{s:s, s:s}", "role", "assistant", "content", outs[i]);
        json_t *m1 = json_pack("[{s:s, s:s}, o]", "role", "user", "content", "q", p);
        json_t *m2 = json_pack("[{s:s, s:s}, o]", "role", "user", "content", "q", raw);
        chat_text t1, t2;
        if (!render(&t1, m1, NULL) && !render(&t2, m2, NULL)) {
            if (strcmp(t1.text, t2.text)) fprintf(stderr, "  out %zu differs\n", i);
            CHECK_STR(t1.text, t2.text);
            chat_text_free(&t1);
            chat_text_free(&t2);
        } else CHECK(0);
        json_decref(m1);
        json_decref(m2);
    }
}

/* The same agreement over random outputs: text made of think tags,
 * newlines and words, then optionally canonical tool-call blocks. */
static void parse_agrees_with_template_reading_at_random(void)
{
    static const char *bits[] = { "a", "直", "\n", "\n\n", " ", "<think>", "</think>", "<think>\n",
                                  "\n</think>\n\n", "<tool_response>" };
    static const char *calls[] = {
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"a\": [1, 0.5, \"x\\ny\"], \"b\": {\"c\": null}}}\n</tool_call>",
    };
    unsigned long long s = 42;
    int agree = 0, errors = 0;
    for (int i = 0; i < 3000; i++) {
        sbuf x;
        sbuf_init(&x);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int nb = (int)(s >> 33) % 7, nc = (int)(s >> 40) % 3;
        for (int k = 0; k < nb; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            sbuf_puts(&x, bits[(s >> 33) % (sizeof bits / sizeof *bits)]);
        }
        for (int k = 0; k < nc; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            if (x.len) sbuf_putc(&x, '\n');
            sbuf_puts(&x, calls[(s >> 33) % 2]);
        }
        char *err;
        json_t *p = chat_parse_output(x.s ? x.s : "", x.len, &err);
        if (err) {       /* only an unclosed <think> or a tag in the text */
            CHECK(strstr(x.s, "<think>") || strstr(x.s, "tool_call>"));
            errors++;
            free(err);
            json_decref(p);
            sbuf_free(&x);
            continue;
        }
        json_t *raw = json_pack("{s:s, s:s%}", "role", "assistant", "content", x.s ? x.s : "", x.len);
        json_t *m1 = json_pack("[{s:s, s:s}, o]", "role", "user", "content", "q", p);
        json_t *m2 = json_pack("[{s:s, s:s}, o]", "role", "user", "content", "q", raw);
        chat_text t1, t2;
        if (!render(&t1, m1, NULL) && !render(&t2, m2, NULL)) {
            if (strcmp(t1.text, t2.text)) {
                fprintf(stderr, "  differs for \"%s\"\n", x.s);
                CHECK(0);
            } else agree++;
            chat_text_free(&t1);
            chat_text_free(&t2);
        } else CHECK(0);
        json_decref(m1);
        json_decref(m2);
        sbuf_free(&x);
    }
    CHECK(agree > 2000);
    CHECK(errors > 0);
}

static void malformed_output_gives_an_error_and_keeps_the_text(void)
{
    static const struct { const char *text, *err; } bad[] = {
        { "<think>\nstill thinking when the budget ran out", "<think> without </think>" },
        { "  <think>x", "<think> without </think>" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}", "tool call 1: <tool_call> without </tool_call>" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": {}\n</tool_call>", "tool call 1: invalid JSON" },
        { "<tool_call>\n</tool_call>", "tool call 1: invalid JSON" },
        { "<tool_call>\n[1, 2]\n</tool_call>", "tool call 1: expected a JSON object" },
        { "<tool_call>\n{\"arguments\": {}}\n</tool_call>", "tool call 1: missing \"name\"" },
        { "<tool_call>\n{\"name\": 7, \"arguments\": {}}\n</tool_call>", "tool call 1: \"name\" must be a non-empty string" },
        { "<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>", "tool call 1: \"name\" must be a non-empty string" },
        { "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "tool call 1: missing \"arguments\"" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>", "tool call 1: \"arguments\" must be a JSON object" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", "tool call 1: \"arguments\" must be a JSON object" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n"
          "<tool_call>\n{\"name\": \"g\", \"arguments\": 3}\n</tool_call>", "tool call 2: \"arguments\" must be a JSON object" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nAnd then I said",
          "unexpected text after </tool_call>: \"And then I said\"" },
        { "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n"
          "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}", "tool call 2: <tool_call> without </tool_call>" },
        { "<tool_call>{\"name\": \"f\", \"arguments\": {}}<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
          "tool call 1: invalid JSON" },
        { "reply</tool_call>", "</tool_call> without <tool_call>" },
        { "a</tool_call>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
          "</tool_call> without <tool_call>" },
        { "<think>r</think><tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,}}\n</tool_call>",
          "tool call 1: invalid JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *err = NULL;
        json_t *m = parse(bad[i].text, &err);
        if (!err || strncmp(err, bad[i].err, strlen(bad[i].err))) {
            fprintf(stderr, "  bad %zu: got \"%s\", want \"%s...\"\n", i, err ? err : "(none)", bad[i].err);
            CHECK(0);
        }
        /* the message keeps the raw text and nothing else */
        CHECK_STR(json_string_value(json_object_get(m, "content")), bad[i].text);
        CHECK_STR(json_string_value(json_object_get(m, "role")), "assistant");
        CHECK(json_object_size(m) == 2);
        free(err);
        json_decref(m);
    }
    /* NULL text with zero length is an empty reply, not a crash */
    char *err;
    json_t *m = chat_parse_output(NULL, 0, &err);
    CHECK(err == NULL);
    CHECK_STR(json_string_value(json_object_get(m, "content")), "");
    json_decref(m);
}

/* Cut well-formed output at every byte: the parser never crashes, and
 * either succeeds or names a problem (run under SAN=1 for memory errors). */
static void every_prefix_parses_or_errors(void)
{
    const char *full = "<think>\n想一想\n</think>\n\n好的\n<tool_call>\n"
                       "{\"name\": \"get_item\", \"arguments\": {\"id\": \"A1\", \"v\": [1.5, true]}}\n"
                       "</tool_call>";
    size_t n = strlen(full);
    int ok = 0, errs = 0;
    for (size_t k = 0; k <= n; k++) {
        char *err;
        json_t *m = chat_parse_output(full, k, &err);
        CHECK(json_is_string(json_object_get(m, "content")));
        if (err) errs++; else ok++;
        free(err);
        json_decref(m);
    }
    CHECK(ok > 0 && errs > 0);
    char *err;
    json_t *m = chat_parse_output(full, n, &err);
    CHECK(err == NULL);
    CHECK_EQ_INT(json_array_size(json_object_get(m, "tool_calls")), 1);
    json_decref(m);
}

/* ---- the tools list and the generation prompt ------------------------------ */

static void tools_from_harness_schemas(void)
{
    json_t *in = msgs_of(
        "[{\"name\":\"get_item\",\"function\":\"product.lookup\",\"description\":\"Look up\","
        "\"parameters\":{\"type\":\"object\",\"x-note\":1,\"properties\":{"
        "\"id\":{\"type\":\"string\",\"x-function\":\"product_id\"},"
        "\"x-y\":{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"x-function\":\"n\"}}},"
        "\"required\":[\"id\"]}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"ping\",\"strict\":true,"
        "\"parameters\":{\"type\":\"object\",\"properties\":{},\"x-k\":0}}}]");
    char *err;
    json_t *tools = chat_tools_from_schemas(in, &err);
    CHECK(err == NULL);
    char *s = dumps(tools);
    CHECK_STR(s, "[{\"type\": \"function\", \"function\": {\"name\": \"get_item\", \"description\": "
                 "\"Look up\", \"parameters\": {\"type\": \"object\", \"properties\": {\"id\": "
                 "{\"type\": \"string\"}, \"x-y\": {\"type\": \"array\", \"items\": {\"type\": "
                 "\"integer\"}}}, \"required\": [\"id\"]}}}, {\"type\": \"function\", \"function\": "
                 "{\"name\": \"ping\", \"strict\": true, \"parameters\": {\"type\": \"object\", "
                 "\"properties\": {}}}}]");
    free(s);

    /* the list renders into the system block, one tool per line */
    json_t *msgs = msgs_of("[{\"role\":\"user\",\"content\":\"hi\"}]");
    char *p = chat_render_generation_prompt(msgs, tools, CHAT_THINK_UNSET, &err);
    CHECK(p && strstr(p, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_item\"")
          && strstr(p, "}}}\n{\"type\": \"function\", \"function\": {\"name\": \"ping\""));
    CHECK(p && str_endswith(p, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"));
    free(p);
    json_decref(msgs);
    json_decref(tools);
    json_decref(in);

    in = msgs_of("[{\"description\":\"no name\"}]");
    CHECK(chat_tools_from_schemas(in, &err) == NULL);
    CHECK_STR(err, "tool 0: name missing or not a string");
    free(err);
    json_decref(in);
}

int main(void)
{
    RUN(float_repr_matches_python);
    RUN(float_repr_is_shortest_round_trip);
    RUN(json_dumps_matches_python);
    RUN(conformance_cases_byte_for_byte);
    RUN(random_cases_match_jinja);
    RUN(spans_cover_text_and_mark_what_the_assistant_wrote);
    RUN(template_details);
    RUN(bad_conversations_are_refused);
    RUN(parse_round_trips_conformance_turns);
    RUN(parse_known_answers);
    RUN(parse_agrees_with_template_reading);
    RUN(parse_agrees_with_template_reading_at_random);
    RUN(malformed_output_gives_an_error_and_keeps_the_text);
    RUN(every_prefix_parses_or_errors);
    RUN(tools_from_harness_schemas);
    TEST_MAIN_END();
}
