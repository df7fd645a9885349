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

/* Whether split names a split of data/tasks ("train" or "eval"). */
int taskgen_split_known(const char *split);
/* Load the banks of split ("train" or "eval"); NULL + message. */
taskgen *taskgen_new(const world *w, const char *split);
void     taskgen_free(taskgen *g);
/* Task number index.  intent NULL draws one from the default mix.  With
 * probability fault_rate a task with tool calls gets a fault. */
json_t  *taskgen_make(taskgen *g, uint64_t seed, long index, const char *intent, double fault_rate);

int      task_intent_known(const char *intent);
/* The fault type named by the n bytes at s ("timeout", ...), or NULL. */
const char *task_fault_type_name(const char *s, size_t n);
/* The intent named by the n bytes at s, as task_intents holds it, or NULL. */
const char *task_intent_name(const char *s, size_t n);
/* Check the shape of a task line; NULL if fine, else a message (malloc'd)
 * such as "unknown intent 'x'" or "gold.calls[0]: missing function". */
char    *task_check(const json_t *task);
/* The skill functions of gold.skill as an array (new ref), primary first. */
json_t  *task_gold_skills(const json_t *task);

/* ---- a task as the simulator and the judge read it -----------------------
 *
 * The judge scores tens of thousands of lines against tasks it loaded at
 * start-up; a jansson tree per task costs parsing or memory for values it
 * only reads.  A task_view holds just what sim.c and judge.c read, as C
 * values in a task_arena.  Every field follows the jansson reading it
 * replaces, for any task: a string field is NULL where the task has no
 * string there (json_string_value), a list keeps only its strings where
 * the readers skip the rest, a number is json_integer_value's or
 * json_number_value's, and objects keep their order. */

typedef struct {
    const char   *key;
    const char   *str;           /* the value when a string (else NULL) */
    const json_t *v;             /* the value when not a string (borrowed or held by the arena) */
} task_view_arg;

typedef struct {
    const char    *function;     /* NULL when not a string */
    task_view_arg *args;         /* "arguments" in order (none when not an object) */
    size_t         nargs;
} task_view_call;

typedef struct {
    const char *key;
    const char *str;             /* a string fact, or NULL for a number */
    double      num;             /* json_number_value of a number fact */
} task_view_fact;               /* facts neither string nor number are left out */

typedef struct {
    long        call, times;     /* json_integer_value of "call", "times" */
    const char *type;            /* NULL when not a string */
} task_view_fault;              /* every element of "faults" */

typedef struct {
    const char      *id;             /* string "id" or NULL */
    size_t           id_len;         /* its bytes (a \u0000 is kept) */
    const char      *nick, *text;    /* viewer */
    const char      *product;        /* context.product */
    const char     **skills;         /* the strings of task_gold_skills */
    size_t           nskills;
    task_view_call  *calls;          /* gold.calls, every element */
    size_t           ncalls;
    task_view_fact  *facts;          /* gold.facts */
    size_t           nfacts;
    const char     **must, **must_not;   /* their strings */
    size_t           nmust, nmust_not;
    task_view_fault *faults;
    size_t           nfaults;
    /* Only in a view made with TASK_VIEW_COPY: "id", "intent" and the
     * distinct fault types (["timeout",...]) as compact JSON, for the
     * verdict line, and the task's line when one was given. */
    const char      *id_json, *intent_json, *fault_types_json;
    const char      *line;
    size_t           line_len;
} task_view;

typedef struct task_arena task_arena;
task_arena *task_arena_new(void);
/* Forget every view made in a (its current block stays for reuse). */
void        task_arena_reset(task_arena *a);
void        task_arena_free(task_arena *a);

enum { TASK_VIEW_BORROW = 0, TASK_VIEW_COPY = 1 };
/* The view of task in a.  BORROW points into task, which must outlive the
 * view; COPY copies (and holds references), so the task may be freed at
 * once, and fills the JSON texts, with line (may be NULL) kept as given. */
const task_view *task_view_make(task_arena *a, const json_t *task, int mode, const char *line, size_t line_len);

/* Checked tasks by id, as views (the judge's --tasks).  A later task with
 * the same id replaces an earlier one. */
typedef struct task_index task_index;
task_index *task_index_new(void);
void        task_index_free(task_index *ix);
/* Add task (its line kept when line is not NULL); returns its view. */
const task_view *task_index_add(task_index *ix, const json_t *task, const char *line, size_t line_len);
/* Add the task on line (len bytes; kept when keep_line) without a jansson
 * value: the view task_check and task_view_make(COPY) would give of
 * json_loadb's value, made straight from yajl's events (task_view_parse).
 * NULL, and nothing added, where that is not certain: a line that is not
 * one checked task in the shape task-gen writes (bad JSON, a check that
 * fails, a field of another type, a repeated key, bytes where yajl and
 * jansson part ways, HAT_SLOW_JSON=1).  The caller then parses the line
 * and goes the way of task_check and task_index_add, whose answer
 * (including its error) is the one. */
const task_view *task_index_add_line(task_index *ix, const char *line, size_t len, int keep_line);
/* The view itself, in a (which is left as it was on NULL). */
const task_view *task_view_parse(task_arena *a, const char *line, size_t len, int keep_line);
const task_view *task_index_get(const task_index *ix, const char *id);
size_t      task_index_size(const task_index *ix);

#endif
