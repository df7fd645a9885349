/* traj_write.h — writing traj.jsonl lines (man 5 traj.jsonl) fast.
 *
 * A trajectory line is ~10 KB: the inline harness (~8.6 KB, the same for
 * every line of a run, or of a run of lines) and the messages, whose
 * longest strings (skill texts, tool results) are the very same string
 * objects line after line: the simulator caches them per harness.
 * Serialising all of it with jansson per line took a third of traj-gen.
 * The writer keeps the compact text of the last harnesses and of long
 * shared strings (keyed by object, holding a reference so an address is
 * never reused while cached), and lays out objects and arrays itself the
 * way jansson does with HAT_JSON_FLAGS; every other string, number and
 * literal is written by jansson.  A line is byte for byte what json_compact
 * makes of the record {"id","task_id","harness","messages","meta"}.
 *
 *     traj_writer *w = traj_writer_new();
 *     traj_write(w, out, task, harness, msgs, meta);     // one line
 *     traj_writer_free(w);
 *
 * Values must not be changed in place while the writer may hold their
 * text (jansson strings never are in hat). */
#ifndef HAT_TRAJ_WRITE_H
#define HAT_TRAJ_WRITE_H

#include <jansson.h>

#include "jsonl.h"
#include "util.h"

typedef struct traj_writer traj_writer;

traj_writer *traj_writer_new(void);
void         traj_writer_free(traj_writer *w);

/* Appends v as json_compact writes it (JSON_ENCODE_ANY, so any value). */
void traj_writer_json(traj_writer *w, sbuf *b, const json_t *v);

/* One line {"id":TASK_ID.t,"task_id":TASK_ID,"harness":H,"messages":MSGS,
 * "meta":META} and a newline to o.  0, or -1 after out_write's report. */
int  traj_write(traj_writer *w, hat_out *o, const json_t *task, const json_t *harness,
                const json_t *msgs, const json_t *meta);

#endif
