/* judge.h — scoring a trajectory against its task: the verdicts of
 * judge(1) and, through the same functions, the GRPO reward.
 *
 * A trajectory is replayed through the simulator (sim.h) under its own
 * inline harness, so calls, faults, hook events and evidence come from
 * the simulator, not from the tool messages in the file; a difference
 * between the two is itself a reason ("tool_output_mismatch").  Then five
 * components are scored (man 5 verdicts.jsonl):
 *
 *   accuracy          0|1   every number and coupon code of the final reply
 *                           is in a tool result or the viewer's text; the
 *                           gold facts that are stated are stated right; no
 *                           promise terms
 *   effectiveness  0|.5|1   the intent is answered (facts, must codes), the
 *                           harness's max_chars/max_emoji hold, the viewer
 *                           is addressed, no banned claim
 *   tool_rationality [0,1]  needed calls made with valid arguments, no
 *                           unneeded or repeated calls, retries only as
 *                           hooks.tool_retry allows, honest after a fault
 *   skill_selection  [0,1]  the gold skill (by function) and a reply skill
 *                           loaded, no distractor
 *   cot_penalty      [0,1]  reasoning tokens beyond the budget
 *
 * total = sum(weight * score) - weight_cot * cot_penalty, and every failed
 * check is a reason {code, component, detail}.  Weights, deductions,
 * thresholds and term lists are data (data/judge/default.json, man 5
 * judge-config); judge calibrate fits them to human labels.
 *
 *     judge *j = judge_new(world, NULL, &err);         // default config
 *     judge_verdict v;
 *     judge_score(j, task, harness, messages, &v);     // no I/O
 *     reward = v.total;  ...  judge_verdict_clear(&v);
 *
 * The harness is read through its compiled view (harness_compile.h), the
 * one its simulator holds: a harness that fails lint is bad input, and
 * caches are keyed on the harness's content hash.  Files: judge.c (replay and scoring), judge_calibrate.c
 * (fitting and agreement statistics), judge_annotate.c (the labeller). */
#ifndef HAT_JUDGE_H
#define HAT_JUDGE_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "tasks.h"
#include "util.h"
#include "world.h"

enum { JUDGE_ACCURACY, JUDGE_EFFECTIVENESS, JUDGE_TOOLS, JUDGE_SKILLS, JUDGE_COT, JUDGE_NCOMP };
/* "accuracy", "effectiveness", "tool_rationality", "skill_selection",
 * "cot_penalty": the keys of "scores" in a verdict. */
extern const char *const judge_comp_names[JUDGE_NCOMP];

typedef struct judge judge;

typedef struct {
    double  score[JUDGE_NCOMP];  /* by the enum above; score[JUDGE_COT] is the penalty */
    double  total;
    int     pass;
    int     mismatch;            /* the file's tool/hook messages differ from the replay */
    int     cot_tokens;
    json_t *reasons;             /* [{code, component, detail}] (owned) */
} judge_verdict;

/* A judge over world w (borrowed) with config (borrowed; NULL loads
 * data/judge/default.json).  NULL with *err (malloc'd) on a bad config. */
judge  *judge_new(const world *w, const json_t *config, char **err);
void    judge_free(judge *j);
const json_t *judge_config(const judge *j);
/* The built-in default config (new ref) or NULL with a diagnostic. */
json_t *judge_default_config(void);
/* NULL when config is well-formed, else a message (malloc'd). */
char   *judge_config_check(const json_t *config);

/* Score messages (trajectory conventions, man 5 traj.jsonl) of task under
 * harness.  Returns 0, or -1 with *out->reasons holding one reason
 * ("bad_input") when the harness or messages cannot be replayed at all. */
int     judge_score(judge *j, const json_t *task, const json_t *harness,
                    const json_t *messages, judge_verdict *out);
/* Score without a replay, from the record a rollout's own simulator left
 * (sim_record after the conversation ended): the GRPO path, where the
 * messages came from that simulator and cannot differ from it.  messages
 * are read only for reasoning tokens. */
int     judge_score_record(judge *j, const json_t *task, const json_t *harness,
                           const json_t *record, const json_t *messages, judge_verdict *out);
/* judge_score for the view of a checked task (tasks.h: a task_index's),
 * with the same verdict as for the task itself. */
int     judge_score_view(judge *j, const task_view *task, const json_t *harness,
                         const json_t *messages, judge_verdict *out);
void    judge_verdict_clear(judge_verdict *v);
/* Recompute total and pass from the component scores under j's weights. */
void    judge_total(const judge *j, judge_verdict *v);

/* The verdict line (new ref): {"id","task_id","intent","scores",
 * "total","pass","reasons","meta":{"hsa":[dims],"faults":[types]}};
 * traj supplies id and meta, task the intent and faults. */
json_t *judge_verdict_json(const judge_verdict *v, const json_t *traj, const json_t *task);
/* The same line as compact text, byte for byte json_compact of the above,
 * appended to b with a newline: the fast path of judge(1). */
void    judge_verdict_line(sbuf *b, const judge_verdict *v, const json_t *traj, const json_t *task);
/* The same line for a view made with TASK_VIEW_COPY (a task_index's). */
void    judge_verdict_line_view(sbuf *b, const judge_verdict *v, const json_t *traj, const task_view *task);

/* Reasoning tokens as the CoT budget counts them: runs of non-space
 * characters, each CJK character one token on its own. */
int     judge_count_tokens(const char *text);

/* ---- calibration (judge_calibrate.c) ----------------------------------- */

/* One joined case: the judge's component scores and the human label. */
typedef struct {
    double score[JUDGE_NCOMP];
    double accuracy, effectiveness;   /* human; -1 when not labelled */
    double overall;                   /* human 1..5; -1 when not labelled */
} judge_case;

/* Fit weights and the pass threshold of config (a copy is returned) to
 * cases: the cases are shuffled with seed, the first (1 - holdout) part
 * fits, the rest is reported.  *report (new ref) receives the held-out
 * agreement: {"train","heldout","mode", "accuracy","kappa","spearman",
 * "confusion":{...}, per-component blocks}.  NULL with *err on too few
 * cases. */
json_t *judge_calibrate(const json_t *config, const judge_case *cases, size_t n,
                        double holdout, uint64_t seed, json_t **report, char **err);
/* Agreement statistics, exposed for tests. */
double  judge_kappa(const int *a, const int *b, size_t n, int k);     /* classes 0..k-1 */
double  judge_spearman(const double *x, const double *y, size_t n);

/* ---- filters on verdicts (judge_filter.c) -------------------------------- */

/* "pass", or comma-separated conditions NAME OP NUMBER where NAME is a
 * component of judge_comp_names, "total" or "pass" and OP one of
 * >= <= > < = !=, all of which must hold:  "accuracy=1,effectiveness>=0.5".
 * For traj-gen --keep-if and anything else that selects by verdict. */
typedef struct judge_filter judge_filter;
judge_filter *judge_filter_parse(const char *expr, char **err);
int           judge_filter_match(const judge_filter *f, const judge_verdict *v);
void          judge_filter_free(judge_filter *f);

/* ---- the labeller (judge_annotate.c) ------------------------------------- */

typedef struct {
    const char *labels;      /* labels JSONL, appended to (required) */
    const char *history;     /* readline history file; NULL = none */
    int         overall;     /* ask for a 1..5 overall label instead of components */
} judge_annotate_opts;

/* One case for the labeller: the trajectory and, if scored, its verdict. */
typedef struct {
    const json_t *traj;
    const json_t *verdict;   /* may be NULL */
} judge_item;

/* Show each item not yet in the labels file on out, read labels through
 * readline from in, append each label ({"id",...,"comment"?}) with an
 * fsync.  Returns the number labelled, or -1 after a diagnostic. */
long    judge_annotate(const judge_item *items, size_t n, const judge_annotate_opts *o,
                       FILE *in, FILE *out);
/* The case as the labeller shows it (malloc'd). */
char   *judge_case_text(const json_t *traj, const json_t *verdict);

#endif
