/* chat_encode.c — records (text or conversations) → ids + loss mask. */
#include "chat_encode.h"

#include "chat.h"
#include "harness.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int encode_text(const tokenizer *t, const json_t *text, tok_ids *ids, tok_ids *mask,
                       char **err)
{
    size_t before = ids->n;
    if (tok_encode(t, json_string_value(text), json_string_length(text), ids) < 0) {
        *err = xstrdup("\"text\" is not valid UTF-8");
        return -1;
    }
    for (size_t i = before; i < ids->n; i++) tok_ids_push(mask, 1);
    return 0;
}

int record_render(chat_text *ct, const json_t *rec, const json_t *harness, int gen_prompt,
                  char **err)
{
    const json_t *msgs = json_object_get(rec, "messages");
    const json_t *h = json_object_get(rec, "harness");
    if (!h) h = harness;
    chat_opts o = CHAT_OPTS_INIT;
    o.add_generation_prompt = gen_prompt;
    o.tools = json_object_get(rec, "tools");
    const json_t *think = json_object_get(rec, "enable_thinking");
    if (json_is_boolean(think)) o.enable_thinking = json_is_true(think) ? CHAT_THINK_ON : CHAT_THINK_OFF;
    return h ? harness_render(ct, h, msgs, &o, err) : chat_render(ct, msgs, &o, err);
}

int chat_text_encode(const tokenizer *t, const chat_text *ct, size_t from, tok_ids *ids, tok_ids *mask)
{
    size_t first = 0;
    while (first < ct->nspans && ct->spans[first].off + ct->spans[first].len <= from) first++;
    tok_segment *seg = xcalloc(ct->nspans + 1, sizeof *seg);
    size_t **ranges = xcalloc(ct->nspans + 1, sizeof *ranges), nseg = 0;
    for (size_t i = first; i < ct->nspans;) {
        /* one segment per run of equal mask, as before spans knew trust */
        size_t k = i, off = ct->spans[i].off > from ? ct->spans[i].off : from;
        while (k < ct->nspans && ct->spans[k].assistant == ct->spans[i].assistant) k++;
        size_t end = ct->spans[k - 1].off + ct->spans[k - 1].len;
        seg[nseg] = (tok_segment){ ct->text + off, end - off, ct->spans[i].assistant, NULL, 0 };
        ranges[nseg] = chat_untrusted_ranges(ct, i, k, off, &seg[nseg].nplain);
        seg[nseg].plain = ranges[nseg];
        nseg++;
        i = k;
    }
    tok_ids scratch = { 0 };
    int rc = tok_encode_segments(t, seg, nseg, ids, mask ? mask : &scratch);
    tok_ids_free(&scratch);
    for (size_t i = 0; i < nseg; i++) free(ranges[i]);
    free(ranges);
    free(seg);
    return rc < 0 ? -1 : 0;
}

int chat_prompt_encode(const tokenizer *t, const json_t *messages, const json_t *tools,
                       int enable_thinking, tok_ids *ids, char **err)
{
    chat_opts o = { tools, 1, enable_thinking };
    chat_text ct;
    if (chat_render(&ct, messages, &o, err)) return -1;
    int rc = chat_text_encode(t, &ct, 0, ids, NULL);
    chat_text_free(&ct);
    if (rc < 0) *err = xstrdup("the messages are not valid UTF-8");
    return rc;
}

static int encode_chat(const tokenizer *t, const json_t *rec, const json_t *harness,
                       tok_ids *ids, tok_ids *mask, char **err)
{
    chat_text ct;
    if (record_render(&ct, rec, harness, 0, err)) return -1;
    int rc = chat_text_encode(t, &ct, 0, ids, mask);
    if (rc < 0) *err = xstrdup("conversation is not valid UTF-8");
    chat_text_free(&ct);
    return rc;
}

int record_encode(const tokenizer *t, const json_t *rec, const json_t *harness,
                  tok_ids *ids, tok_ids *mask, char **err)
{
    const json_t *text = json_object_get(rec, "text");
    if (json_is_string(text)) return encode_text(t, text, ids, mask, err);
    if (json_is_array(json_object_get(rec, "messages")))
        return encode_chat(t, rec, harness, ids, mask, err);
    *err = xstrdup("record has neither a string \"text\" nor a \"messages\" array");
    return -1;
}

int prompt_encode(const tokenizer *t, const json_t *rec, const json_t *harness, tok_ids *ids,
                  char **err)
{
    const json_t *text = json_object_get(rec, "text"), *msgs = json_object_get(rec, "messages");
    if (!t && (text || msgs)) {
        *err = xstrdup("a text or chat prompt needs a tokenizer (the checkpoint has none; give --tokenizer)");
        return -1;
    }
    if (json_is_string(text)) {
        if (tok_encode(t, json_string_value(text), json_string_length(text), ids) >= 0) return 0;
        *err = xstrdup("\"text\" is not valid UTF-8");
        return -1;
    }
    if (json_is_array(msgs)) {
        chat_text ct;
        if (record_render(&ct, rec, harness, 1, err)) return -1;
        int rc = chat_text_encode(t, &ct, 0, ids, NULL);
        chat_text_free(&ct);
        if (rc < 0) { *err = xstrdup("conversation is not valid UTF-8"); return -1; }
        return 0;
    }
    const json_t *a = json_object_get(rec, "ids");
    if (!json_is_array(a)) {
        *err = xstrdup("a prompt needs \"ids\", a string \"text\" or a \"messages\" array");
        return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            *err = xasprintf("ids[%zu] is not a token id", i);
            return -1;
        }
        tok_ids_push(ids, (int)json_integer_value(x));
    }
    return 0;
}
