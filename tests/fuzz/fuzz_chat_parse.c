/* fuzz_chat_parse.c — chat_parse_output, the tool-call extraction from a
 * model's generated text.  It must always return an assistant message with
 * valid UTF-8 content.  For output it accepts (no error), the parse must be
 * a fixed point: rendering the parsed message (Qwen3 template, last turn)
 * and parsing the assistant's part of that text again gives the same
 * content, reasoning and tool calls.  (Byte equality with the raw text
 * holds only for output in the template's own layout: "text<tool_call>"
 * or a tab inside the call's JSON parse fine but render back normalised,
 * see corpus/chat_parse/crash-*.) */
#include "fuzz.h"
#include "chat.h"

#include <utf8proc.h>

static int valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Equal values of key in a and b, or absent from both (json_equal(NULL,
 * NULL) is 0). */
static int same(const json_t *a, const json_t *b, const char *key)
{
    json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
    return (!x && !y) || json_equal(x, y);
}

static char *render_last(json_t *assistant)
{
    json_t *msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", "hi");
    json_array_append(msgs, assistant);
    chat_opts o = CHAT_OPTS_INIT;
    chat_text t;
    char *err = NULL;
    char *s = NULL;
    if (chat_render(&t, msgs, &o, &err) == 0) {
        s = xstrdup(t.text);
        chat_text_free(&t);
    }
    free(err);
    json_decref(msgs);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *err = NULL;
    json_t *m = chat_parse_output((const char *)data, size, &err);
    FUZZ_ASSERT(json_is_object(m));
    FUZZ_ASSERT(json_is_string(json_object_get(m, "content")));
    const char *c = json_string_value(json_object_get(m, "content"));
    FUZZ_ASSERT(valid_utf8((const uint8_t *)c, json_string_length(json_object_get(m, "content"))));
    /* The round trip holds for text the template could have produced:
     * valid UTF-8 without NULs (jansson strings then differ in length). */
    if (!err && !memchr(data, 0, size)) {   /* rendered text is a C string */
        char *r = render_last(m);
        FUZZ_ASSERT(r);
        const char *head = "<|im_start|>assistant\n";
        char *p = strstr(r, head);
        FUZZ_ASSERT(p);
        p += strlen(head);
        size_t n = strlen(p);
        const char *tail = "<|im_end|>\n";
        FUZZ_ASSERT(n >= strlen(tail) && !strcmp(p + n - strlen(tail), tail));
        char *err2 = NULL;
        json_t *m2 = chat_parse_output(p, n - strlen(tail), &err2);
        if (err2 || !same(m, m2, "content") ||
            !same(m, m2, "tool_calls")) {
            char *x = json_dumps(m, JSON_COMPACT), *y = json_dumps(m2, JSON_COMPACT);
            fprintf(stderr, "parsed:   %s\nreparsed: %s\nerror: %s\n", x, y, err2 ? err2 : "-");
            free(x);
            free(y);
        }
        FUZZ_ASSERT(!err2);
        FUZZ_ASSERT(same(m, m2, "content"));
        FUZZ_ASSERT(same(m, m2, "tool_calls"));
        const json_t *rc = json_object_get(m, "reasoning_content");
        const json_t *rc2 = json_object_get(m2, "reasoning_content");
        FUZZ_ASSERT(rc ? json_equal((json_t *)rc, (json_t *)rc2)
                       : !rc2 || !strcmp(json_string_value(rc2), ""));
        json_decref(m2);
        free(r);
    }
    free(err);
    json_decref(m);
    return 0;
}
