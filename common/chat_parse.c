/* chat_parse.c — model output for one assistant turn back into a message.
 *
 * The inverse of the assistant part of chat.c's rendering: an optional
 * <think>...</think> block becomes reasoning_content (split the way the
 * template itself splits content that holds </think>), Hermes-style
 * <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> blocks become
 * tool_calls, and the text before them becomes content.  Malformed output is
 * not an exception here but an everyday event in rollout: it yields an error
 * string the harness can show the model, and a message that keeps the raw
 * text so the transcript shows what was written. */
#include "chat.h"
#include "strv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static json_t *jstr(strv v) { return json_stringn(v.s, v.n); }

static char *errf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *errf(const char *fmt, ...)
{
    char *m;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&m, fmt, ap) < 0) hat_die("out of memory");
    va_end(ap);
    return m;
}

/* Generated text can hold broken UTF-8 (a sequence cut by the token limit,
 * a byte-level token on its own).  Like a tokenizer's decode with
 * errors="replace", each bad byte becomes U+FFFD, so the message is valid
 * JSON.  Returns a malloc'd copy. */
static char *valid_utf8(const char *s, size_t n, size_t *outn)
{
    sbuf b;
    sbuf_init(&b);
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(n - i), &cp);
        if (k > 0) { sbuf_add(&b, s + i, (size_t)k); i += (size_t)k; }
        else { sbuf_puts(&b, "\xEF\xBF\xBD"); i++; }
    }
    *outn = b.len;
    return sbuf_detach(&b);
}

/* A snippet of text for an error message: the first line, at most 40 bytes
 * cut on a character boundary. */
static char *snippet(strv v)
{
    size_t n = 0;
    while (n < v.n && v.s[n] != '\n' && n < 40) n++;
    while (n < v.n && n > 0 && ((unsigned char)v.s[n] & 0xC0) == 0x80) n--;
    return xasprintf("%.*s%s", (int)n, v.s, n < v.n ? "..." : "");
}

static int plain_name(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == '\\') return 0;
    return 1;
}

/* One tool call body (between the tags) into {"type","function":{...}},
 * or NULL with *err set.  k is 1-based, as the model would count. */
static json_t *parse_call(strv body, int k, char **err)
{
    json_error_t je;
    json_t *v = json_loadb(body.s, body.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v) {
        *err = errf("tool call %d: invalid JSON: %s (line %d, column %d)", k, je.text,
                    je.line, je.column);
        return NULL;
    }
    const json_t *name = json_object_get(v, "name");
    const json_t *args = json_object_get(v, "arguments");
    if (!json_is_object(v))
        *err = errf("tool call %d: expected a JSON object with \"name\" and \"arguments\"", k);
    else if (!name)
        *err = errf("tool call %d: missing \"name\"", k);
    else if (!json_is_string(name) || !json_string_length(name))
        *err = errf("tool call %d: \"name\" must be a non-empty string", k);
    else if (!plain_name(json_string_value(name), json_string_length(name)))
        /* the template writes the name raw between quotes: these would
         * render as invalid JSON, so no real tool is named with them */
        *err = errf("tool call %d: \"name\" must not hold quotes, backslashes or "
                    "control characters", k);
    else if (!args)
        *err = errf("tool call %d: missing \"arguments\"", k);
    else if (!json_is_object(args))
        *err = errf("tool call %d: \"arguments\" must be a JSON object", k);
    if (*err) { json_decref(v); return NULL; }
    json_t *call = json_pack("{s:s, s:{s:O, s:O}}", "type", "function", "function",
                             "name", name, "arguments", args);
    json_decref(v);
    return call;
}

/* The tool-call blocks that end the turn: "<tool_call>BODY</tool_call>",
 * separated and followed by white space only.  rest starts at the first
 * "<tool_call>".  Returns the array, or NULL with *err set. */
static json_t *parse_calls(strv rest, char **err)
{
    json_t *calls = json_array();
    for (int k = 1;; k++) {
        rest = lstrip_ws(rest);
        if (!rest.n) break;
        if (!starts_with(rest, "<tool_call>")) {
            char *s = snippet(rest);
            *err = errf("unexpected text after </tool_call>: \"%s\" "
                        "(tool calls must come last in a reply)", s);
            free(s);
            break;
        }
        rest = sv_drop(rest, strlen("<tool_call>"));
        long end = find_first(rest, "</tool_call>");
        if (end < 0) {
            *err = errf("tool call %d: <tool_call> without </tool_call>", k);
            break;
        }
        json_t *call = parse_call(sv(rest.s, (size_t)end), k, err);
        if (!call) break;
        json_array_append_new(calls, call);
        rest = sv_drop(rest, (size_t)end + strlen("</tool_call>"));
    }
    if (*err) { json_decref(calls); return NULL; }
    return calls;
}

/* Everything but the UTF-8 clean-up; text is valid UTF-8 here. */
static json_t *parse_clean(strv all, char **err)
{
    strv content = all, reasoning = sv("", 0);
    int has_reasoning = 0;
    if (find_first(all, "</think>") >= 0) {
        /* the template's own split: content after the last </think>,
         * reasoning before the first one and after the last <think> */
        long last = find_last(all, "</think>");
        content = lstrip_nl(sv_drop(all, (size_t)last + strlen("</think>")));
        strv head = rstrip_nl(sv(all.s, (size_t)find_first(all, "</think>")));
        long open = find_last(head, "<think>");
        if (open >= 0) head = sv_drop(head, (size_t)open + strlen("<think>"));
        reasoning = rstrip_nl(lstrip_nl(head));
        has_reasoning = 1;
    } else if (starts_with(lstrip_ws(all), "<think>")) {
        *err = errf("<think> without </think>: the reasoning was not closed");
        return NULL;
    }

    /* the template renders the current turn's content lstrip('\n') */
    content = lstrip_nl(content);
    json_t *calls = NULL;
    long tc = find_first(content, "<tool_call>");
    long stray = find_first(content, "</tool_call>");
    if (stray >= 0 && (tc < 0 || stray < tc)) {
        *err = errf("</tool_call> without <tool_call>");
        return NULL;
    }
    if (tc >= 0) {
        calls = parse_calls(sv_drop(content, (size_t)tc), err);
        if (!calls) return NULL;
        /* the template puts one "\n" between content and the first call */
        content.n = (size_t)tc;
        if (content.n && content.s[content.n - 1] == '\n') content.n--;
    }

    json_t *m = json_pack("{s:s, s:o}", "role", "assistant", "content", jstr(content));
    if (has_reasoning) json_object_set_new(m, "reasoning_content", jstr(reasoning));
    if (calls) json_object_set_new(m, "tool_calls", calls);
    return m;
}

json_t *chat_parse_output(const char *text, size_t len, char **err)
{
    *err = NULL;
    size_t n;
    char *clean = valid_utf8(text ? text : "", text ? len : 0, &n);
    json_t *m = parse_clean(sv(clean, n), err);
    if (!m)   /* malformed: keep what the model wrote */
        m = json_pack("{s:s, s:o}", "role", "assistant", "content", jstr(sv(clean, n)));
    free(clean);
    return m;
}
