/* evalset.h — the four evaluation sets as cases (man 5 cases.jsonl).
 *
 *   live     Live-Stream QA: task-gen's eval split (held-out products and
 *            phrasings) under the production harness.
 *   variant  Harness-Variant QA: eval tasks under harnesses rewritten with
 *            the held-out HSA vocabulary in dimension combinations training
 *            never uses (data/eval/sets.json "variant.combos").
 *   robust   Tool/Prompt Robustness: tool faults of every type, noisy and
 *            adversarial viewer text, prompt injection, a perturbed system
 *            prompt.
 *   ifeval   IFEval-style: general-gen's eval split, or the original IFEval
 *            prompts when given.
 *
 * Every agent case is checked before it is written: the scripted teacher
 * must be able to play it (teacher_run), and a harness variant must be one
 * hsa-augment can relabel the teacher's trajectory into (meta.hsa_valid);
 * a draw that fails is redrawn.  So a case is always solvable, and a model
 * that fails it has failed, not the case.  Case i of a set depends only on
 * (seed, set, i): -n scales a set down to a prefix of the full one. */
#ifndef HAT_EVALSET_H
#define HAT_EVALSET_H

#include <jansson.h>
#include <stdint.h>

#include "rng.h"
#include "world.h"

enum { EVAL_LIVE, EVAL_VARIANT, EVAL_ROBUST, EVAL_IFEVAL, EVAL_NSETS };
extern const char *const evalset_names[EVAL_NSETS];   /* "live" ... "ifeval" */

/* Set index of a name, or -1. */
int evalset_set_index(const char *name);
/* "live,ifeval" → bit mask of sets; -1 with *bad pointing at the unknown name
 * (malloc'd). "all" = every set. */
int evalset_parse_sets(const char *list, char **bad);

typedef struct evalset evalset;

/* Where the sets come from, each NULL for the default: config, a
 * sets.json in data/eval/sets.json's form (sizes, combos and vocabulary of
 * the variants, the robust text banks); split, task-gen's split of the
 * agent tasks ("eval"); ifeval_input, the original IFEval input_data.jsonl
 * (general-gen's eval split).  Another config and the train split make dev
 * sets of the same kinds from text the evaluation never shows. */
typedef struct {
    const char *config;
    const char *split;
    const char *ifeval_input;
} evalset_src;

/* Load the config, the split's task banks and the variants' vocabulary
 * for world w and production harness h (both borrowed; src may be NULL).
 * NULL with *err (malloc'd) on failure. */
evalset *evalset_new(const world *w, const json_t *h, const evalset_src *src, char **err);
void     evalset_free(evalset *e);
/* Add a per-harness rewrite bank from hsa-bank (man 1 hsa-bank) to the
 * variant vocabulary: its held-out alternatives reword the Harness-Variant
 * cases before the built-in rewriter does.  0, or -1 after a diagnostic;
 * a bank with alternatives for no text of the production harness is an
 * error (it was made for another harness, or it is empty). */
int      evalset_add_bank(evalset *e, const char *path);

/* Default size of each set (data/eval/sets.json "sizes"; the IFEval set is
 * the number of original prompts when they were given). */
long evalset_default_size(const evalset *e, int set);
/* Sizes for a total of n cases spread in the default proportions, each set
 * at least 1; n <= 0 gives the defaults. */
void evalset_sizes(const evalset *e, long n, long size[EVAL_NSETS]);
/* n cases in every set (the IFEval set at most the prompts given). */
void evalset_sizes_each(const evalset *e, long n, long size[EVAL_NSETS]);
/* Draw the agent cases of these intents only ("price,size": task-gen's
 * names), each in turn: for a harness built to serve some requests.  The
 * robust set's faults go to the chosen tool intents, and its injections are
 * appended to the chosen intents' text unless "injection" is chosen too.
 * 0, or -1 with *bad (malloc'd) the unknown name. */
int      evalset_set_intents(evalset *e, const char *list, char **bad);

/* Case i of set (new ref), or NULL with *err (malloc'd) when no valid case
 * could be drawn. */
json_t *evalset_case(evalset *e, int set, uint64_t seed, long i, char **err);

/* The case id "SET-NNNNNN" (malloc'd), and the set of an id (its prefix
 * before '-'), or -1. */
char *evalset_case_id(int set, long i);
int   evalset_id_set(const char *id);

/* Make size[s] cases of every set s in mask and hand
 * them to emit in set order then index order (one thread: the teacher and
 * its simulator are shared).  0, or -1 after emit failed
 * or with *err set. */
typedef int (*evalset_emit_fn)(void *arg, json_t *c);
int evalset_build(evalset *e, int mask, const long size[EVAL_NSETS], uint64_t seed,
                  evalset_emit_fn emit, void *arg, char **err);

/* Viewer-text noise outside the slot values (context.mentions): exposed for
 * tests.  Returns new text (malloc'd); every mention value that occurs in
 * text still occurs in the result. */
char *evalset_noise(const evalset *e, const char *text, const json_t *mentions, rng_t *r);

#endif
