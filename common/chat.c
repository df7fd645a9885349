/* chat.c — rendering conversations exactly as Qwen3's chat template does.
 *
 * A line-by-line port of the Jinja "chat_template" in Qwen3's
 * tokenizer_config.json (the comments quote the template), with the
 * Python-compatible JSON printer its tojson filter needs and the tools-list
 * builder.  While rendering, every byte is tagged as prompt or
 * assistant-written, giving the spans a tokenizer turns into a loss mask.
 * Parsing model output back into a message lives in chat_parse.c. */
#include "chat.h"
#include "strv.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Python json.dumps ------------------------------------------------ */

char *chat_float_repr(double x, char *buf)
{
    if (isnan(x)) return strcpy(buf, "NaN");
    if (isinf(x)) return strcpy(buf, x > 0 ? "Infinity" : "-Infinity");
    if (x == 0) return strcpy(buf, signbit(x) ? "-0.0" : "0.0");

    /* The shortest %.Ne that reads back as x has repr()'s digits: the
     * correctly rounded N+1-digit decimal is the closest of its length. */
    char e[40];
    for (int p = 0; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, x);
        if (strtod(e, NULL) == x) break;
    }
    char digits[24];
    int nd = 0, neg = 0;
    const char *s = e;
    if (*s == '-') { neg = 1; s++; }
    for (; *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp10 = atoi(s + 1);
    int decpt = exp10 + 1;     /* value = 0.DIGITS x 10^decpt */

    char *o = buf;
    if (neg) *o++ = '-';
    if (decpt > -4 && decpt <= 16) {          /* Python: fixed notation */
        if (decpt <= 0) {
            *o++ = '0'; *o++ = '.';
            for (int i = 0; i < -decpt; i++) *o++ = '0';
            memcpy(o, digits, nd); o += nd;
        } else if (decpt >= nd) {
            memcpy(o, digits, nd); o += nd;
            for (int i = nd; i < decpt; i++) *o++ = '0';
            *o++ = '.'; *o++ = '0';
        } else {
            memcpy(o, digits, decpt); o += decpt;
            *o++ = '.';
            memcpy(o, digits + decpt, nd - decpt); o += nd - decpt;
        }
        *o = 0;
    } else {                                  /* d[.ddd]e+XX */
        *o++ = digits[0];
        if (nd > 1) { *o++ = '.'; memcpy(o, digits + 1, nd - 1); o += nd - 1; }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    return buf;
}

/* json.dumps escapes only '"', '\\' and control characters below 0x20
 * when ensure_ascii is off; everything else, DEL included, is raw UTF-8. */
static void dump_string(sbuf *b, const char *s, size_t n)
{
    sbuf_putc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        switch (c) {
        case '"':  esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) { snprintf(u, sizeof u, "\\u%04x", c); esc = u; }
        }
        if (!esc) continue;
        sbuf_add(b, s + run, i - run);
        sbuf_puts(b, esc);
        run = i + 1;
    }
    sbuf_add(b, s + run, n - run);
    sbuf_putc(b, '"');
}

void chat_json_dumps(sbuf *b, const json_t *v)
{
    char num[40];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        sbuf_putc(b, '{');
        json_object_foreach((json_t *)v, k, x) {
            if (!first) sbuf_puts(b, ", ");
            first = 0;
            dump_string(b, k, strlen(k));
            sbuf_puts(b, ": ");
            chat_json_dumps(b, x);
        }
        sbuf_putc(b, '}');
        break;
    }
    case JSON_ARRAY:
        sbuf_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) sbuf_puts(b, ", ");
            chat_json_dumps(b, json_array_get(v, i));
        }
        sbuf_putc(b, ']');
        break;
    case JSON_STRING:
        dump_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        sbuf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        sbuf_puts(b, chat_float_repr(json_real_value(v), num));
        break;
    case JSON_TRUE:  sbuf_puts(b, "true"); break;
    case JSON_FALSE: sbuf_puts(b, "false"); break;
    case JSON_NULL:  sbuf_puts(b, "null"); break;
    }
}

/* ---- string views and Python's str methods ----------------------------- */

/* ---- the renderer: text plus assistant/prompt spans -------------------- */

typedef struct {
    sbuf b;
    chat_span *spans;
    size_t nspans, cap;
    char *err;
} renderer;

/* Append bytes tagged prompt (0) or assistant-written (1), trusted or not;
 * a span grows while the tags stay the same, so neighbours always differ. */
static void emit_as(renderer *r, const char *s, size_t n, int assistant, int untrusted)
{
    if (!n) return;
    chat_span *last = r->nspans ? &r->spans[r->nspans - 1] : NULL;
    if (last && last->assistant == assistant && last->untrusted == untrusted) {
        last->len += n;
    } else {
        if (r->nspans == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 16;
            r->spans = xrealloc(r->spans, r->cap * sizeof *r->spans);
        }
        chat_span sp = { r->b.len, n, assistant, untrusted };
        r->spans[r->nspans++] = sp;
    }
    sbuf_add(&r->b, s, n);
}

static void emit(renderer *r, const char *s, size_t n, int assistant) { emit_as(r, s, n, assistant, 0); }
static void put(renderer *r, const char *s, int a) { emit(r, s, strlen(s), a); }
static void putv(renderer *r, strv v, int a) { emit(r, v.s, v.n, a); }
/* a user's or a tool's content: never control tokens */
static void put_untrusted(renderer *r, strv v) { emit_as(r, v.s, v.n, 0, 1); }

static int fail(renderer *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(renderer *r, const char *fmt, ...)
{
    if (r->err) return -1;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&r->err, fmt, ap) < 0) hat_die("out of memory");
    va_end(ap);
    return -1;
}

/* A string field that may be absent or null ("" then); anything else but a
 * string is an error. */
static int get_text(renderer *r, const json_t *m, const char *key, size_t i, strv *out)
{
    const json_t *v = json_object_get(m, key);
    *out = sv("", 0);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v))
        return fail(r, "message %zu: %s is not a string", i, key);
    *out = sv(json_string_value(v), json_string_length(v));
    return 0;
}

static const char *role_of(const json_t *m)
{
    const char *s = json_string_value(json_object_get(m, "role"));
    return s ? s : "";
}

/* The "# Tools" system block, the first system message folded into it. */
static int render_tools_header(renderer *r, const json_t *msgs, const json_t *tools)
{
    /* {%- if tools %} ... {%- else %} ... */
    const json_t *m0 = json_array_get(msgs, 0);
    strv c0;
    if (get_text(r, m0, "content", 0, &c0)) return -1;
    int sys0 = !strcmp(role_of(m0), "system");
    if (json_array_size(tools)) {
        put(r, "<|im_start|>system\n", 0);
        if (sys0) { putv(r, c0, 0); put(r, "\n\n", 0); }
        put(r, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>", 0);
        sbuf j;
        sbuf_init(&j);
        for (size_t i = 0; i < json_array_size(tools); i++) {
            sbuf_reset(&j);
            chat_json_dumps(&j, json_array_get(tools, i));
            put(r, "\n", 0);
            emit(r, j.s, j.len, 0);
        }
        sbuf_free(&j);
        put(r, "\n</tools>\n\nFor each function call, return a json object with function name and "
               "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
               "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
               "</tool_call><|im_end|>\n", 0);
    } else if (sys0) {
        put(r, "<|im_start|>system\n", 0);
        putv(r, c0, 0);
        put(r, "<|im_end|>\n", 0);
    }
    return 0;
}

/* ns.last_query_index: the last user message that is not a bare tool
 * response (scanning backwards); len-1 when there is none. */
static long last_query_index(const json_t *msgs)
{
    size_t n = json_array_size(msgs);
    for (size_t k = n; k-- > 0;) {
        const json_t *m = json_array_get(msgs, k);
        if (strcmp(role_of(m), "user")) continue;
        const json_t *c = json_object_get(m, "content");
        strv v = sv(json_is_string(c) ? json_string_value(c) : "",
                    json_is_string(c) ? json_string_length(c) : 0);
        if (!(starts_with(v, "<tool_response>") && ends_with(v, "</tool_response>")))
            return (long)k;
    }
    return (long)n - 1;
}

static int render_tool_calls(renderer *r, const json_t *calls, strv content, size_t i)
{
    /* {%- if message.tool_calls %}: null and [] are false */
    if (!calls || json_is_null(calls)) return 0;
    if (!json_is_array(calls)) return fail(r, "message %zu: tool_calls is not an array", i);
    sbuf j;
    sbuf_init(&j);
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const json_t *tc = json_array_get(calls, k);
        if (!json_is_object(tc)) {
            sbuf_free(&j);
            return fail(r, "message %zu: tool call %zu is not an object", i, k);
        }
        if ((k == 0 && content.n) || k > 0) put(r, "\n", 1);
        /* {%- if tool_call.function %}{%- set tool_call = tool_call.function %} */
        const json_t *fn = json_object_get(tc, "function");
        if (json_is_object(fn) && json_object_size(fn)) tc = fn;
        const json_t *name = json_object_get(tc, "name");
        const json_t *args = json_object_get(tc, "arguments");
        if (!json_is_string(name) || !args) {
            sbuf_free(&j);
            return fail(r, "message %zu: tool call %zu: %s", i, k,
                        !json_is_string(name) ? "name missing or not a string"
                                              : "arguments missing");
        }
        put(r, "<tool_call>\n{\"name\": \"", 1);
        emit(r, json_string_value(name), json_string_length(name), 1);
        put(r, "\", \"arguments\": ", 1);
        if (json_is_string(args)) {
            emit(r, json_string_value(args), json_string_length(args), 1);
        } else {
            sbuf_reset(&j);
            chat_json_dumps(&j, args);
            emit(r, j.s, j.len, 1);
        }
        put(r, "}\n</tool_call>", 1);
    }
    sbuf_free(&j);
    return 0;
}

static int render_assistant(renderer *r, const json_t *m, size_t i, size_t n, long lqi)
{
    strv content, reasoning = sv("", 0);
    if (get_text(r, m, "content", i, &content)) return -1;
    const json_t *rc = json_object_get(m, "reasoning_content");
    if (rc && !json_is_null(rc)) {
        if (get_text(r, m, "reasoning_content", i, &reasoning)) return -1;
    } else if (find_first(content, "</think>") >= 0) {
        /* content.split('</think>')[-1].lstrip('\n') and
         * split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        strv whole = content;
        long last = find_last(whole, "</think>");
        content = lstrip_nl(sv(whole.s + last + 8, whole.n - last - 8));
        strv head = rstrip_nl(sv(whole.s, find_first(whole, "</think>")));
        long open = find_last(head, "<think>");
        if (open >= 0) head = sv(head.s + open + 7, head.n - open - 7);
        reasoning = lstrip_nl(head);
    }
    put(r, "<|im_start|>assistant\n", 0);
    if ((long)i > lqi && (i == n - 1 || reasoning.n)) {
        put(r, "<think>\n", 1);
        putv(r, rstrip_nl(lstrip_nl(reasoning)), 1);
        put(r, "\n</think>\n\n", 1);
        putv(r, lstrip_nl(content), 1);
    } else {
        putv(r, content, 1);
    }
    if (render_tool_calls(r, json_object_get(m, "tool_calls"), content, i)) return -1;
    put(r, "<|im_end|>", 1);
    put(r, "\n", 0);
    return 0;
}

static int render_message(renderer *r, const json_t *msgs, size_t i, long lqi)
{
    size_t n = json_array_size(msgs);
    const json_t *m = json_array_get(msgs, i);
    if (!json_is_object(m)) return fail(r, "message %zu is not an object", i);
    const json_t *rv = json_object_get(m, "role");
    if (!json_is_string(rv)) return fail(r, "message %zu: role missing or not a string", i);
    const char *role = json_string_value(rv);
    strv content;
    if (get_text(r, m, "content", i, &content)) return -1;

    if (!strcmp(role, "user") || (!strcmp(role, "system") && i > 0)) {
        put(r, "<|im_start|>", 0);
        put(r, role, 0);
        put(r, "\n", 0);
        if (!strcmp(role, "user")) put_untrusted(r, content);
        else putv(r, content, 0);
        put(r, "<|im_end|>\n", 0);
    } else if (!strcmp(role, "assistant")) {
        return render_assistant(r, m, i, n, lqi);
    } else if (!strcmp(role, "tool")) {
        if (i == 0 || strcmp(role_of(json_array_get(msgs, i - 1)), "tool"))
            put(r, "<|im_start|>user", 0);
        put(r, "\n<tool_response>\n", 0);
        put_untrusted(r, content);
        put(r, "\n</tool_response>", 0);
        if (i == n - 1 || strcmp(role_of(json_array_get(msgs, i + 1)), "tool"))
            put(r, "<|im_end|>\n", 0);
    } else if (strcmp(role, "system")) {
        return fail(r, "message %zu: unknown role \"%s\"", i, role);
    }
    return 0;
}

int chat_render(chat_text *out, const json_t *messages, const chat_opts *opt, char **err)
{
    static const chat_opts defaults = CHAT_OPTS_INIT;
    if (!opt) opt = &defaults;
    renderer r = { .err = NULL };
    sbuf_init(&r.b);
    memset(out, 0, sizeof *out);
    *err = NULL;

    if (!json_is_array(messages)) fail(&r, "messages is not an array");
    else if (!json_array_size(messages)) fail(&r, "messages is empty");
    else if (opt->tools && !json_is_array(opt->tools) && !json_is_null(opt->tools))
        fail(&r, "tools is not an array");
    else if (json_is_object(json_array_get(messages, 0)))
        render_tools_header(&r, messages, opt->tools);

    long lqi = r.err ? 0 : last_query_index(messages);
    for (size_t i = 0; !r.err && i < json_array_size(messages); i++)
        render_message(&r, messages, i, lqi);

    if (!r.err && opt->add_generation_prompt) {
        put(&r, "<|im_start|>assistant\n", 0);
        if (opt->enable_thinking == CHAT_THINK_OFF) put(&r, "<think>\n\n</think>\n\n", 0);
    }
    if (r.err) {
        *err = r.err;
        sbuf_free(&r.b);
        free(r.spans);
        return -1;
    }
    out->len = r.b.len;
    out->text = sbuf_detach(&r.b);
    out->spans = r.spans;
    out->nspans = r.nspans;
    return 0;
}

size_t *chat_untrusted_ranges(const chat_text *t, size_t first, size_t last, size_t from, size_t *n)
{
    size_t *v = xmalloc((2 * (last - first) + 2) * sizeof *v);
    *n = 0;
    for (size_t i = first; i < last; i++)
        if (t->spans[i].untrusted && t->spans[i].off >= from) {
            v[2 * *n] = t->spans[i].off - from;
            v[2 * *n + 1] = t->spans[i].len;
            (*n)++;
        }
    return v;
}

void chat_text_free(chat_text *t)
{
    free(t->text);
    free(t->spans);
    memset(t, 0, sizeof *t);
}

char *chat_render_generation_prompt(const json_t *messages, const json_t *tools,
                                    int enable_thinking, char **err)
{
    chat_opts o = { tools, 1, enable_thinking };
    chat_text t;
    if (chat_render(&t, messages, &o, err)) return NULL;
    free(t.spans);
    return t.text;
}

/* ---- the tools list ---------------------------------------------------- */

static json_t *strip_schema(const json_t *s);

/* Copy a map whose values are schemas (properties, $defs, ...). */
static json_t *strip_schema_map(const json_t *m)
{
    if (!json_is_object(m)) return json_deep_copy(m);
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v) json_object_set_new(o, k, strip_schema(v));
    return o;
}

/* Copy a JSON Schema without its "x-" extension keys.  Only keyword
 * positions are stripped: a property that happens to be named "x-y" stays. */
static json_t *strip_schema(const json_t *s)
{
    if (json_is_array(s)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(s); i++)
            json_array_append_new(a, strip_schema(json_array_get(s, i)));
        return a;
    }
    if (!json_is_object(s)) return json_deep_copy(s);
    static const char *maps[] = { "properties", "patternProperties", "$defs", "definitions",
                                  "dependentSchemas", NULL };
    static const char *subs[] = { "items", "additionalProperties", "anyOf", "oneOf", "allOf",
                                  "not", "if", "then", "else", "prefixItems", "contains",
                                  "propertyNames", "unevaluatedProperties",
                                  "additionalItems", NULL };
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (!strncmp(k, "x-", 2)) continue;
        int kind = 0;
        for (int i = 0; maps[i]; i++) if (!strcmp(k, maps[i])) kind = 1;
        for (int i = 0; subs[i]; i++) if (!strcmp(k, subs[i])) kind = 2;
        json_object_set_new(o, k, kind == 1 ? strip_schema_map(v)
                                  : kind == 2 ? strip_schema(v) : json_deep_copy(v));
    }
    return o;
}

/* One function object: name, description, parameters (x- keys removed);
 * with keep_rest, any other keys are kept in their place. */
static json_t *function_entry(const json_t *f, int keep_rest)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    if (!keep_rest) {
        static const char *keys[] = { "name", "description", "parameters", NULL };
        for (int i = 0; keys[i]; i++)
            if ((v = json_object_get(f, keys[i])))
                json_object_set_new(o, keys[i], i == 2 ? strip_schema(v) : json_deep_copy(v));
        return o;
    }
    json_object_foreach((json_t *)f, k, v)
        json_object_set_new(o, k, !strcmp(k, "parameters") ? strip_schema(v) : json_deep_copy(v));
    return o;
}

json_t *chat_tools_from_schemas(const json_t *schemas, char **err)
{
    *err = NULL;
    if (!json_is_array(schemas)) {
        *err = xstrdup("tool schemas are not an array");
        return NULL;
    }
    json_t *tools = json_array();
    for (size_t i = 0; i < json_array_size(schemas); i++) {
        const json_t *t = json_array_get(schemas, i);
        const json_t *fn = json_object_get(t, "function");
        int wrapped = json_is_object(fn);
        const json_t *f = wrapped ? fn : t;
        if (!json_is_string(json_object_get(f, "name"))) {
            *err = xasprintf("tool %zu: name missing or not a string", i);
            json_decref(tools);
            return NULL;
        }
        json_t *entry = function_entry(f, wrapped);
        if (wrapped) {
            /* keep the wrapper's own keys and order, with the cleaned function */
            json_t *w = json_object();
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)t, k, v)
                json_object_set_new(w, k, !strcmp(k, "function") ? json_incref(entry)
                                                                 : json_deep_copy(v));
            json_decref(entry);
            json_array_append_new(tools, w);
        } else {
            json_array_append_new(tools, json_pack("{s:s, s:o}", "type", "function",
                                                   "function", entry));
        }
    }
    return tools;
}
