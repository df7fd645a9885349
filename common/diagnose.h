/* diagnose.h — failures grouped by judge reason and by harness element,
 * and the harness evolution check.
 *
 * Grouping: every reason of every failed verdict is mapped to the harness
 * element it points at (data/eval/diagnose.json: a tool, a skill, a prompt
 * block and parameter, a hook, the runtime, the model's reasoning) using the
 * reason's detail and the harness the trajectory ran under.  Tools and
 * skills are keyed by function (stable under HSA renames) with the names
 * seen listed, prompt elements by block id and parameter, hooks by name.
 *
 * Evolution check: the same cases played by the same model under a harness
 * and under an edited harness (no retraining), both judged; the result is
 * the error rate before and after and the relative error reduction
 * (before - after) / before, with the cases fixed and broken. */
#ifndef HAT_DIAGNOSE_H
#define HAT_DIAGNOSE_H

#include <jansson.h>
#include <stdint.h>

#include "rollout.h"

typedef struct diag diag;

/* NULL + *err when data/eval/diagnose.json cannot be loaded. */
diag   *diag_new(int max_examples, char **err);
void    diag_free(diag *d);
/* One verdict (judge(1) line, or the "verdict" of a rollout line with its
 * "id" and "meta") under harness h (may be NULL: elements are then named
 * by function or parameter only).  0, or -1 with *err. */
int     diag_add(diag *d, const json_t *verdict, const json_t *h, char **err);
/* The element a reason points at (new ref): {"key","kind","function"?,
 * "name"?,"block"?,"param"?}.  intent may be NULL. */
json_t *diag_element(const diag *d, const char *code, const char *detail,
                     const json_t *h, const char *intent);
/* Groups (new ref): an array of {"group":"summary",...}, then
 * {"group":"reason",...} and {"group":"element",...} lines, each by count
 * (descending) then key. */
json_t *diag_groups(const diag *d);
/* The groups as text for people (malloc'd). */
char   *diag_text(const json_t *groups);

/* ---- the evolution check ---------------------------------------------------- */

typedef struct {
    const model      *m;        /* NULL when policy is set */
    const tokenizer  *t;
    const world      *w;
    judge            *j;
    rollout_policy_fn policy;   /* scripted policy instead of the model (tests) */
    void             *policy_ctx;
    rollout_params    p;
    int               batch;
    uint64_t          seed;
    const gen_device *dev;      /* where the model decodes (NULL = the CPU) */
} diag_evolve_opts;

/* Play every case with a "task" under h and under edited; cases is an
 * array of case objects.  Returns the result (new ref):
 *   {"cases","before":{"pass","errors","error_rate","reasons"},
 *    "after":{...},"error_reduction","fixed","broken","per_case":[...]}
 * or NULL with *err. */
json_t *diag_evolve(const diag_evolve_opts *o, const json_t *cases, const json_t *h,
                    const json_t *edited, char **err);

#endif
