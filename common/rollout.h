/* rollout.h — the multi-turn agent loop: a policy (a checkpoint, or a
 * scripted callback in tests) plays tasks through the simulator under a
 * harness, many conversations at once.  The one loop behind rollout(1),
 * grpo-step, evalset and serve; no I/O.
 *
 * Every conversation in flight advances through ONE gen_engine
 * (continuous batching) and keeps its engine sequence, KV cache included,
 * from turn to turn (gen_extend): when its turn finishes generating (<|im_end|>,
 * the config's eos, or the per-turn token limit) the text is parsed with
 * chat_parse_output and acted on through sim_step — tool calls executed
 * with the harness's hooks and the task's faults, or the reply offered
 * to the reply hooks.  A turn that does not parse is kept verbatim and
 * answered as production answers it (see MALFORMED TURNS below).  Then
 * the conversation's context is extended and it goes back to the engine,
 * until the reply is accepted, max_turns assistant turns were played,
 * the generated-token budget is spent or the context is full.
 *
 * Tokens are kept exactly as the model saw them: the context of turn k is
 * the context of turn k-1, then the ids the model sampled, then the
 * encoded template text of the messages that came back (harness_render
 * of the conversation, the part after the last assistant turn, with the
 * generation prompt).  Nothing the model wrote is ever re-tokenised, so
 * one forward pass over rollout_tokens.ids gives the log-probs of every
 * turn in the context it was sampled in (what grpo-step needs), and the
 * context only ever grows at the end (what a KV-cache-keeping engine
 * needs).  messages hold the same conversation as parsed JSON for the
 * judge and for training on text (man 5 traj.jsonl).
 *
 *     rollout *r = rollout_new(model, tok, world, 8, 0, &err);
 *     rollout_set_judge(r, judge);                     // optional
 *     rollout_params p = ROLLOUT_PARAMS_INIT;
 *     rollout_add(r, task, harness, seed, stream, &p, user, &err);
 *     while (rollout_step(r) > 0 || rollout_pending(r))
 *         for (rollout_result *x; (x = rollout_take(r)); rollout_result_free(x))
 *             ... x->messages, x->tok, x->verdict ...
 *
 * Sampling of turn k of a conversation draws from rng_derive(seed,
 * stream * 256 + k), so a conversation's bytes depend on (seed, stream)
 * and never on what else shares the batch.
 *
 * MALFORMED TURNS.  When chat_parse_output reports an error, the assistant
 * message keeps the raw text as its content and carries "parse_error":
 * MESSAGE; the simulator counts the turn (sim_turn) but executes and
 * offers nothing.  The runtime's answer comes from the harness's own hooks:
 *   - the text holds <tool_call> or </tool_call> (an attempted call):
 *     {"role":"tool","name":NAME,"content":TEXT,"hook":"tool_args_check"},
 *     TEXT = hooks.tool_args_check.message with {tool} = the name the
 *     call gave (or "tool_call" when none can be read) and {error} =
 *     MESSAGE; "Invalid arguments for {tool}: {error}" without the hook;
 *   - otherwise (an unclosed <think>):
 *     {"role":"user","content":TEXT,"hook":"reply_format"}, TEXT =
 *     hooks.reply_format.message with {error} = MESSAGE; "Reply rejected:
 *     {error}" without the hook.
 * A judge replaying the trajectory skips an assistant message with
 * parse_error and the one message after it. */
#ifndef HAT_ROLLOUT_H
#define HAT_ROLLOUT_H

#include <jansson.h>
#include <stdint.h>

#include "generate.h"
#include "judge.h"
#include "model.h"
#include "tokenizer.h"
#include "world.h"

#define ROLLOUT_DEFAULT_TURNS 6     /* when neither params nor harness say */
#define ROLLOUT_MAX_TURNS 255       /* turn index must fit the stream layout */

typedef struct {
    float temperature;    /* 0 = greedy */
    int   top_k;          /* 0 = off */
    float top_p;          /* 1 = off */
    int   max_tokens;     /* generated tokens per turn */
    int   max_turns;      /* 0 = the harness's max_turns param, else ROLLOUT_DEFAULT_TURNS */
    int   max_gen_tokens; /* generated tokens per conversation; 0 = no limit */
    int   enable_thinking;/* CHAT_THINK_* for the generation prompt */
    int   mtp_k;          /* MTP speculative drafts per step (gen_params.mtp_k); 0 = off */
} rollout_params;

#define ROLLOUT_PARAMS_INIT { 0.0f, 0, 1.0f, 256, 0, 0, -1, 0 }

/* How a conversation ended (meta.finish). */
enum { ROLLOUT_ACCEPTED, ROLLOUT_MAX_TURNS_HIT, ROLLOUT_BUDGET, ROLLOUT_CONTEXT, ROLLOUT_ERROR };
extern const char *const rollout_finish_names[];  /* "accepted" "max_turns" "budget" "context" "error" */

/* The conversation as token ids, for training.  ids[0..n_prompt) is the
 * first prompt (system, tools, viewer message, assistant header); then
 * each model turn's sampled ids (mask 1, logprobs = log p under the
 * model, before temperature), then the tokens the runtime added (a
 * closing <|im_end|> when the turn hit its limit, tool responses, hook
 * notes, the next assistant header: mask 0, logprobs 0). */
typedef struct {
    int   *ids;        /* (n) */
    int   *mask;       /* (n) 1 = sampled by the policy */
    float *logprobs;   /* (n) */
    int    n, n_prompt;
    int   *turn_off;   /* (n_turns) where each model turn's ids start */
    int   *turn_len;   /* (n_turns) how many ids it sampled */
    int    n_turns;
} rollout_tokens;

typedef struct {
    void   *user;          /* as given to rollout_add */
    json_t *task;          /* references held for the caller */
    json_t *harness;
    json_t *messages;      /* man 5 traj.jsonl conventions, viewer message first */
    json_t *meta;          /* {"hsa","seed","stream","model"?,"intent","turns","finish",
                              "accepted","tool_calls","malformed","gen_tokens"} */
    int     finish;        /* ROLLOUT_* */
    int     accepted, turns, malformed, gen_tokens;
    char   *error;         /* finish == ROLLOUT_ERROR: what went wrong */
    rollout_tokens tok;    /* empty when the engine has no tokenizer */
    int     judged;        /* verdict is set (a judge was given and it could replay) */
    judge_verdict verdict;
} rollout_result;

/* A scripted policy instead of the model (tests, external policies): the
 * text the assistant "generates" for its next turn, before <|im_end|>,
 * malloc'd; NULL ends the conversation as an error. */
typedef char *(*rollout_policy_fn)(void *ctx, const json_t *harness, const json_t *messages,
                                   void *user);

typedef struct rollout rollout;

/* An engine for up to max_convs conversations in flight, each at most
 * max_len tokens (0 = the model's max_position_embeddings).  m, t and w
 * are borrowed.  m may be NULL when a policy is set; t may be NULL with a
 * policy (no tokens are then recorded).  NULL + *err on a tokenizer
 * without <|im_end|> or with more ids than the model has. */
rollout *rollout_new(const model *m, const tokenizer *t, const world *w, int max_convs,
                     int max_len, char **err);
/* The same with the decoding engine on the device d asks for (gen_open's
 * rules, generate.h; NULL = the CPU; d->mtp: the caller's params will ask
 * for MTP drafts).  The engine does not depend on the tasks, so the
 * trajectories of a greedy fp32 GPU engine are the CPU's.  NULL + *err
 * also when d asks for cuda and the GPU engine cannot be built (the
 * message starts "--device cuda: "). */
rollout *rollout_open(const model *m, const tokenizer *t, const world *w, int max_convs,
                      int max_len, const gen_device *d, char **err);
/* "cuda" or "cpu" (a scripted policy: "cpu"). */
const char *rollout_device(const rollout *r);
void     rollout_free(rollout *r);
/* Judge every finished conversation (j borrowed; NULL = none).  The judge
 * caches its harness by address, so the engine keeps the last harness it
 * was judged under alive until rollout_free. */
void     rollout_set_judge(rollout *r, judge *j);
void     rollout_set_policy(rollout *r, rollout_policy_fn fn, void *ctx);
void     rollout_set_name(rollout *r, const char *model_name);  /* meta.model */
/* Each conversation's system message (through its <|im_end|>) is a
 * shared prefix of the engine (gen_add_shared): its KV cache computed
 * once per distinct token sequence and read by every conversation that
 * starts with it.  Off: copied into each conversation from a slot that
 * holds it (gen_add's prefix reuse).  The same output either way;
 * default on. */
void     rollout_set_shared_prefix(rollout *r, int on);

/* Start a conversation: task and harness are referenced until its result
 * is freed.  Returns 0; -1 with *err NULL when all max_convs are in
 * flight (step and take first); -1 with *err (malloc'd) when the harness
 * or the first prompt cannot be used. */
int      rollout_add(rollout *r, const json_t *task, const json_t *harness, uint64_t seed,
                     uint64_t stream, const rollout_params *p, void *user, char **err);
/* Advance every conversation by one engine step (one generated token, or
 * a whole scripted turn).  Returns how many are still in flight. */
int      rollout_step(rollout *r);
int      rollout_running(const rollout *r);   /* in flight */
int      rollout_pending(const rollout *r);   /* finished, not yet taken */
/* End the conversation started with this user pointer now (its client
 * went away): it frees its engine sequence and finishes as ROLLOUT_ERROR
 * "cancelled".  0, or -1 when no such conversation is in flight. */
int      rollout_cancel(rollout *r, const void *user);
/* The next finished conversation (in order of finishing), or NULL. */
rollout_result *rollout_take(rollout *r);
void     rollout_result_free(rollout_result *x);

/* Totals since rollout_new, for progress and benchmarks.  prefill_tokens:
 * context tokens queued to the engine (a conversation's first prompt, then
 * only what each turn appends: the engine keeps its KV cache between
 * turns; the engine may still copy a shared prefix, see gen_stats). */
typedef struct { long conversations, turns, gen_tokens, prefill_tokens; } rollout_stats;
rollout_stats rollout_get_stats(const rollout *r);
/* The decoding engine's counters (zeros with a scripted policy). */
gen_stats rollout_gen_stats(const rollout *r);

/* The trajectory line (new ref): {"id","task_id","harness","messages",
 * "meta"} plus "verdict" {"scores","total","pass","reasons"} when judged
 * and, with tokens, "tokens" {"ids","mask","logprobs"}.  id NULL = the
 * task id + ".r". */
json_t  *rollout_result_json(const rollout_result *x, const char *id, int tokens);

/* The runtime's answer to an unparseable turn (see MALFORMED TURNS):
 * a new message. */
json_t  *rollout_malformed_note(const json_t *h, const char *text, const char *error);

#endif
