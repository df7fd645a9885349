/* chat_encode.h — one training record → token ids and a loss mask.
 *
 * The single implementation behind tok-encode --chat and every trainer:
 *   {"text": "..."}                        plain language modelling:
 *                                          every token is a target (mask 1)
 *   {"messages": [...], "harness"?: {...}} a conversation rendered through
 *                                          its inline harness (or the
 *                                          default harness given, or with
 *                                          no system/tools if neither) as
 *                                          Qwen3's chat template does; mask
 *                                          1 exactly on tokens the
 *                                          assistant wrote (man 5 chat)
 * mask[i] = 1 means token i is predicted by the loss. */
#ifndef HAT_CHAT_ENCODE_H
#define HAT_CHAT_ENCODE_H

#include <jansson.h>

#include "chat.h"
#include "tokenizer.h"

/* A conversation record as the model reads it: rendered through its
 * inline harness, else the default one, else with its own "tools" (the
 * generation prompt appended when gen_prompt).  0, or -1 with *err. */
int record_render(chat_text *ct, const json_t *rec, const json_t *harness, int gen_prompt,
                  char **err);

/* A rendered conversation from byte `from` on (0: all of it) → ids, and
 * the assistant mask when mask is not NULL: every run of spans with the
 * same mask is one segment (tok_encode_segments), and the user and tool
 * contents in it (the untrusted spans) are encoded so that they never
 * yield a control token.  Every encoder of conversations (training,
 * generate, rollout, serve) goes through here, so they see the same ids.
 * 0, or -1 when the text is not valid UTF-8. */
int chat_text_encode(const tokenizer *t, const chat_text *ct, size_t from, tok_ids *ids, tok_ids *mask);

/* The prompt for the next assistant turn of messages (tools and
 * enable_thinking as chat_opts takes them) → ids, through
 * chat_text_encode: what users and tools wrote never becomes a control
 * token.  Every encoder of a generation prompt from bare messages (opd,
 * serve) goes through here.  Appends to ids.  0, or -1 with *err. */
int chat_prompt_encode(const tokenizer *t, const json_t *messages, const json_t *tools,
                       int enable_thinking, tok_ids *ids, char **err);

/* Appends to ids and mask (same length).  0, or -1 with *err (malloc'd). */
int record_encode(const tokenizer *t, const json_t *rec, const json_t *harness,
                  tok_ids *ids, tok_ids *mask, char **err);

/* A prompt for generation → ids ending where the model should continue:
 *   {"ids": [...]}                          as given
 *   {"text": "..."}                         the text, encoded as is
 *   {"messages": [...], "harness"?: {...}}  rendered through the inline
 *                                           harness (or the default one, or
 *                                           none) with the generation prompt
 *                                           "<|im_start|>assistant\n";
 *                                           "enable_thinking": true/false
 *                                           as the template's variable
 *                                           (evalset's IFEval cases: false)
 * Appends to ids.  0, or -1 with *err (malloc'd). */
int prompt_encode(const tokenizer *t, const json_t *rec, const json_t *harness, tok_ids *ids,
                  char **err);

#endif
