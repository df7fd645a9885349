/* report.h — verdicts of several models into the four-set results table.
 *
 * Inputs, per model, are any mix of
 *   - judge(1) verdict lines ({"task_id","scores","total","pass",...}),
 *   - rollout(1) trajectories with an inline "verdict" (rollout --judge),
 *   - ifeval(1) verdict lines ({"key","strict","loose",...}),
 * each tied to its case by the case id (the task_id of a judged case, the
 * key of an IFEval verdict, meta.case.id of a rollout line).  The set is
 * the case's (from --cases) or the id's prefix ("live-000042").
 *
 * Scores (man 1 report): per set, 100 × the pass rate (judge pass; IFEval
 * prompt-level strict accuracy) with a 95% Wilson score interval, and for
 * agent sets the mean judge total × 100 with a seeded percentile-bootstrap
 * interval.  When the cases are known, a case a model has no verdict for
 * counts as failed (and is counted as missing), unless the model has no
 * verdict at all in that set (then the set is "n/a" for it).  Breakdowns:
 * per intent, fault type, HSA dimension, robustness kind, variant combo
 * (agent sets) and instruction category (IFEval, instruction level). */
#ifndef HAT_REPORT_H
#define HAT_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define REPORT_Z95 1.959963984540054   /* two-sided 95% normal quantile */

/* Wilson score interval for k successes in n trials at z; n = 0 gives
 * [0, 0]. */
void   report_wilson(long k, long n, double z, double *lo, double *hi);
/* Percentile bootstrap of the mean of x[0..n): B resamples drawn from
 * rng_derive(seed, 0), the 2.5% and 97.5% quantiles of the resampled means
 * (linear interpolation between order statistics, numpy's default). */
void   report_bootstrap_mean(const double *x, size_t n, int B, uint64_t seed,
                             double *lo, double *hi);
/* The q-quantile of sorted v[0..n) by linear interpolation. */
double report_quantile(const double *sorted, size_t n, double q);

typedef struct report report;

report *report_new(void);
void    report_free(report *r);
/* Case meta from a cases.jsonl (man 5 cases.jsonl).  0 or -1 after
 * "prog: FILE:LINE: message". */
int     report_add_cases(report *r, const char *path, int skip_bad);
/* Verdict lines of a model (added in order of first mention; a later
 * verdict for the same case replaces an earlier one). */
int     report_add_verdicts(report *r, const char *model, const char *path, int skip_bad);
/* One verdict line already parsed (for tests); 0 or -1 with *err. */
int     report_add_line(report *r, const char *model, const json_t *line, char **err);
/* Training metrics JSONL of a run, for the curves plot: the (step, key)
 * pairs of lines that have both. */
int     report_add_metrics(report *r, const char *run, const char *path, const char *key);

/* The report as JSON (new ref): {"models","sets","method","scores",
 * "breakdowns"} (man 1 report). */
json_t *report_json(const report *r, int B, uint64_t seed);
/* The same as Markdown (malloc'd). */
char   *report_markdown(const json_t *rep);
/* Write scores.{dat,gp,png,svg} and, with metrics, curves.{dat,gp,png,svg}
 * into dir through gnuplot (gnuplot program: $GNUPLOT or "gnuplot" on the
 * PATH).  0, or -1 with *err (malloc'd). */
int     report_plots(const report *r, const json_t *rep, const char *dir, char **err);

#endif
