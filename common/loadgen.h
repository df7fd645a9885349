/* loadgen.h — the load generator behind loadgen(1): POSTs through libcurl
 * (Server-Sent Events timed as their first bytes arrive), and the
 * statistics of a run (latency percentiles, time to first token, tokens
 * per second, errors, share over a latency budget). */
#ifndef HAT_LOADGEN_H
#define HAT_LOADGEN_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

/* Check a server URL ("http://HOST:PORT[/PREFIX]") with libcurl's URL
 * parser.  0, or -1 with *err (malloc'd). */
int  lg_url_check(const char *url, char **err);
/* Once, before any thread posts (curl_global_init is not thread-safe). */
void lg_global_init(void);

typedef struct {
    int    status;       /* HTTP status, 0 on a transport error */
    char  *error;        /* transport error text, or NULL */
    sbuf   body;
    double t_first;      /* seconds from start to the first body byte */
    double t_total;      /* seconds from start to the end of the body */
} lg_response;

/* POST body to base_url + path with libcurl.  token may be NULL;
 * timeout_s bounds the whole request.  Fills *r (free with
 * lg_response_free). */
void lg_post(const char *base_url, const char *path, const char *token, const char *body,
             size_t len, double timeout_s, lg_response *r);
void lg_response_free(lg_response *r);

/* The p-th percentile (0..100) of v[0..n) by linear interpolation
 * between closest ranks (numpy's default); v is sorted in place.  NAN
 * when n == 0. */
double lg_percentile(double *v, size_t n, double p);

/* One finished request, for the report. */
typedef struct {
    int    status;       /* 0 = transport error */
    double latency, ttft; /* seconds */
    long   tokens;       /* generated tokens the server reported */
} lg_sample;

/* {"requests","ok","errors":{STATUS|"transport":n},"duration_s","rps",
 *  "latency_ms":{"p50","p95","p99","mean","max"},"ttft_ms":{"p50","p95","p99"},
 *  "tokens","tokens_per_s","budget_s","over_budget"} over ok requests. */
json_t *lg_report(const lg_sample *s, size_t n, double duration, double budget);
/* The report as a readable table (appended to b). */
void    lg_table(sbuf *b, const json_t *report);

#endif
