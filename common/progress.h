/* progress.h — one line of progress on stderr for long work, on a terminal only.
 *
 *   prog: hsa.jsonl: 12,345 lines, 3.2 of 16.5 MB (19%), 4.1 MB/s, ETA 3s
 *   prog: 40/200 steps (20%), 1.9 steps/s, ETA 1m24s, loss 5.01 ...
 *
 * Every stage that can take more than a few seconds draws one: the JSONL
 * readers (jsonl.c, hsa.c) for every program that streams records, the
 * trainers' step loop, rollout, loadgen, evalset, tok-train's merges.
 * Nothing is drawn when stderr is not a terminal (or HAT_PROGRESS=0), and
 * nothing during the first second (HAT_PROGRESS=now: from the start), so
 * short work and pipes stay quiet.
 * The line is redrawn at most four times a second; when the work ends a
 * line that was drawn is completed with its totals and a newline.
 * Diagnostics (hat_errat and friends) erase the line first, so they never
 * land in the middle of it.
 *
 * One line at a time: while one progress is running, progress_start
 * returns NULL (the outer stage owns the line; a file it reads stays
 * silent).  Every function accepts NULL and then does nothing. */
#ifndef HAT_PROGRESS_H
#define HAT_PROGRESS_H

#include <stdint.h>

typedef struct progress progress;

/* label: what is being worked on (a file name) or NULL; unit: what is
 * counted ("lines", "steps", "requests"); total: units expected, 0 if
 * unknown.  NULL when no line is to be drawn. */
progress *progress_start(const char *label, const char *unit, long total);
/* Bytes expected (an input's size), for the percentage and ETA when the
 * count of units is not known in advance. */
void progress_bytes_total(progress *p, uint64_t total);
/* 1 when a redraw is due: cheap, for a hot loop that must compute what it
 * reports (a file offset) only when it will be drawn. */
int  progress_due(const progress *p);
/* Units done and bytes done (0 if not counted); redraws when due. */
void progress_update(progress *p, long done, uint64_t bytes);
/* Text after the counts ("loss 2.31", "3 running"), kept until replaced;
 * shown at the next redraw. */
void progress_status(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last line (if one was drawn) and free. */
void progress_end(progress *p);
/* Erase a drawn line so a diagnostic starts at the left margin (util.c). */
void progress_clear(void);

/* The size of an input for progress_bytes_total: the named file's, or
 * stdin's when it is a regular file ("-" or NULL); 0 when unknown. */
uint64_t progress_input_size(const char *path);

#endif
