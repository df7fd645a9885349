/* shard.h — one program's records played by N copies of it at once
 * (rollout --jobs, generate --jobs).
 *
 * Why processes: the decoding engine of a small model splits each op over
 * threads, and every serial phase between ops (sampling, the simulator,
 * the judge, small ops below the threading threshold) leaves the other
 * cores idle: on 2 cores a rollout used 1.5 of them.  N copies with one
 * engine each keep N cores busy with no hand-offs.  It is exact because a
 * record's output depends only on the record and its index (the seed
 * stream), never on what else shares a batch: the interleaved output is
 * byte for byte that of one process.
 *
 * The parent starts N copies of the running program (the file
 * /proc/self/exe names, the same argv) with HAT_SHARD=K/N, HAT_PROGRESS=0 and OMP_NUM_THREADS=T
 * (T = the parent's threads / N, at least 1) in their environment, a pipe
 * on each one's stdin and stdout; stderr is shared, so their diagnostics
 * reach the user as they are written.  Record v goes to copy v % N, which
 * writes exactly one line for it (its output, or the line "null" when it
 * failed after its own diagnostic), so the parent can put the lines back
 * in record order.  Input goes out as fast as the pipes take it, output
 * is read as it comes: no copy waits on another.
 *
 *     shard_pool *p = shard_start(2, argv);            // NULL: reported
 *     for each good record: shard_send_record(p, rec, file, line);
 *         shard_drain(p, o, 0, stop, &failed);          // what is ready, to o
 *     shard_close(p);                                   // no more records
 *     shard_drain(p, o, 1, stop, &failed);              // the rest
 *     rc = shard_finish(p);                             // 0, or -1: a copy failed
 *
 * In a copy: shard_self() says which one it is; it reads its records from
 * stdin, each {"f":FILE,"l":LINE,"r":RECORD} (shard_unwrap), and writes
 * one line for each to stdout, in order. */
#ifndef HAT_SHARD_H
#define HAT_SHARD_H

#include "jsonl.h"

#include <jansson.h>
#include <stddef.h>

typedef struct shard_pool shard_pool;

/* This process's place: k of n, or n = 0 when it is not a copy.  A bad
 * HAT_SHARD is a usage error (it is set only by shard_start). */
typedef struct { int k, n; } shard_id;
shard_id shard_self(void);

/* n copies of this program with argv (argv[0] kept as their name). */
shard_pool *shard_start(int n, char *const *argv);
/* No more records: the copies see end of input once all are written. */
void shard_close(shard_pool *p);
/* Send rec (the input line as parsed) read at file:line.  0 or -1. */
int shard_send_record(shard_pool *p, const json_t *rec, const char *file, long line);
/* In a copy: the record of what the parent sent (a new reference; w's is
 * dropped), with the file and line it came from (*file borrowed from w's
 * copy in *keep, which the caller frees with json_decref).  A line that is
 * not such a record is a usage error (exit 2). */
json_t *shard_unwrap(json_t *w, json_t **keep, const char **file, long *line);
/* Write the copies' lines that are ready to o in record order (wait: all
 * that are left); a "null" line, a record that failed after the copy's own
 * diagnostic, is counted in *failed and written as nothing, and with stop
 * ends the drain at -1.  0, or -1 (stop, a copy, or the output failed). */
int shard_drain(shard_pool *p, hat_out *o, int wait, int stop, long *failed);
/* Output lines taken so far (for a progress line). */
long shard_taken(const shard_pool *p);
/* Wait for every copy; 0 when all exited 0, else -1 (their own
 * diagnostics said why).  Frees p.  Copies still running are killed. */
int shard_finish(shard_pool *p);

#endif
