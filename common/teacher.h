/* teacher.h — the scripted teacher: a policy that knows each task's gold
 * label and plays it through the simulator under whatever harness is
 * current, producing a correct trajectory.
 *
 * It reads every surface name through the harness (skills and tools by
 * function, parameters by x-function), loads the reply skill(s) and any
 * strategy skill the task calls for before replying, calls the gold tools
 * with the viewer's own wording as arguments, retries faults only as
 * hooks.tool_retry allows, and replies with facts read back from the tool
 * results (harness_unwrap), phrased from data/teacher/replies.json within
 * the harness's max_chars and max_emoji.  When a needed call fails for
 * good, or no tool of the harness serves it, the reply gives what the
 * other calls returned and names what could not be checked, with no cause
 * the tool did not report; a request no reply skill of its own serves is
 * answered under the harness's general skill (data/teacher/skills.json),
 * never an unrelated one.  Every reply it sends passes sim_reply; when
 * none can, teacher_run fails rather than cheat. */
#ifndef HAT_TEACHER_H
#define HAT_TEACHER_H

#include <jansson.h>
#include "rng.h"
#include "sim.h"

typedef struct teacher teacher;

typedef struct {
    double think;         /* probability of a short reasoning_content */
    double keep_retries;  /* probability of keeping failed attempts and hook corrections */
} teacher_opts;

/* A teacher remembers the limits of the last harness it played under (a
 * reference to it): one teacher serves one thread at a time. */
teacher *teacher_new(void);                /* loads data/teacher banks; NULL + message */
void     teacher_free(teacher *t);

/* Play task through s (its harness already set).  Returns the messages
 * (new ref, starting with the viewer message) or NULL with *err set.
 * meta (if not NULL) receives "faults_hit", "pruned" and "recovery". */
json_t  *teacher_run(teacher *t, sim *s, const json_t *task, rng_t *r,
                     const teacher_opts *o, json_t *meta, char **err);

#endif
