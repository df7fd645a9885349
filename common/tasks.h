/* tasks.h — viewer requests with gold labels (man 5 tasks.jsonl).
 *
 * taskgen_make composes one task from a world and the phrasing banks of one
 * split (data/tasks/SPLIT/INTENT.json): it picks an intent, the products of
 * that split, a template and the slot values, adds surface noise (typos,
 * slang, emoji) outside the slots, and writes the gold label the teacher
 * follows and the judge scores against.  Task i depends only on (seed, i),
 * so any prefix of a run is reproducible on its own. */
#ifndef HAT_TASKS_H
#define HAT_TASKS_H

#include <jansson.h>
#include <stdint.h>
#include "world.h"

#define TASK_N_INTENTS 15
extern const char *const task_intents[TASK_N_INTENTS];

typedef struct taskgen taskgen;

/* Load the banks of split ("train" or "eval"); NULL + message. */
taskgen *taskgen_new(const world *w, const char *split);
void     taskgen_free(taskgen *g);
/* Task number index.  intent NULL draws one from the default mix.  With
 * probability fault_rate a task with tool calls gets a fault. */
json_t  *taskgen_make(taskgen *g, uint64_t seed, long index, const char *intent, double fault_rate);

int      task_intent_known(const char *intent);
/* Check the shape of a task line; NULL if fine, else a message (malloc'd)
 * such as "unknown intent 'x'" or "gold.calls[0]: missing function". */
char    *task_check(const json_t *task);
/* The skill functions of gold.skill as an array (new ref), primary first. */
json_t  *task_gold_skills(const json_t *task);

#endif
