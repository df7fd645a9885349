/* general.h — general instruction-following data (the stand-in for Tulu 3)
 * for general-gen: varied tasks over many topics with zero to three
 * IFEval-verifiable constraints, and responses built to satisfy them and
 * checked with the IFEval checkers before they are written.
 *
 * All text comes from data/general/ (tasks.json, constraints.json,
 * blocks.json, topics.txt, words.txt).  Each split (base, opd, eval, dev)
 * has its own task templates and its own constraint phrasings, so no
 * template is shared between splits.  Record i of a split depends only
 * on (seed, split, i). */
#ifndef HAT_GENERAL_H
#define HAT_GENERAL_H

#include <jansson.h>
#include <stdint.h>

typedef struct general_gen general_gen;

/* Load the data files (dir NULL = hat_data_path("general/...")).
 * NULL with *err (malloc'd) naming the file on failure. */
general_gen *general_load(const char *dir, char **err);
void         general_free(general_gen *g);

/* Split index of a name ("base", "opd", "eval", "dev"), or -1. */
int general_split(const char *name);

/* Record index of split with seed:
 *   {"id","split","messages":[user,assistant],"prompt",
 *    "instruction_id_list","kwargs"}
 * The response passes every instruction (strict) by construction and is
 * checked; a draw that fails is redrawn, at most `tries` times.  Returns
 * NULL when every try failed (the caller counts it).  *redraws gets the
 * number of failed draws. */
json_t *general_make(general_gen *g, int split, uint64_t seed, long index, int tries, int *redraws);

/* Normalise a Tulu 3 / OpenAI chat record ({"messages":[{role,content}...]},
 * optional "id") into the same record shape with no constraints.  NULL
 * with *err on a record that is not a conversation. */
json_t *general_import(json_t *rec, int split, long index, char **err);

#endif
