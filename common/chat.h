/* chat.h — the Qwen3 chat template, in C.
 *
 * One implementation of Qwen3's ChatML-with-Hermes-tool-calls rendering,
 * shared by harness-render, tok-encode --chat, the trainers, rollout and
 * serve.  chat_render produces byte for byte the text that the Jinja
 * "chat_template" of Qwen3's tokenizer_config.json renders under Hugging
 * Face transformers, plus a list of spans saying which bytes the assistant
 * wrote (for the loss mask).  chat_parse_output turns what a model
 * generated for one assistant turn back into a message.  man 5 chat gives
 * the rules in full.
 *
 * Usage — training (text + loss mask):
 *
 *     chat_opts o = CHAT_OPTS_INIT;          // no tools, no gen. prompt
 *     o.tools = json_object_get(traj, "tools");
 *     chat_text t;
 *     char *err;
 *     if (chat_render(&t, json_object_get(traj, "messages"), &o, &err)) {
 *         hat_errat(file, line, "%s", err); free(err); ...
 *     }
 *     for (size_t i = 0; i < t.nspans; i++)   // tokenize each span; mask
 *         encode(t.text + t.spans[i].off,     // = t.spans[i].assistant
 *                t.spans[i].len, t.spans[i].assistant);
 *     chat_text_free(&t);
 *
 * Usage — inference (prompt, generate, parse, loop):
 *
 *     json_t *tools = chat_tools_from_schemas(harness_tools);  // new ref
 *     char *prompt = chat_render_generation_prompt(msgs, tools,
 *                                                  CHAT_THINK_UNSET, &err);
 *     ... generate until <|im_end|>; text excludes it ...
 *     json_t *msg = chat_parse_output(gen, gen_len, &err);
 *     json_array_append_new(msgs, msg);      // always a message
 *     if (err) { show err to the model as the harness does; free(err); }
 *
 * Messages are a JSON array of OpenAI-style objects: role
 * system|user|assistant|tool; content a string (null or absent renders as
 * ""); assistant messages may carry reasoning_content (string or null) and
 * tool_calls, each {"type":"function","id"?,"function":{"name","arguments"}}
 * or flat {"name","arguments"}; arguments an object (serialised like
 * Python's json.dumps) or a string (emitted verbatim).
 *
 * Errors are returned as malloc'd strings in *err (caller frees), never
 * printed: the caller knows the file and line to blame. */
#ifndef HAT_CHAT_H
#define HAT_CHAT_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

/* enable_thinking as the template sees it: undefined, false or true.  Only
 * "false" changes anything: the generation prompt then ends with an empty
 * <think>\n\n</think>\n\n block. */
enum { CHAT_THINK_UNSET = -1, CHAT_THINK_OFF = 0, CHAT_THINK_ON = 1 };

typedef struct {
    const json_t *tools;          /* array handed to the template, or NULL;
                                     NULL and [] render the same (no # Tools) */
    int add_generation_prompt;    /* end with "<|im_start|>assistant\n" */
    int enable_thinking;          /* CHAT_THINK_* */
} chat_opts;

#define CHAT_OPTS_INIT { NULL, 0, CHAT_THINK_UNSET }

/* A run of bytes of the rendered text.  assistant = 1 exactly on what the
 * assistant wrote: for each assistant message, everything after its
 * "<|im_start|>assistant\n" header up to and including its "<|im_end|>"
 * (think block, content, tool calls); not the "\n" after <|im_end|>.
 * untrusted = 1 exactly on the content of user and tool messages (what a
 * viewer typed, a tool's result and the world data in it): the encoder
 * never turns those bytes into control tokens (tok_encode_ranges).  Spans
 * cover the text once, in order, without empty spans; neighbours differ in
 * `assistant` or `untrusted`. */
typedef struct {
    size_t off, len;
    int assistant;
    int untrusted;
} chat_span;

typedef struct {
    char *text;                   /* NUL-terminated; len excludes the NUL */
    size_t len;
    chat_span *spans;
    size_t nspans;
} chat_text;

/* Render messages as the Qwen3 template does.  Returns 0 and fills *out
 * (free with chat_text_free), or -1 with *err set (out is then empty).
 * Rejected: a non-array, an empty array, a message that is not an object,
 * an unknown role, a non-string content/reasoning_content/name, a tool call
 * without arguments.  (Jinja would raise on most of these; an unknown role
 * it would silently drop, which hides bugs, so hat refuses it.) */
int  chat_render(chat_text *out, const json_t *messages, const chat_opts *opt,
                 char **err);
void chat_text_free(chat_text *t);

/* The untrusted ranges of spans [first, last) as (offset, length) pairs,
 * offsets counted from byte `from` of the text (malloc'd; *n pairs). */
size_t *chat_untrusted_ranges(const chat_text *t, size_t first, size_t last, size_t from, size_t *n);

/* The prompt for the next assistant turn (add_generation_prompt = true),
 * without spans.  Returns a malloc'd string, or NULL with *err set. */
char *chat_render_generation_prompt(const json_t *messages, const json_t *tools,
                                    int enable_thinking, char **err);

/* Parse the text a model generated for one assistant turn (up to, not
 * including, <|im_end|>) into a new assistant message:
 *     {"role":"assistant","content":...,
 *      "reasoning_content":... (when a </think> was seen),
 *      "tool_calls":[{"type":"function",
 *                     "function":{"name":...,"arguments":{...}}}, ...]}
 * Always returns a message.  On malformed output (unterminated <think> or
 * <tool_call>, bad JSON in a tool call, missing or non-string name, missing
 * or non-object arguments, text after the tool calls) *err is set to a
 * message fit to show the model and the returned message holds the raw text
 * as its content, so the transcript keeps what the model wrote.  Otherwise
 * *err is NULL.  Content loses its leading newlines, and one "\n" before
 * the first <tool_call>, as the template would render them.  For
 * well-formed output, the parsed message rendered as the final turn gives
 * the same text as {"role":"assistant","content":text} would. */
json_t *chat_parse_output(const char *text, size_t len, char **err);

/* The tools list for the template from function schemas.  Each element is
 * either already wrapped, {"type":"function","function":{...}} (copied), or
 * a bare schema {"name","description"?,"parameters"?, ...} (a harness tool),
 * wrapped as {"type":"function","function":{"name","description",
 * "parameters"}} with other keys dropped.  In both, keys starting with "x-"
 * inside the parameter schemas (stable meanings such as x-function, which
 * the model must not see) are removed.  Returns a new array, or NULL with
 * *err set when an element has no string name. */
json_t *chat_tools_from_schemas(const json_t *schemas, char **err);

/* Python json.dumps(v, ensure_ascii=False) — separators ", " and ": ",
 * key order as stored, floats as repr() — which is what the template's
 * tojson filter produces.  Appends to b. */
void chat_json_dumps(sbuf *b, const json_t *v);

/* Python repr(float) into buf (at least 32 bytes): shortest text that
 * reads back as x; exponent form below 1e-4 and from 1e16 ("1e-05",
 * "1e+16"); integral values keep ".0"; "NaN", "Infinity", "-Infinity" as
 * json.dumps writes them.  Returns buf. */
char *chat_float_repr(double x, char *buf);

#endif
