/* metrics.h — counters, gauges and histograms in the Prometheus text
 * exposition format (version 0.0.4), for serve's GET /metrics.
 *
 * A registry holds metric families by name; each family has a type, a
 * help line and, for histograms, its bucket bounds.  Series within a
 * family are told apart by a label string written as Prometheus writes
 * it ("" or `path="/v1/agent",code="200"`).  Every call takes the
 * registry's mutex, so HTTP threads and the scheduler may update and
 * render at once.
 *
 *     metrics *mx = metrics_new();
 *     metrics_define(mx, "hat_requests_total", METRIC_COUNTER, "Requests.", NULL, 0);
 *     metrics_add(mx, "hat_requests_total", "path=\"/health\"", 1);
 *     sbuf b; sbuf_init(&b); metrics_render(mx, &b);    // text/plain; version=0.0.4
 */
#ifndef HAT_METRICS_H
#define HAT_METRICS_H

#include "util.h"

enum { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

typedef struct metrics metrics;

metrics *metrics_new(void);
void     metrics_free(metrics *mx);
/* Declare a family (before use).  bounds: histogram upper bounds in
 * increasing order (the +Inf bucket is implied); ignored otherwise.
 * Returns 0, or -1 for a bad name, a redefinition or unordered bounds. */
int      metrics_define(metrics *mx, const char *name, int type, const char *help,
                        const double *bounds, int nbounds);
/* Counter += v (v >= 0) / gauge = v / histogram observes v.  A series is
 * created on first use; an undefined family is ignored (returns -1). */
int      metrics_add(metrics *mx, const char *name, const char *labels, double v);
int      metrics_set(metrics *mx, const char *name, const char *labels, double v);
int      metrics_observe(metrics *mx, const char *name, const char *labels, double v);
/* Current value of a counter or gauge series, a histogram's count; 0
 * when absent.  *sum (if not NULL) receives a histogram's sum. */
double   metrics_get(metrics *mx, const char *name, const char *labels, double *sum);
/* The quantile q of a histogram series estimated from its buckets (linear
 * inside a bucket, as Prometheus' histogram_quantile); NAN when empty. */
double   metrics_quantile(metrics *mx, const char *name, const char *labels, double q);
/* Append the exposition text: families in definition order, series in
 * creation order. */
void     metrics_render(metrics *mx, sbuf *out);

/* Exponential bounds start, start*factor, ... (n of them) into b. */
void     metrics_exp_bounds(double *b, int n, double start, double factor);

#endif
