/* sim.h — the live-stream simulator: one conversation between a viewer, a
 * policy (the scripted teacher, a model, an external program) and the
 * tools of a world, under the rules of a harness.
 *
 * The simulator returns exactly what the policy sees next, as messages in
 * the trajectory conventions of man 5 traj.jsonl, and records everything
 * that happened (calls, faults, hook events, replies) for the judge:
 *
 *     sim *s = sim_new(world);
 *     sim_set_harness(s, h);                  // cached until h changes
 *     json_t *viewer = sim_begin(s, task);    // {"role":"user",...}
 *     json_t *tool = sim_tool_call(s, "get_product", args);  // {"role":"tool",...}
 *     json_t *note = sim_reply(s, "@momo it's ¥199 now");   // NULL = accepted
 *     const json_t *rec = sim_record(s);      // for the judge
 *
 * Tools are executed by *function*: a call's name is looked up in the
 * current harness, its arguments are validated against that tool's schema
 * and read through each property's x-function, then world_call answers.
 *
 * Faults.  A task lists faults as {"call": i, "type": T, "times": n}: the
 * gold call i (its function and its product or order) fails with fault T.
 * A fault whose type is in hooks.tool_retry.retry_on fails the first n
 * attempts and succeeds after, but only max_retries repeats are allowed:
 * an attempt beyond max_retries+1 fails again ("retry_limit" event).  So
 * it is recoverable exactly when n <= max_retries.  A fault of any other
 * type persists for the whole conversation; repeating the call is a
 * "retry_not_allowed" event.  Every failure is delivered as
 * harness_wrap_error(harness_format_error(h, tool, type, message)).
 *
 * Hooks applied: input_check (sim_begin), tool_args_check (sim_tool_call:
 * missing required, wrong type, out of range, not in enum, unknown
 * property, unknown tool), skill_required, reply_filter, reply_format and
 * factual_risk (sim_reply, in that order; the first failing one answers,
 * all failing ones are recorded).  A hook absent from the harness is not
 * applied. */
#ifndef HAT_SIM_H
#define HAT_SIM_H

#include <jansson.h>
#include "harness_compile.h"
#include "tasks.h"
#include "world.h"

typedef struct sim sim;

sim    *sim_new(const world *w);             /* w is borrowed */
void    sim_free(sim *s);
/* Use harness h from the next conversation on.  h is compiled
 * (harness_compile: validated as harness-lint does, indexed, its limits
 * resolved) and the simulator keeps the view until another harness
 * replaces it.  Caches (compiled input_check patterns, skill texts, the
 * world's answers as wrapped for h, by tool name, function and arguments:
 * the world is read-only, and the fault texts by tool name and fault
 * type) are keyed on the view's content hash: a different object with the
 * same content keeps them (the view of the first stays in use), and they
 * are rebuilt only when the content differs.  Do not modify h in place
 * after setting it.  Returns 0, or -1 with *err (malloc'd) when h fails
 * lint or a pattern does not compile; the simulator then has no harness. */
int     sim_set_harness(sim *s, const json_t *h, char **err);
const json_t *sim_harness(const sim *s);
/* harness_tool_by_name(sim_harness(s), name) and the other lookups of
 * harness.h, from an index sim_set_harness made (NULL without a harness). */
const json_t *sim_tool_by_name(const sim *s, const char *name);
const json_t *sim_tool_by_function(const sim *s, const char *function);
const json_t *sim_skill_by_name(const sim *s, const char *name);
const json_t *sim_skill_by_function(const sim *s, const char *function);
const world  *sim_world(const sim *s);
/* The compiled view of the harness in use (NULL without one): its limits,
 * hash and lookups, for the teacher and the judge. */
const harness_compiled *sim_compiled(const sim *s);

/* Start a conversation for task (borrowed while the conversation runs).
 * Returns the viewer message: {"role":"user","content":"NICK: TEXT"}, with
 * the input_check note appended after a blank line and "hook":"input_check"
 * when a pattern matched. */
json_t *sim_begin(sim *s, const json_t *task);
/* sim_begin for the view of a task that passed task_check (borrowed
 * while the conversation runs; tasks.h): the same message and record,
 * with no JSON task to read (the judge's indexed tasks). */
json_t *sim_begin_view(sim *s, const task_view *task);
/* Count one assistant turn (a message with tool calls or a reply);
 * sim_step does this itself. */
void    sim_turn(sim *s);
/* Execute one tool call; arguments is an object or a JSON text string.
 * Returns {"role":"tool","name":NAME,"content":TEXT} (plus "hook":
 * "tool_args_check" when the call was refused).  A cached TEXT (a skill's,
 * a world answer, a fault's) is one string object shared by every message
 * that carries it: strings are never changed in place. */
json_t *sim_tool_call(sim *s, const char *name, const json_t *arguments);
/* sim_tool_call without the message object: its "content" (a new
 * reference to the string) and in *hook its "hook" (NULL when it has
 * none); NULL where sim_tool_call returns NULL.  For the judge's replay,
 * which only compares them with the file's. */
json_t *sim_tool_content(sim *s, const char *name, const json_t *arguments, const char **hook);
/* The result object the last sim_tool_call wrapped in its envelope, or
 * NULL when it failed or was not a tool (borrowed; valid until the next
 * call).  Policies may read it instead of unwrapping the text. */
const json_t *sim_last_result(const sim *s);
/* Offer a final reply.  NULL when accepted; otherwise the hook message
 * {"role":"user","content":TEXT,"hook":HOOK} the policy sees next. */
json_t *sim_reply(sim *s, const char *text);
/* The reply checks without recording anything: the name of the first
 * hook text would fail, or NULL when sim_reply would accept it. */
const char *sim_reply_check(sim *s, const char *text);
/* One assistant message: its tool calls are executed (the array returned
 * holds the tool messages), or its content is offered as the reply (the
 * array holds the hook message, or is empty and *done = 1 when accepted).
 * Malformed messages are answered like a reply that fails its checks. */
json_t *sim_step(sim *s, const json_t *assistant, int *done);

/* What happened so far (borrowed; valid until the next sim_begin):
 *   {"task_id", "turns", "tool_calls", "accepted", "reply",
 *    "calls":  [{"turn","name","function","arguments","args","outcome",
 *               "fault"?,"gold","attempt"?,"skill"?,"error"?}],
 *    "skills": [skill functions loaded, in order],
 *    "faults": [{"call","type","times","retryable","recoverable",
 *                "attempts","failed"}],
 *    "events": [{"hook", ...details}],
 *    "replies":[{"text","accepted","hooks":[...]}],
 *    "evidence": [every tool result text, in order]}
 * outcome: ok | fault | error (the world had no answer) | invalid
 * (tool_args_check) | unknown_tool | skill | unknown_skill. */
const json_t *sim_record(const sim *s);

/* Whether a task fault can be recovered from under harness h. */
int     sim_fault_recoverable(const json_t *h, const json_t *fault);
/* Numbers as every check reads them: a digit that does not continue a
 * word or a decimal starts one; in a reply (reply != 0) @mentions are
 * skipped and thousands separators join ("¥1,119" is 1119); 30x20x15 and
 * 30×20×15 are three numbers, RMB199 one.  Writes up to max of them to
 * out (value and byte span) and returns how many there are. */
typedef struct { double v; size_t at, end; } sim_number;
size_t  sim_scan_numbers(const char *text, int reply, sim_number *out, size_t max);
/* The first number or coupon code in reply that appears neither in the
 * evidence texts nor in the viewer's text; NULL when all are supported.
 * @mentions are skipped.  A number that an arithmetic word of the
 * lexicon ("save", "difference", "total": data/judge/lexicon.json) stands
 * before is supported when it is the difference or sum of two evidence
 * numbers.  Returned string is malloc'd. */
char   *sim_unsupported_value(const char *reply, const json_t *evidence, const char *viewer_text);
/* sim_unsupported_value(reply, evidence of sim_record(s), viewer text of
 * the task), from the evidence numbers s keeps as it goes: the same
 * answer without reading the evidence texts again. */
char   *sim_unsupported(sim *s, const char *reply);
/* The first term of banned (array of strings) found in text as a whole
 * word, case-insensitively; NULL when none. */
const char *sim_banned_term(const char *text, const json_t *banned);

#endif
